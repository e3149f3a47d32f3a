"""gnnbench/run/sampled.py: --batching sampled, its checks, phases, row columns and native baselines."""
from __future__ import annotations

import itertools

import pytest

from gnnbench.cli.run import summary
from gnnbench.errors import UserError
from gnnbench.run.config import make_config
from gnnbench.run.harness import train
from gnnbench.run.preflight import check
from gnnbench.run.resolved import resolve_hyperparameters, stored_hyperparameters
from gnnbench.run.sweep import campaign_from_mapping

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"  # 15 training nodes


def _config(**values):
    return make_config({"system": "dgl-native", "model": "sage", "dataset": TINY, "batching": "sampled",
                        "fanouts": "4,3", "batch_size": 4, "epochs": 3, "warmup": 1, **values})


@pytest.mark.parametrize("values,message", [
    ({"fanouts": "5,5,5"}, "--fanouts 5,5,5 gives 3 fanout(s), but model 'sage' has 2 layers: give one per layer, "
                           "outermost first, e.g. --fanouts 10,10"),
    ({"batch_size": 16}, "--batch-size 16 is larger than the training set of "
                         "'sbm:classes=3,degree=8,features=16,nodes=400,p_in=0.8,seed=1' (15 nodes): give at most 15"),
])
def test_bad_sampling_input_is_one_line_before_any_worker(values, message):
    with pytest.raises(UserError) as err:
        check(_config(**values), isolate=False)
    assert str(err.value) == message


def test_the_worker_refuses_what_preflight_refuses_in_the_same_words():
    """The sampled checks are written once (Note [a run resolved once]): a worker, which may run without them,
    refuses fanouts the model cannot take with preflight's line."""
    with pytest.raises(UserError) as err:
        train(_config(fanouts="5,5,5"))
    assert str(err.value).startswith("--fanouts 5,5,5 gives 3 fanout(s), but model 'sage' has 2 layers")


@pytest.mark.parametrize("values,message", [
    ({"fanouts": "0,10"}, "--fanouts each fanout must be >= 1, or -1 for all neighbours (got 0)"),
    ({"fanouts": "25,-3"}, "--fanouts each fanout must be >= 1, or -1 for all neighbours (got -3)"),
    ({"fanouts": "99999999999999999999999999,5"},
     "--fanouts each fanout must be at most 2147483647, or -1 for all neighbours (got 99999999999999999999999999)"),
    ({"fanouts": "25,x"}, "--fanouts must be integers separated by commas, e.g. 25,10 (got '25,x')"),
    ({"batch_size": "0"}, "--batch-size must be greater than 0 (got '0')"),
    ({"sampler": "mine"}, "--sampler must be one of gnnbench, pyg, dgl (got 'mine')"),
])
def test_bad_values_are_refused_by_the_configuration(values, message):
    with pytest.raises(UserError) as err:
        _config(**values)
    assert str(err.value) == message


def test_sampler_without_its_library_is_refused(monkeypatch):
    import gnnbench.sampling.adapters as adapters

    monkeypatch.setattr(adapters, "sampler_unavailable_reason", lambda name: f"--sampler {name} needs DGL")
    import gnnbench.sampling as sampling

    monkeypatch.setattr(sampling, "sampler_unavailable_reason", adapters.sampler_unavailable_reason)
    with pytest.raises(UserError, match="^--sampler dgl needs DGL$"):
        check(_config(sampler="dgl"), isolate=False)


def test_sampling_fields_join_the_identity_only_when_sampled():
    full = make_config({"system": "reference", "model": "sage", "dataset": TINY})
    _, hyper = resolve_hyperparameters(full)
    assert not {"batching", "fanouts", "batch_size", "sampler"} & set(stored_hyperparameters(full, hyper))
    sampled = _config()
    assert {k: stored_hyperparameters(sampled, hyper)[k] for k in ("batching", "fanouts", "batch_size", "sampler")} \
        == {"batching": "sampled", "fanouts": [4, 3], "batch_size": 4, "sampler": "gnnbench"}


def test_fixed_fanout_scoring_joins_the_identity_and_needs_sampled_batching():
    _, hyper = resolve_hyperparameters(_config())
    assert "accuracy_method" not in stored_hyperparameters(_config(), hyper)  # the default: older rows keep theirs
    assert stored_hyperparameters(_config(accuracy_method="fixed-fanout"), hyper)["accuracy_method"] == "fixed-fanout"
    with pytest.raises(UserError) as err:
        check(make_config({"system": "reference", "model": "sage", "dataset": TINY,
                           "accuracy_method": "fixed-fanout"}), isolate=False)
    assert str(err.value) == ("--accuracy-method fixed-fanout scores mini-batches of sampled neighbours, so it needs "
                              "--batching sampled; a full-graph run scores every node over all its neighbours")


def test_fixed_fanout_scoring_samples_every_node_with_the_training_fanouts():
    """Note [sampled evaluation]: with fanouts above every degree the sampled blocks hold every neighbour, so both
    methods score the same model alike; with fanout 1 they differ, and the row says which it used."""
    common = dict(system="reference", epochs=2, fanouts="-1,-1")
    full = train(_config(**common), clock=_Clock())
    fixed = train(_config(accuracy_method="fixed-fanout", **common), clock=_Clock())
    assert (full["accuracy_method"], fixed["accuracy_method"]) == ("full-neighbour", "fixed-fanout")
    assert fixed["final_loss"] == full["final_loss"]  # scoring is after training: the same model
    for split in ("train", "val", "test"):
        assert fixed[f"{split}_accuracy"] == pytest.approx(full[f"{split}_accuracy"])
    sparse = train(_config(system="reference", epochs=2, fanouts="1,1", accuracy_method="fixed-fanout"),
                   clock=_Clock())
    assert "accuracy by fixed-fanout inference" in summary(sparse)


