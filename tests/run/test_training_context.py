"""Note [one training context]: each training loop takes one frozen context, and the run's configuration reaches
it through that context alone, so a new setting or a new piece of a loop touches its declaration and its readers."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from gnnbench.run import harness, sampled
from gnnbench.run.config import make_config
from gnnbench.run.loop import TrainingContext
from gnnbench.run.resolved import ResolvedRun

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"

#: each training loop, and the context it runs with
LOOPS = [(harness._train_epochs, harness.FullGraphContext), (harness._infer, harness.FullGraphContext),
         (sampled._epochs, sampled.SampledContext)]


class _Captured(Exception):
    """Raised by a stand-in loop, with the context it was given, so that the run goes no further."""

    def __init__(self, context):
        super().__init__("captured")
        self.context = context


def _capture(context):
    raise _Captured(context)


@pytest.mark.parametrize("loop,context_type", LOOPS, ids=lambda x: getattr(x, "__name__", ""))
def test_each_loop_takes_its_context_and_nothing_else(loop, context_type):
    parameters = inspect.signature(loop).parameters
    assert list(parameters) == ["context"]
    assert parameters["context"].annotation == context_type.__name__


@pytest.mark.parametrize("context_type", [harness.FullGraphContext, sampled.SampledContext])
def test_a_context_is_frozen_keyword_only_and_shares_what_every_loop_runs_with(context_type):
    """Keyword-only fields: a new one is declared where it belongs, and no call that builds a context shifts."""
    assert issubclass(context_type, TrainingContext)
    assert context_type.__dataclass_params__.frozen
    assert all(f.kw_only for f in dataclasses.fields(context_type))
    shared = {f.name for f in dataclasses.fields(TrainingContext)}
    assert shared <= {f.name for f in dataclasses.fields(context_type)}
    assert {"run", "F", "dataset", "phases", "report", "target"} <= shared


@pytest.mark.parametrize("mode,loop", [("train", "_train_epochs"), ("inference", "_infer")])
def test_the_full_graph_loop_gets_the_very_configuration_the_run_was_given(monkeypatch, mode, loop):
    monkeypatch.setattr(harness, loop, _capture)
    config = make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 3, "warmup": 1,
                          "mode": mode})
    clock = iter(range(1000)).__next__
    with pytest.raises(_Captured) as captured:
        harness.train(config, clock=clock)
    context = captured.value.context
    assert isinstance(context, harness.FullGraphContext)
    assert context.config is config  # every field of a RunConfig, present or future, reaches the loop
    assert context.hyper == ResolvedRun.of(config).hyper and context.hyper.epochs == 3
    assert context.clock is clock and context.phases.clock is clock
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.F = None


def test_the_sampled_loop_gets_the_very_configuration_the_run_was_given(monkeypatch):
    monkeypatch.setattr(sampled, "_epochs", _capture)
    config = make_config({"system": "reference", "model": "sage", "dataset": TINY, "batching": "sampled",
                          "fanouts": "4,3", "batch_size": 4, "epochs": 3, "warmup": 1})
    with pytest.raises(_Captured) as captured:
        harness.train(config)
    context = captured.value.context
    assert isinstance(context, sampled.SampledContext)
    assert context.config is config and context.hyper.layers == 2
    assert context.self_loops == context.run.model_cls.self_loops
    assert (context.edges, context.seeds) == ([], [])  # filled by the loop
