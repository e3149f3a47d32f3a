"""benchmarks/studies/bench_aa.py and benchmarks/aa_systems: trials, verdicts, the rendered table, and twins that are twins."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

AA_SYSTEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "aa_systems"
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_aa")


def _row(system, round_, epochs, status="ok"):
    return {"system": system, "status": status, "dataset": "rmat:nodes=8", "model": "gcn", "framework": "torch",
            "epoch_times": list(epochs), "extra": {"sweep": {"round": round_}}, "timestamp": f"2026-12-03T10:{round_ // 60:02d}:{round_ % 60:02d}+00:00"}


def _store(rounds, slow_factor, spread=0.01, seed=0):
    """``rounds`` rounds of the three systems; aa_one and aa_two from one distribution, aa_slow scaled."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(rounds):
        for system, scale in (("aa_one", 1.0), ("aa_two", 1.0), ("aa_slow", slow_factor)):
            centre = scale * (1 + spread * rng.standard_normal())  # each process its own centre
            rows.append(_row(system, r, centre * (1 + spread * rng.standard_normal(20)) / 100))
    return rows


def test_trials_are_runs_of_consecutive_rounds_and_incomplete_ones_are_left_out(bench):
    rows = _store(12, 1.3)
    rows = [r for r in rows if not (r["system"] == "aa_two" and r["extra"]["sweep"]["round"] == 7)]
    trials = bench.trials(rows, 5)
    assert len(trials) == 1  # rounds 0-4; 5-9 lacks aa_two's round 7; 10-11 is short
    assert sorted({r["extra"]["sweep"]["round"] for r in trials[0]}) == [0, 1, 2, 3, 4]


def test_a_clear_slowdown_is_marked_and_identical_twins_are_not(bench):
    summary = bench.summarise("quiet", _store(10, 1.3), 5)
    assert summary["trials"] == 2
    assert summary["false_positives"] == 0
    assert summary["slow_marked"] == 2 and summary["slow_significant"] == 2
    assert summary["true_slowdown"] == pytest.approx(1.3, rel=0.02)


def test_render_states_the_rates_and_the_targets(bench):
    summaries = [{**bench.summarise("quiet", _store(10, 1.3), 5), "load": (0.1, 0.2)},
                 {**bench.summarise("loaded", [], 5), "load": None}]
    meta = {"dataset": "rmat:nodes=8", "epochs": 22, "warmup": 2, "threads": 1, "processes": 5,
            "measured_at": ["abc1234"]}
    text = bench.render(summaries, meta)
    quiet = next(line for line in text.splitlines() if line.startswith("| quiet"))
    assert [c.strip() for c in quiet.strip("|").split("|")] == [
        "quiet", "2", "5", "0 of 2 (0%)", "0 of 2 (0%)", "2 of 2 (100%)", "2 of 2 (100%)", "2 of 2 (100%)", "+29.6%"]
    loaded = next(line for line in text.splitlines() if line.startswith("| loaded"))
    assert [c.strip() for c in loaded.strip("|").split("|")][1:4] == ["0", "5", "-"]
    assert "at most 5 % of at least 40 trials" in text and "Measured at commit abc1234" in text
    assert "loaded: not measured yet." in text
    assert "quiet: `aa_one` over all 10 of its processes: 10.0 ms" in text


def test_process_lengths_group_by_epochs_and_the_section_says_what_they_show(bench):
    def processes(epochs):  # each process its own centre, the same ten whatever the length
        return [_row("aa_one", i, centre * np.ones(epochs - 2) / 100) | {"epochs": epochs, "warmup": 2}
                for i, centre in enumerate(np.linspace(0.9, 1.1, 10))]

    lengths = bench.process_lengths(processes(22) + processes(202) + [_row("aa_two", 0, [0.5] * 20)])
    assert [(x["epochs"], x["processes"]) for x in lengths] == [(20, 10), (200, 10)]
    assert lengths[1]["seconds"] == pytest.approx(200 * lengths[1]["median_s"])
    section = "\n".join(bench._lengths_section(lengths, "Measured at commit abc1234."))
    assert section.startswith("## Longer processes")
    assert [c.strip() for c in section.splitlines()[7].strip("|").split("|")][:3] == ["200", "10", "2.00"]
    assert "each process keeps its speed for its whole life" in section and "Measured at commit abc1234." in section
    narrower = [lengths[0], {**lengths[1], "between_spread": lengths[0]["between_spread"] / 4}]
    assert "narrow the spread across processes from" in "\n".join(bench._lengths_section(narrower, None))
    assert bench._lengths_section(lengths[:1], None) == []  # one length says nothing


