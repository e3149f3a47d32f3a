"""What a sampled run of a relational model needs beyond a homogeneous one's (issue 58): its checks, and its inputs
per node type (Note [fan-out per relation] in gnnbench/sampling/hetero.py, Note [typed layers on blocks] in
models/typed.py).

Kept apart from :mod:`gnnbench.run.sampled` so that the loop there stays one loop: a typed batch gathers its own
inputs (``batch.gather``) and a typed block binds itself (``KernelBlocks.prepare``), so the loop needs only these.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.errors import UnavailableError, UserError

__all__ = ["check_typed_run", "input_features", "whole_input"]


def check_typed_run(config, info) -> None:
    """A sampled run of a relational model: a kernel system (the natives' own typed samplers are issue 58's second
    arm, not built: ``skipped``) and gnnbench's sampler (the only one with typed graphs); one line each."""
    if info.kind != "kernel":
        raise UnavailableError(f"system '{config.system}' trains relational models full-graph only: its own "
                               f"sampler on typed graphs is not wired in yet (run it with --batching full)")
    if config.sampler != "gnnbench":
        raise UserError(f"--sampler {config.sampler} has no adapter for typed graphs; relational model "
                        f"'{config.model}' samples with --sampler gnnbench (Note [fan-out per relation])")


def input_features(dataset) -> Any:
    """What a sampled run gathers each batch's inputs from: a typed dataset's features per node type, or the
    features array."""
    typed = getattr(dataset, "type_features", None)
    return typed if typed is not None else np.asarray(dataset.features)


def whole_input(F, features: Any) -> Any:
    """Every node's features as the model's input (full-neighbour evaluation): one tensor, or one per node type."""
    if isinstance(features, dict):
        return {t: F.tensor(v) for t, v in features.items()}
    return F.tensor(features)