def test_a_sampled_row_gives_the_spmm_figures_of_its_blocks():
    """Note [spmm figures]: a kernel system's sampled row counts its SpMM work on the blocks, as full-graph rows do."""
    row = train(_config(system="reference", epochs=3))
    figures = row["extra"]["spmm_figures"]["kernels"]
    assert set(figures) == set(row["extra"]["kernel_median_s_by_kernel"]) == {"spmm_sum", "spmm_sum_backward"}
    assert figures["spmm_sum"]["calls"] == 2 * 4  # two layers x 4 batches in the median epoch
    assert figures["spmm_sum_backward"]["calls"] == 4  # the inner layer's input needs no gradient
    assert figures["spmm_sum"]["GBps"] > 0 and figures["spmm_sum"]["GFLOPs"] > 0
    assert "  spmm       spmm_sum " in summary(row)


def test_fanout_sets_are_a_sweep_axis():
    campaign = campaign_from_mapping({"systems": ["reference"], "models": ["sage"], "datasets": [TINY],
                                      "batchings": ["sampled"], "fanout_sets": [[25, 10], "5,5"],
                                      "batch_sizes": [16, 32]})
    configs = campaign.matrices[0].configs
    assert sorted({(c.fanouts, c.batch_size) for c in configs}) == sorted(
        itertools.product([(5, 5), (25, 10)], [16, 32]))


class _Clock:
    """Every reading 1 ms after the last: each phase of each batch takes 1 ms."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.001
        return self.t


def test_phases_rows_and_summary_of_a_sampled_run():
    row = train(_config(), clock=_Clock())  # 15 training nodes, batches of 4: 4 batches an epoch
    assert row["status"] == "ok" and row["accuracy_method"] == "full-neighbour"
    for name in ("sample", "gather", "block_prepare"):
        assert row[f"{name}_times"] == pytest.approx([0.004, 0.004])  # 2 timed epochs x 4 batches x 1 ms
    assert row["epoch_times"] == pytest.approx([0.024, 0.024])
    assert row["seeds_per_s"] == pytest.approx(15 / 0.024)
    assert row["edges_per_s"] == pytest.approx(row["extra"]["sampled_edges_per_epoch"] / 0.024)
    text = summary(row)
    assert "  sampled    sample 4.00 ms, gather 4.00 ms, block prepare 4.00 ms (16.7% of the epoch)" in text
    assert "fanouts 4,3, batch size 4, sampler gnnbench: 625 seeds/s" in text


def test_both_native_baselines_train_on_the_same_blocks_to_the_same_losses():
    pytest.importorskip("torch_geometric")
    rows = {s: train(_config(system=s, model=m, epochs=3), clock=_Clock())
            for s in ("dgl-native", "pyg-native") for m in ("sage",)}
    dgl, pyg = rows["dgl-native"], rows["pyg-native"]
    assert dgl["first_loss"] == pytest.approx(pyg["first_loss"], rel=1e-4)
    assert dgl["final_loss"] == pytest.approx(pyg["final_loss"], rel=1e-3)
    assert dgl["extra"]["sampled_edges_per_epoch"] == pyg["extra"]["sampled_edges_per_epoch"]


@pytest.mark.parametrize("model", ["gcn", "gat", "gin"])
def test_native_baselines_agree_on_every_model(model):
    pytest.importorskip("torch_geometric")
    a = train(_config(system="dgl-native", model=model, epochs=2), clock=_Clock())
    b = train(_config(system="pyg-native", model=model, epochs=2), clock=_Clock())
    assert a["first_loss"] == pytest.approx(b["first_loss"], rel=1e-4)


def test_sampled_inference_times_forward_passes_over_every_node():
    row = train(_config(mode="inference", batch_size=16), clock=_Clock())  # 400 nodes / 16: 25 batches a pass
    assert row["backward_times"] is None and row["first_loss"] is None
    assert row["epoch_times"] == pytest.approx([0.025 * 4] * 2)  # sample, gather, prepare, forward: 1 ms each
    assert row["seeds_per_s"] == pytest.approx(400 / 0.1)


@pytest.mark.parametrize("model", ["sage", "gcn", "gat", "gin"])
def test_a_kernel_system_on_the_same_blocks_matches_the_native_baseline(model):
    ref = train(_config(system="reference", model=model, epochs=2), clock=_Clock())
    dgl = train(_config(system="dgl-native", model=model, epochs=2), clock=_Clock())
    assert ref["first_loss"] == pytest.approx(dgl["first_loss"], rel=1e-4)
    assert ref["block_prepare_times"] is not None and ref["kernel_median_s"] is not None


def test_tensorflow_runs_sampled_with_the_same_losses_as_torch():
    pytest.importorskip("tensorflow")
    torch_row = train(_config(system="reference", epochs=2), clock=_Clock())
    tf_row = train(_config(system="reference", framework="tensorflow", epochs=2), clock=_Clock())
    assert tf_row["status"] == "ok" and tf_row["first_loss"] == pytest.approx(torch_row["first_loss"], rel=1e-4)


def test_a_system_whose_spec_refuses_blocks_is_skipped_with_its_reason(monkeypatch):
    import dataclasses

    from gnnbench.errors import UnavailableError
    from gnnbench.runtime import registry

    real = registry.system_info

    def info(name):
        found = real(name)
        return dataclasses.replace(found, blocks="no", blocks_reason="its kernels index x by N") \
            if name == "reference" else found

    monkeypatch.setattr(registry, "system_info", info)
    with pytest.raises(UnavailableError, match="^system 'reference' does not support sampled blocks \\(its spec: "
                                               "`blocks no`\\): its kernels index x by N$"):
        train(_config(system="reference"))