def test_unmarked_comparisons_count_their_instability_reasons(bench):
    summary = bench.summarise("quiet", _store(10, 1.05, spread=0.2), 5)
    assert summary["slow_marked"] < summary["trials"]
    assert summary["withheld"] and set(summary["withheld"]) <= {
        "processes needed", "epoch spread within processes", "spread across processes", "an outlier process",
        "busy machine"}
    assert summary["withheld"]["epoch spread within processes"] == summary["trials"] - summary["slow_marked"]


def test_the_campaign_is_40_trials_of_the_three_systems(bench, capsys):
    assert bench.main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("bench_aa: would run 600 of 600 runs")
    assert {line.split()[0] for line in lines[:-1]} == {"aa_one", "aa_two", "aa_slow"}


def test_bad_flags_are_one_line_and_status_2(bench, capsys):
    assert bench.main(["--trials", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench_aa: argument --trials:")


def test_aa_systems_glue_is_up_to_date():
    from gnnbench.dsl.gen import regenerate, spec_paths

    writer = regenerate(spec_paths(AA_SYSTEMS), check=True)
    assert not writer.drift, "".join(writer.drift) + "\nrun `gnnbench gen benchmarks/aa_systems/<name>/<name>.gnn`"


def test_the_three_systems_compute_mkls_results_bit_for_bit(monkeypatch):
    """The slow twin's extra work multiplies by one: the same function, so its time is the only difference."""
    from gnnbench.run.harness import RunConfig, train

    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(AA_SYSTEMS))
    losses = {s: train(RunConfig(system=s, model="gcn", dataset=TINY, epochs=3, warmup=1))["final_loss"]
              for s in ("mkl", "aa_one", "aa_two", "aa_slow")}
    assert len(set(losses.values())) == 1, losses


def _session_rows(session, system, rounds, slow_factor, seed, start_minute=0):
    """One paired comparison's rows as ``gnnbench ab`` stores them (Note [paired rows]), a process every 6 s."""
    from gnnbench.core.sequential import BASELINE, round_order
    from gnnbench.results.paired import stamp

    rng = np.random.default_rng(seed)
    rows, k = [], 0
    for r in range(rounds):
        for position, role in enumerate(round_order(r)):
            name = "aa_one" if role == BASELINE else system
            centre = (1.0 if role == BASELINE else slow_factor) * (1 + 0.01 * rng.standard_normal())
            seconds = start_minute * 60 + 6 * k
            row = {**_row(name, r, centre * (1 + 0.01 * rng.standard_normal(20)) / 100),
                   "timestamp": f"2026-12-06T10:{seconds // 60:02d}:{seconds % 60:02d}+00:00"}
            rows.append(stamp(row, session=session, round=r, position=position, role=role, system=system,
                              baseline="aa_one", threshold=0.05))
            k += 1
    return rows


def test_decided_trials_count_verdicts_processes_and_minutes(bench):
    rows = (_session_rows("t1", "aa_two", 14, 1.0, 1) + _session_rows("s1", "aa_slow", 10, 1.1, 2)
            + _session_rows("t2", "aa_two", 14, 1.0, 3) + _session_rows("s2", "aa_slow", 10, 1.1, 4))
    d = bench.summarise_decided("quiet", rows)
    assert d["aa_slow"]["trials"] == 2 and d["aa_slow"]["undecided"] == 2  # 10 rounds: too few to look
    assert d["aa_slow"]["processes_median"] == 40
    assert d["aa_slow"]["minutes_median"] == pytest.approx(4.0)  # 40 processes 6 s apart
    assert d["aa_two"]["faster"] + d["aa_two"]["slower"] == 0 and d["aa_two"]["same"] == 2
    text = re.sub(r" +", " ", "\n".join(bench._decided_section([d])))
    assert "## With the stopping rule" in text and "decides at a 5% threshold" in text
    assert "| quiet | `aa_slow` | 2 | called slower: 0 of 2 (0%) | 0 | 2 | 40 / 40 | 4.0 / 4.0 |" in text
    assert "Other processes' share of the measured CPU: not recorded." in text


def test_decided_trials_state_what_other_processes_took_of_the_measured_cpu(bench):
    rows = _session_rows("t1", "aa_two", 2, 1.0, 1)
    for row, share in zip(rows, (0.0, 0.01, 0.02, 0.3, None, 0.0, 0.0, 0.01)):
        row["machine_state"] = {"other_cpu_share": share}
    d = bench.summarise_decided("loaded", rows)
    assert d["other_cpu"] == (0.01, 0.3, 7)
    assert bench._other_cpu_sentence(d) == ("Other processes took a median 1% (at most 30%) of the measured CPU "
                                            "while each of the 7 processes timed its epochs.")
