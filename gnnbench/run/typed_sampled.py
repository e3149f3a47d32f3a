"""What a sampled run of a relational model needs beyond a homogeneous one's (issue 58): its checks, and its inputs
per node type (Note [fan-out per relation] in gnnbench/sampling/hetero.py, Note [typed layers on blocks] in
models/typed.py).

Kept apart from :mod:`gnnbench.run.sampled` so that the loop there stays one loop: a typed batch gathers its own
inputs (``batch.gather``) and a typed block binds itself (``KernelBlocks.prepare``), so the loop needs only these.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.errors import UserError

__all__ = ["check_typed_run", "input_features", "whole_input"]


def check_typed_run(config) -> None:
    """A sampled run of a relational model: a sampler with an adapter for typed graphs that can run here
    (gnnbench's, DGL's; PyG's with pyg-lib or torch-sparse: Note [foreign samplers on typed graphs] in
    gnnbench/sampling/adapters.py), one line, and ``--relation-fanout`` naming its relations. Every system runs on
    its blocks, the natives with their own typed layers (Note [typed natives on blocks] in gnnbench/peers/typed.py)."""
    from gnnbench.sampling import sampler_unavailable_reason

    reason = sampler_unavailable_reason(config.sampler, typed=True)
    if reason:
        raise UserError(reason)
    if config.relation_fanouts:  # each names a relation of the dataset, one per layer (Note [fan-out per relation])
        from gnnbench.datasets.registry import typed_schema
        from gnnbench.sampling.hetero import fanouts_per_relation

        found = typed_schema(config.dataset, config.data_dir)  # None: a homogeneous dataset, refused elsewhere
        if found is not None:
            fanouts_per_relation(found[1], config.fanouts, config.relation_fanouts, config.dataset)


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
