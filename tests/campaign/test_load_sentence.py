"""What a page says of the machine's load (Note [measured under load] in gnnbench/campaign/render.py)."""
from gnnbench.campaign.publish import _graph_label
from gnnbench.campaign.render import measured_note


def _row(share, load=(0.5, 1.5), when="2026-12-06T15:00:00"):
    state = {"load_before": [load[0], 0, 0], "load_after": [load[1], 0, 0]}
    if share is not None:
        state["other_cpu_share"] = share
    return {"timestamp": when, "git_commit": "b252f2d0000", "machine": {"cpu_count": 2}, "machine_state": state}


def test_rows_that_saw_no_other_process_say_the_machine_was_quiet():
    rows = [_row(0.0), _row(0.0), _row(0.05)]
    assert measured_note(rows) == (
        "Load average at start 0.5, at end 1.5 on 2 cores, the campaign's own processes included; other processes "
        "took a median 0% (at most 5%) of the CPUs each of the 3 processes was allowed while it ran: the machine "
        "was quiet. Measured at commit b252f2d.")


def test_rows_whose_cpus_were_taken_say_the_machine_was_shared():
    rows = [_row(0.3), _row(0.4), _row(0.05)]
    assert measured_note(rows).endswith(
        "other processes took a median 30% (at most 40%) of the CPUs each of the 3 processes was allowed while it "
        "ran: the machine was shared, so absolute times were measured under load; the runs were interleaved, so "
        "the ratios within a table are what it reports. Measured at commit b252f2d.")


def test_rows_from_before_the_share_was_recorded_keep_the_load_sentence():
    assert measured_note([_row(None)]) == (
        "Load average at start 0.5, at end 1.5 on 2 cores: the machine was shared, so absolute times were measured "
        "under load; the runs were interleaved, so the ratios within a table are what it reports. Measured at "
        "commit b252f2d.")


def test_a_headline_names_a_typed_preset_and_its_scale():
    assert _graph_label("hetero:classes=4,like=aifb,scale=1.0,seed=0", {}) == "aifb-like"
    assert _graph_label("hetero:like=igbh,scale=0.1", {}) == "igbh-like x0.1"
    assert _graph_label("planetoid:cora", {}) == "planetoid"
