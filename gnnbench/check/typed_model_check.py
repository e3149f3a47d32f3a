"""verify's model check of the relational models (R-GCN, R-GAT) against their dense float64 equations.

Note [typed model check]
    As Note [model check] for the homogeneous models: the model runs on the system under test (its kernels, its
    dtype, no dropout), and its target logits and every parameter gradient of ``sum(logits * R)`` are compared
    with the model's dense equation (``TypedGNN.dense``: ``A[r]`` the dense ``[N_dst, N_src]`` edge counts of
    relation ``r``) in float64. The typed graph is small and holds what relational kernels get wrong: relations
    with fewer sources than destinations and more, one with no edges, a node type that no relation reaches (it
    sends only), a self-relation, and parallel edges; int32 indices.
"""
from __future__ import annotations

import time
import numpy as np

from gnnbench.runtime.hetero import HeteroGraph, Relation

__all__ = ["typed_model_graph", "typed_dense_forward", "check_typed_model", "typed_hyper"]

_WIDTH, _CLASSES, _PER_HEAD = 9, 5, 6


def typed_model_graph(index_dtype=np.int32) -> tuple[HeteroGraph, str]:
    """``(graph, target type)``: four node types, six relations (Note [typed model check])."""
    rng = np.random.default_rng(5)
    counts = {"paper": 13, "author": 7, "venue": 3, "tag": 5}
    edges: dict[Relation, tuple[np.ndarray, np.ndarray]] = {}

    def draw(src: str, name: str, dst: str, m: int):
        s, d = rng.integers(0, counts[src], m), rng.integers(0, counts[dst], m)
        edges[Relation(src, name, dst)] = (np.r_[s, s[:1]], np.r_[d, d[:1]])  # one parallel edge

    draw("author", "writes", "paper", 20)       # S < N
    draw("paper", "written_by", "author", 20)   # S > N
    draw("paper", "cites", "paper", 25)         # a self-relation
    draw("paper", "in", "venue", 10)
    draw("tag", "tags", "paper", 9)             # tag: a type no relation reaches
    edges[Relation("venue", "hosts", "paper")] = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # no edges
    return HeteroGraph.from_edges(counts, edges, index_dtype), "paper"


def typed_hyper(model_cls, heads: int, bases: int | None = None):
    from dataclasses import replace

    return replace(model_cls.defaults, hidden=_PER_HEAD * heads, layers=2, dropout=0.0, heads=heads, bases=bases)


def typed_dense_forward(model, graph: HeteroGraph, params: dict, x: dict):
    """The target logits from the model's dense equation (``TypedGNN.dense``), float64 torch tensors."""
    import torch

    from gnnbench.frameworks import get_frontend

    adjacency = {}
    for k, (r, g) in enumerate(zip(graph.relations, graph.graphs)):
        src, dst = (torch.from_numpy(a.astype(np.int64)) for a in g.edges())
        adjacency[k] = torch.zeros(g.num_dst, g.num_src, dtype=torch.float64).index_put_(
            (dst, src), torch.ones(len(src), dtype=torch.float64), accumulate=True)
    F = get_frontend("torch", "cpu", "float64")
    h, last = dict(x), len(model.convs) - 1
    for i in range(len(model.convs)):
        prefix = f"conv{i}."
        p = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}
        h = model.dense(torch, adjacency, h, p, i)
        if i < last:
            h = {t: model.activation(F, v) for t, v in h.items()}
    return model.output(F, params, h)


def check_typed_model(row, system: str, model_cls, *, heads: int, bases: int | None = None, dtype: str,
                      device: str, threads: int | None, guard: bool, on_case=None):
    """Note [typed model check] on ``system``; fills and returns ``row`` (a ``CaseResult``)."""
    import torch

    from gnnbench.check.conformance import _nullcontext, _torch_threads, guarded
    from gnnbench.check.model_check import MODEL_TOLERANCES, _mismatch, _record
    from gnnbench.errors import UnavailableError
    from gnnbench.frameworks import get_frontend
    from gnnbench.models.typed import Schema
    from gnnbench.runtime.hetero import BoundHeteroGraph
    from gnnbench.runtime.registry import load_system

    begin = time.perf_counter()
    glue = load_system(system, "torch", device)
    F = get_frontend("torch", device, dtype)
    graph, target = typed_model_graph()
    widths = {t: _WIDTH for t in graph.node_types}
    model = model_cls(Schema(widths, graph.relations, target), _CLASSES, typed_hyper(model_cls, heads, bases))
    where = (f"'typed' (int32, {len(graph.node_types)} node types, {len(graph.relations)} relations, "
             f"E={graph.num_edges}, F={_WIDTH}->{model.hyper.hidden}->{_CLASSES}, {dtype})")
    if on_case:
        on_case(where)
    rng = np.random.default_rng(17)
    initial = {k: v.astype(np.float64) for k, v in model.init_params(3).items()}
    x = {t: rng.uniform(-1, 1, (n, _WIDTH)) for t, n in graph.node_counts.items()}
    r = rng.uniform(-1, 1, (graph.node_counts[target], _CLASSES))
    row.cases += 1
    params = {k: F.parameter(v) for k, v in initial.items()}
    problems: list[str] = []
    try:
        with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or torch.get_num_threads()):
            logits = model.forward(F, params, BoundHeteroGraph(graph, glue), {t: F.tensor(v) for t, v in x.items()},
                                   False)
            grads = torch.autograd.grad((logits * F.tensor(r)).sum(), list(params.values()), allow_unused=True)
    except UnavailableError as err:
        row.status, row.reason = "skipped", str(err).split(";")[0]
        row.cases -= 1
        return row
    except Exception as err:  # noqa: BLE001 - a failing system is a finding
        text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
        problems.append(f"{row.operator} on {where}: raised {type(err).__name__}: {text}")
    else:
        ref_params = {k: torch.from_numpy(v).requires_grad_(True) for k, v in initial.items()}
        ref_logits = typed_dense_forward(model, graph, ref_params, {t: torch.from_numpy(v) for t, v in x.items()})
        ref_grads = torch.autograd.grad((ref_logits * torch.from_numpy(r)).sum(), list(ref_params.values()),
                                        allow_unused=True)
        tol = MODEL_TOLERANCES[dtype]
        pairs = [("logits", logits, ref_logits)] + [
            (f"grad {k}", torch.zeros_like(rg if rg is not None else v) if g is None else g,
             torch.zeros_like(g if g is not None else v) if rg is None else rg)
            for (k, v), g, rg in zip(ref_params.items(), grads, ref_grads)]
        for quantity, got, want in pairs:
            bad = _mismatch(got, want, tol)
            if bad:
                problems.append(f"{row.operator} {quantity} on {where}: {bad}")
        problems += _native_problems(row.operator, model, graph, initial, x, ref_logits, where)
    _record(row, "typed", problems)
    row.seconds = time.perf_counter() - begin
    if row.status == "passed":
        from gnnbench.check.model_check import _natives_of

        natives = _natives_of(model_cls)
        row.detail = (f"target logits and {len(initial)} parameter gradients vs the dense float64 equation on a "
                      f"typed graph of {len(graph.relations)} relations"
                      + (f"; dense logits vs {' and '.join(natives)}" if natives else ""))
    return row


def _native_problems(label, model, graph, initial, x, ref_logits, where) -> list[str]:
    """The dense equation's logits against the PyG and DGL layers the model declares, where installed."""
    try:
        from gnnbench.peers.typed import typed_natives_problems
    except ImportError:  # no typed natives declared yet
        return []
    return typed_natives_problems(label, model, graph, initial, x, ref_logits, where)

