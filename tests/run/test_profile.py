"""``gnnbench run --profile`` (Note [profiled epochs]): a fake profiler's events become the exact table; real
torch.profiler runs of a kernel system and a native baseline name their kernels; the timed figures stay clean."""
from __future__ import annotations

from contextlib import contextmanager, nullcontext

import pytest

from gnnbench.cli.run import summary
from gnnbench.errors import UserError
from gnnbench.results.row import Extra, Profile
from gnnbench.run import profile as profiling
from gnnbench.run.config import make_config
from gnnbench.run.harness import RunConfig, train

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"

#: what the fake profiler records in each phase of every profiled epoch: (name, self seconds)
_PHASE_EVENTS = [
    [("reference::spmm_sum", 0.004), ("aten::addmm", 0.002), ("_Bridge", 0.0005), ("aten::addmm", 0.001)],
    [("reference::spmm_sum_backward", 0.006), ("_BridgeBackward", 0.001), ("aten::mm", 0.003)],
    [("Optimizer.step#Adam.step", 0.0004), ("aten::add_", 0.0001)],
]


class FakeProfiler:
    """Records the phases in turn, each its events of ``_PHASE_EVENTS``; labels nothing (the run names kernels)."""

    tool = "fake.profiler"
    records: list[str] = []

    @contextmanager
    def record(self):
        events: list[tuple[str, float]] = []
        yield events
        events.extend(_PHASE_EVENTS[len(self.records) % 3])
        self.records.append("record")

    def label(self, name: str):
        return nullcontext()


@pytest.fixture
def fake_profiler(monkeypatch):
    FakeProfiler.records = []
    monkeypatch.setattr(profiling, "PROFILER", FakeProfiler)
    return FakeProfiler


def test_a_fake_profile_is_stored_and_shown_as_its_exact_table(fake_profiler):
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1, profile=True))
    assert len(fake_profiler.records) == 3 * profiling.PROFILED_EPOCHS  # the optimizer's warm-up epoch unrecorded
    assert len(row["epoch_times"]) == 3  # the profiled epochs are extra, never timed ones
    lines = summary({**row, "verified": "passed"}).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  profile "))
    assert lines[start:] == [
        "  profile    fake.profiler, self CPU time per epoch over 3 extra epochs after the timed ones, which were "
        "not profiled (Note [profiled epochs]); * reference's own kernels; the 10 costliest operators of each phase",
        "    phase      operator                          self ms/epoch    share    calls/epoch",
        "    ---------  ------------------------------  ---------------  -------  -------------",
        "    forward    (all operators)                            7.50     100%",
        "               * reference::spmm_sum                      4.00      53%              1",
        "               aten::addmm                                3.00      40%              2",
        "               _Bridge                                    0.50       7%              1",
        "    backward   (all operators)                           10.00     100%",
        "               * reference::spmm_sum_backward             6.00      60%              1",
        "               aten::mm                                   3.00      30%              1",
        "               _BridgeBackward                            1.00      10%              1",
        "    optimizer  (all operators)                            0.50     100%",
        "               Optimizer.step#Adam.step                   0.40      80%              1",
        "               aten::add_                                 0.10      20%              1",
    ]


def test_the_stored_profile_reads_back_as_its_record(fake_profiler):
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, profile=True))
    profile = Extra.of(row).profile
    assert isinstance(profile, Profile) and profile.tool == "fake.profiler" and profile.epochs == 3
    assert [(op.name, op.kernel) for op in profile.phases["forward"]] == [
        ("reference::spmm_sum", True), ("aten::addmm", False), ("_Bridge", False)]
    assert profile.totals == pytest.approx({"forward": 0.0075, "backward": 0.010, "optimizer": 0.0005})
    assert Extra.from_dict(Extra.of(row).as_dict()) == Extra.of(row)


def test_an_inference_run_profiles_its_passes_only(fake_profiler):
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, mode="inference",
                          profile=True))
    assert list(row["extra"]["profile"]["phases"]) == ["forward"]
    assert len(fake_profiler.records) == profiling.PROFILED_EPOCHS


def test_a_run_without_the_flag_has_no_profile():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1))
    assert "profile" not in row["extra"]
    assert not any(line.startswith("  profile ") for line in summary(row).splitlines())


@pytest.mark.parametrize("system, kernels", [("reference", {"reference::spmm_sum", "reference::spmm_sum_backward"}),
                                             ("dgl-native", {"GSpMM", "GSpMMBackward"})])
def test_torch_profiler_names_a_kernel_systems_kernels_and_a_natives_own_operators(system, kernels, monkeypatch):
    """Note [profiled epochs]: reference's kernels (written with torch operators) are one labelled entry each,
    their operators inside them; DGL's layer shows its own GSpMM, marked as dgl-native's kernel."""
    monkeypatch.setattr(profiling, "TOP_OPERATORS", 1000)  # every operator: which are the top ten is the machine's
    row = train(RunConfig(system=system, model="gcn", dataset=TINY, epochs=3, warmup=1, profile=True))
    profile = Extra.of(row).profile
    assert profile.tool == "torch.profiler" and list(profile.phases) == ["forward", "backward", "optimizer"]
    names = {op.name for ops in profile.phases.values() for op in ops}
    assert {op.name for ops in profile.phases.values() for op in ops if op.kernel} == kernels <= names
    if system == "reference":  # the kernel's own torch operators are inside it, not listed beside it
        assert "aten::scatter_add_" not in {op.name for op in profile.phases["forward"]}
    for phase, ops in profile.phases.items():
        assert sum(op.self_s for op in ops) == pytest.approx(profile.totals[phase])  # all kept: they add up


@pytest.mark.parametrize("values, message", [
    ({"framework": "tensorflow"}, "--profile reads torch.profiler's per-operator self times; tensorflow's profiler "
     "writes a trace for TensorBoard instead: use --framework torch or drop --profile"),
    ({"batching": "sampled"}, "--profile profiles full-graph epochs; drop --profile or use --batching full"),
])
def test_what_cannot_be_profiled_is_refused_in_one_line(values, message):
    with pytest.raises(UserError) as err:
        make_config({"system": "reference", "model": "gcn", "profile": True, **values})
    assert str(err.value) == message


def test_a_profiled_run_is_the_same_experiment_as_an_unprofiled_one():
    """Its timed epochs are not profiled (Note [profiled epochs]), so the flag is no part of the row's identity;
    ``extra.profile`` marks the row."""
    from gnnbench.run.sweep import identity, provenance

    plain = RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1)
    assert provenance(identity(plain.replace(profile=True))) == provenance(identity(plain))
