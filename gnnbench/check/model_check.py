"""verify's model check: the four framework-neutral models against an independent dense float64 formulation.

Note [model check]
    A system and ``reference`` share the models (``models/*.py``), so end-to-end
    parity cannot see a bug in a model: GCN normalised as ``D^-1 A`` instead of
    ``D^-1/2 A D^-1/2`` trains identically on both. The model check runs each
    model on the system under test (its kernels, its float dtype, no dropout)
    and compares the logits and every parameter gradient of ``sum(logits * R)``
    (``R`` a fixed random matrix) with a dense float64 formulation of the
    paper's equation, which each model declares beside its convolution
    (``GNN.dense``), independent of the system API:

    * GCN: ``X' = D_in^-1/2 Â D_out^-1/2 X W + b`` with ``Â = A + I`` (one loop
      added where a node lacks one; ``Â[i, j]`` counts the edges ``j -> i``);
      on an undirected graph this is Kipf & Welling's ``D^-1/2 Â D^-1/2``.
    * GIN-0: ``MLP(X + A X)``, MLP = Linear, ReLU, Linear.
    * SAGE (mean): ``X W_r + (D_in^-1 A X) W_n + b``, an empty row giving 0.
    * GAT: ``alpha_ij = C_ij exp(e_ij) / sum_k C_ik exp(e_ik)`` over ``Â``'s edges with
      multiplicity ``C``, ``e_ij = LeakyReLU_0.2(a_s . h_j + a_d . h_i)``, heads
      concatenated, ELU between layers.
    * a multi-head model again at its default head count (``gat-8heads``).
    * GCN's two forms (``gcn-forms``, Note [GCN as node scales] in models/gcn.py;
      any model whose ``normalisations`` name several forms gets one):
      the node form (scales around an unweighted spmm, GCN's default, which
      ``gcn`` checks against the dense formulation) and the edge form (per-edge
      weights into a weighted spmm), both on the system under test, must give
      the same logits and parameter gradients within twice the tolerances below
      (each form may be that far from the exact value; a float32 system such as
      ``pim`` rounds the two differently). A system lacking the weighted (or
      unweighted) spmm skips it with the reason.
    * weighted GCN (verify's own probe): ``A_w X W + b`` with asymmetric random
      edge weights, so that a backward reading the weight at the wrong edge
      position (``w[p]`` for ``w[edge_ids[p]]`` on the transposed view) shows in
      ``grad W`` even where GCN's own weights are symmetric.

    Each runs on a small undirected and a small directed graph (with a
    parallel edge and a loop), two layers with hidden width 17, three heads
    for GAT. The checks derive from the model table (:func:`model_check_names`):
    a model that declares no ``dense`` fails its check in one line saying so.
    ``models`` may name another model table (``"module:attribute"``), which is
    how ``tests/demo_systems/demo_gcn_row_norm`` shows that a broken model is
    caught. Where PyG or DGL is installed, a model's dense logits are also
    compared with the native layers it declares (:func:`_native_problems`).

Note [typed model check]
    As Note [model check] for the homogeneous models: the relational model
    runs on the system under test (its kernels, its dtype, no dropout), and
    its target logits and every parameter gradient of ``sum(logits * R)``
    are compared with the model's dense equation (``TypedGNN.dense``:
    ``A[r]`` the dense ``[N_dst, N_src]`` edge counts of relation ``r``) in
    float64, and the dense logits with the PyG and DGL layers it declares
    (:func:`typed_natives_problems`). The typed graph
    (:func:`typed_model_graph`) is small and holds what relational code gets
    wrong: relations with fewer sources than destinations and more, one
    with no edges, a node type that no relation reaches (it sends only), a
    self-relation, and a parallel edge; int32 indices.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gnnbench.check.conformance import CaseResult, Tolerance, _nullcontext, _torch_threads, compare, guarded
from gnnbench.runtime.graph import Graph
from gnnbench.runtime.hetero import HeteroGraph, Relation

__all__ = ["MODEL_TOLERANCES", "model_check_names", "check_model", "model_graphs", "dense_forward",
           "typed_model_graph", "typed_dense_forward", "typed_hyper", "typed_natives_problems"]

#: logits and gradients vs the dense oracle; atol is relative to the largest expected magnitude. float64
#: is limited to ~1e-7 because ``Graph.gcn_norm`` (and ``Graph.gcn_scales``) stores GCN's edge weights as float32 whatever the run's
#: dtype (gnnbench/runtime/graph.py); a normalisation bug is off by far more (tens of percent).
MODEL_TOLERANCES = {"float64": Tolerance(rtol=1e-6, atol=1e-7), "float32": Tolerance(rtol=2e-4, atol=2e-5)}
_IN, _HIDDEN, _CLASSES, _HEADS = 9, 17, 5, 3


def model_graphs(index_dtype=np.int64) -> dict[str, Graph]:
    """A small undirected graph (with an isolated node) and a directed one with a parallel edge and a loop."""
    rng = np.random.default_rng(7)
    n = 24
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n - 1, (40, 2)) if a != b}
    src = np.array([a for a, b in pairs] + [b for a, b in pairs], np.int64)
    dst = np.array([b for a, b in pairs] + [a for a, b in pairs], np.int64)
    undirected = Graph.from_edges(src, dst, n, index_dtype)
    dsrc, ddst = rng.integers(0, n, 60), rng.integers(0, n, 60)
    directed = Graph.from_edges(np.r_[dsrc, dsrc[:1], 3], np.r_[ddst, ddst[:1], 3], n, index_dtype)
    return {"undirected": undirected, "directed": directed}


def _random_weights(graph: Graph) -> np.ndarray:
    rng = np.random.default_rng(graph.num_edges)
    return rng.uniform(0.25, 2.0, graph.num_edges) * np.where(rng.random(graph.num_edges) < 0.3, -1.0, 1.0)


def _model_table(models: str | None) -> dict[str, Any]:
    if models is None:
        from gnnbench.models import MODELS

        return dict(MODELS)
    module, _, attribute = models.partition(":")
    return dict(getattr(importlib.import_module(module), attribute))


def _weighted_gcn():
    """verify's own probe (Note [model check]): GCN's layer over asymmetric random edge weights, no loops."""
    from gnnbench.models import GCN
    from gnnbench.models.base import Conv, glorot, zeros

    class WeightedGCN(GCN):
        name = "weighted-gcn"
        self_loops = False
        pyg = dgl = None

        def conv(self, index, in_dim, out_dim):
            def forward(F, p, graph, x):
                w = F.graph_tensor(graph, "verify_random_weight", _random_weights(graph.graph))
                return F.add(F.spmm(graph, F.matmul(x, p["weight"]), w, reduce="sum"), p["bias"])

            return Conv({"weight": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}, forward)

        def dense(self, T, A, x, p, index):  # A holds the weights (_dense_adjacency)
            return A @ (x @ p["weight"]) + p["bias"]

    return WeightedGCN


@dataclass(frozen=True)
class _Check:
    """One model check: ``kind`` is ``dense`` (against :func:`dense_forward`), ``typed`` (a relational model
    against its dense equation, Note [typed model check]) or ``forms`` (a model's normalisation forms against
    each other); ``natives``: also the dense logits against the native layers."""

    kind: str
    model: type
    heads: int = _HEADS
    natives: bool = False
    bases: int | None = None  # R-GCN's basis decomposition (Note [typed model check])


def _checks(models: str | None) -> dict[str, _Check]:
    """Every model check by label, derived from the model table (Note [model check])."""
    table = _model_table(models)
    def kind(cls) -> str:  # a relational model that declares its equation: Note [typed model check]
        return "typed" if getattr(cls, "typed", False) and cls.dense is not None else "dense"

    checks = {name: _Check(kind(cls), cls, natives=True) for name, cls in table.items()}
    checks.update({f"{name}-{cls.defaults.heads}heads": _Check(kind(cls), cls, heads=cls.defaults.heads)
                   for name, cls in table.items() if cls.defaults.heads not in (1, _HEADS)})
    checks.update({f"{name}-bases": _Check("typed", cls, bases=2) for name, cls in table.items()
                   if getattr(cls, "basis_decomposition", False)})
    checks["weighted-gcn"] = _Check("dense", _weighted_gcn())
    checks.update({f"{name}-forms": _Check("forms", cls) for name, cls in table.items()
                   if len(cls.normalisations) > 1})
    return checks


def model_check_names(models: str | None = None) -> tuple[str, ...]:
    """The labels of every model check (``model gcn``, ...) for the model table (default: ``models.MODELS``):
    each model, each multi-head model at its default head count (``gat-8heads``), verify's weighted-GCN
    probe, and each model's normalisation forms against each other (``gcn-forms``)."""
    return tuple(_checks(models))


def _hyper(model_cls, **changes):
    from dataclasses import replace

    changes = {"heads": _HEADS, **changes}
    return replace(model_cls.defaults, hidden=_HIDDEN, layers=2, dropout=0.0, **changes)


# ----------------------------------------------------------------- the dense oracle
def dense_forward(model, graph: Graph, params: dict, x):
    """Logits of ``model`` from its declared dense layers (``GNN.dense``) with float64 torch tensors
    (Note [model check]); ``params`` as :meth:`~gnnbench.models.GNN.init_params` names them."""
    import torch

    from gnnbench.frameworks import get_frontend

    adjacency = _dense_adjacency(graph, model)
    F = get_frontend("torch", "cpu", "float64")  # the model's activation between layers
    h, last = x, len(model.convs) - 1
    for i in range(len(model.convs)):
        prefix = f"conv{i}."
        p = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}
        h = model.dense(torch, adjacency, h, p, i)
        if i < last:
            h = model.activation(F, h)
    return h


def _dense_adjacency(graph: Graph, model):
    """``A[i, j]``: the edges ``j -> i`` counted (verify's weighted probe: their weights summed), with a loop
    added where a node lacks one when the model aggregates over ``A + I``."""
    import torch

    n = graph.num_nodes
    src, dst = (torch.from_numpy(a.astype(np.int64)) for a in graph.edges())
    values = _random_weights(graph) if model.name == "weighted-gcn" else np.ones(len(src))
    adjacency = torch.zeros(n, n, dtype=torch.float64).index_put_((dst, src), torch.from_numpy(values),
                                                                  accumulate=True)
    if model.self_loops:
        adjacency = adjacency + torch.diag((torch.diagonal(adjacency) == 0).to(torch.float64))
    return adjacency


# ----------------------------------------------------------------- the check
def check_model(system: str, name: str, *, dtype: str = "float64", framework: str = "torch", device: str = "cpu",
                threads: int | None = None, guard: bool = True, models: str | None = None,
                on_case=None) -> CaseResult:
    """Model check ``name`` (one of :func:`model_check_names`) on ``system`` vs :func:`dense_forward`: logits and
    every parameter gradient, per graph; a model that declares no ``dense`` fails in one line."""
    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.errors import UnavailableError, UserError
    from gnnbench.runtime.registry import load_system

    checks = _checks(models)
    if name not in checks:
        raise UserError(f"unknown model check '{name}'; choose one of: {', '.join(checks)}")
    check = checks[name]
    row = CaseResult(f"model {name}")
    if framework != "torch":
        row.status, row.reason = "skipped", f"the model check runs under torch (got {framework})"
        return row
    if check.kind != "dense":  # GCN's forms against each other; a relational model (Note [typed model check])
        return {"forms": _check_forms, "typed": check_typed_model}[check.kind](
            row, system, check, dtype=dtype, device=device, threads=threads, guard=guard, on_case=on_case)
    model_cls, heads = check.model, check.heads
    if model_cls.dense is None:
        row.status, row.failed_cases = "failed", 1
        row.failures.append(f"{row.operator}: model '{model_cls.name}' declares no dense formulation (its 'dense' "
                            f"is None), which the model check compares it with (Note [model check])")
        return row
    begin = time.perf_counter()
    glue = load_system(system, framework, device)
    F = get_frontend("torch", device, dtype)
    tol = MODEL_TOLERANCES[dtype]
    rng = np.random.default_rng(11)
    for graph_name, base in model_graphs(np.int32).items():
        graph = base.with_self_loops() if model_cls.self_loops else base
        where = f"'{graph_name}' (int32, N={graph.num_nodes}, E={graph.num_edges}, F={_IN}->{_HIDDEN}->{_CLASSES}, " \
                f"{dtype})"
        if on_case:
            on_case(where)
        model = model_cls(_IN, _CLASSES, _hyper(model_cls, heads=heads))
        initial = {k: v.astype(np.float64) for k, v in model.init_params(3).items()}
        x = rng.uniform(-1, 1, (graph.num_nodes, _IN))
        r = rng.uniform(-1, 1, (graph.num_nodes, _CLASSES))
        row.cases += 1
        # the system: the shared model on its kernels, in its dtype
        params = {k: F.parameter(v) for k, v in initial.items()}
        problems = []
        try:
            with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or torch.get_num_threads()):
                logits = model.forward(F, params, BoundGraph(graph, glue), F.tensor(x), False)
                grads = torch.autograd.grad((logits * F.tensor(r)).sum(), list(params.values()))
        except UnavailableError as err:  # an operator the system lacks: nothing to judge (end-to-end says the same)
            row.status, row.reason = "skipped", str(err).split(";")[0]
            row.cases -= 1
            break
        except Exception as err:  # noqa: BLE001 - a failing system is a finding
            text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
            problems.append(f"{row.operator} on {where}: raised {type(err).__name__}: {text}")
        else:
            ref_params = {k: torch.from_numpy(v).requires_grad_(True) for k, v in initial.items()}
            ref_logits = dense_forward(model, graph, ref_params, torch.from_numpy(x))
            ref_grads = torch.autograd.grad((ref_logits * torch.from_numpy(r)).sum(), list(ref_params.values()))
            pairs = [("logits", logits, ref_logits)] + [(f"grad {k}", g, rg) for k, g, rg in
                                                         zip(params, grads, ref_grads)]
            for quantity, got, want in pairs:
                bad = _mismatch(got, want, tol)
                if bad:
                    problems.append(f"{row.operator} {quantity} on {where}: {bad}")
            if graph_name == "undirected" and check.natives:
                problems += _native_problems(row.operator, model, graph, initial, x, ref_logits, where)
        _record(row, graph_name, problems)
    row.seconds = time.perf_counter() - begin
    if row.status == "passed":
        natives = _natives_of(model_cls) if check.natives else []
        row.detail = (f"logits and {len(initial)} parameter gradients vs dense float64, undirected and directed"
                      + (f"; dense logits vs {' and '.join(natives)} on undirected" if natives else ""))
    return row


def _check_forms(row: CaseResult, system: str, check: "_Check", *, dtype: str, device: str, threads: int | None,
                 guard: bool, on_case) -> CaseResult:
    """A model's normalisation forms against its first (GCN: node form against edge form), all on ``system``
    (Note [model check])."""
    import torch

    from gnnbench.errors import UnavailableError
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    begin = time.perf_counter()
    model_cls = check.model
    glue = load_system(system, "torch", device)
    first, *others = forms = model_cls.normalisations
    F = get_frontend("torch", device, dtype)
    tol = MODEL_TOLERANCES[dtype]
    rng = np.random.default_rng(13)
    for graph_name, base in model_graphs(np.int32).items():
        graph = base.with_self_loops() if model_cls.self_loops else base
        where = f"'{graph_name}' (int32, N={graph.num_nodes}, E={graph.num_edges}, F={_IN}->{_HIDDEN}->{_CLASSES}, " \
                f"{dtype})"
        if on_case:
            on_case(where)
        x = rng.uniform(-1, 1, (graph.num_nodes, _IN))
        r = rng.uniform(-1, 1, (graph.num_nodes, _CLASSES))
        initial = None
        outputs = {}
        row.cases += 1
        try:
            for form in forms:
                model = model_cls(_IN, _CLASSES, _hyper(model_cls, normalisation=form))
                initial = initial or {k: v.astype(np.float64) for k, v in model.init_params(3).items()}
                params = {k: F.parameter(v) for k, v in initial.items()}
                with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or torch.get_num_threads()):
                    logits = model.forward(F, params, BoundGraph(graph, glue), F.tensor(x), False)
                    grads = torch.autograd.grad((logits * F.tensor(r)).sum(), list(params.values()))
                outputs[form] = [("logits", logits)] + [(f"grad {k}", g) for k, g in zip(params, grads)]
        except UnavailableError as err:  # e.g. no weighted spmm: the edge form cannot run, nothing to compare
            row.status, row.reason = "skipped", str(err).split(";")[0]
            row.cases -= 1
            break
        except Exception as err:  # noqa: BLE001 - a failing system is a finding
            text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
            problems = [f"{row.operator} on {where}: raised {type(err).__name__}: {text}"]
        else:
            problems = []
            for other in others:
                for (quantity, got), (_, want) in zip(outputs[first], outputs[other]):
                    # each form may be off the exact value by the tolerance, so two correct forms by twice it
                    bad = _mismatch(got, want, tol, times=2)
                    if bad:
                        problems.append(f"{row.operator} {quantity}, {first} form vs {other} form, on {where}: {bad}")
        _record(row, graph_name, problems)
    row.seconds = time.perf_counter() - begin
    if row.status == "passed":
        row.detail = f"{' vs '.join(f'{form} form' for form in forms)}: logits and parameter gradients, undirected " \
                     f"and directed"
    return row


def _natives_of(model_cls) -> list[str]:
    """The native baselines installed here whose layers ``model_cls`` declares."""
    import importlib.util

    from gnnbench.peers import declares
    from gnnbench.runtime.registry import NATIVE_SYSTEMS

    return [n for n, entry in NATIVE_SYSTEMS.items()
            if all(importlib.util.find_spec(p) for p in entry["requires"]) and declares(n, model_cls)]


def _native_problems(label, model, graph, initial, x, ref_logits, where) -> list[str]:
    """The dense formulation's logits against the PyG and DGL layers the model declares (float64), where installed.

    Undirected graph only: PyG's ``gcn_norm`` uses the in-degree on both ends, so on a directed graph
    its GCN is a different function by design (ours and DGL's ``norm='both'`` use in- and out-degree).
    Parameter gradients are compared against the dense formulation only (the natives' parameters are
    laid out differently).
    """
    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.peers import build_native

    F = get_frontend("torch", "cpu", "float64")
    problems = []
    want = ref_logits.detach().numpy()
    for native in _natives_of(type(model)):
        try:
            _, forward = build_native(native, model, graph, initial, F, F.tensor(x))
            with torch.no_grad():
                got = forward(False).detach().numpy()
        except Exception as err:  # noqa: BLE001 - a peer that cannot build the layer is reported
            problems.append(f"{label} logits on {where} vs {native}: raised {type(err).__name__}: {err}")
            continue
        tol = MODEL_TOLERANCES["float64"]  # the natives run in float64; atol scales with the logits
        scaled = Tolerance(tol.rtol, tol.atol * max(1.0, float(np.abs(want).max(initial=0.0))))
        bad = compare(got, want, scaled)
        if bad:
            problems.append(f"{label} dense formulation vs {native} logits on {where}: {bad}")
    return problems


def _mismatch(got: Any, want: Any, tol: Tolerance, times: float = 1.0) -> str | None:
    """What is wrong with tensor ``got`` against ``want`` within ``times`` the tolerance (absolute part scaled
    by ``want``'s magnitude), or None."""
    want = want.detach().cpu().numpy()
    scaled = Tolerance(times * tol.rtol, times * tol.atol * max(1.0, float(np.abs(want).max(initial=0.0))))
    return compare(got.detach().cpu().numpy(), want, scaled)


def _record(row: CaseResult, graph_name: str, problems: list[str]) -> None:
    """Marks ``row`` failed on ``graph_name`` with its first three problems, if there are any."""
    if problems:
        row.status, row.failed_cases = "failed", row.failed_cases + 1
        row.failed_graphs.append(graph_name)
        row.failures.extend(problems[:3])


# ----------------------------------------------------------------- the relational models
#: the typed graph's feature width and R-GAT's width per head
_TYPED_WIDTH, _PER_HEAD = 9, 6


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


def check_typed_model(row, system: str, check: "_Check", *, dtype: str, device: str, threads: int | None,
                      guard: bool, on_case=None):
    """Note [typed model check] on ``system``; fills and returns ``row`` (a ``CaseResult``)."""
    import torch

    from gnnbench.errors import UnavailableError
    from gnnbench.frameworks import get_frontend
    from gnnbench.models.typed import Schema
    from gnnbench.runtime.hetero import BoundHeteroGraph
    from gnnbench.runtime.registry import load_system

    begin = time.perf_counter()
    model_cls, heads, bases = check.model, check.heads, check.bases
    glue = load_system(system, "torch", device)
    F = get_frontend("torch", device, dtype)
    graph, target = typed_model_graph()
    widths = {t: _TYPED_WIDTH for t in graph.node_types}
    model = model_cls(Schema(widths, graph.relations, target), _CLASSES, typed_hyper(model_cls, heads, bases))
    where = (f"'typed' (int32, {len(graph.node_types)} node types, {len(graph.relations)} relations, "
             f"E={graph.num_edges}, F={_TYPED_WIDTH}->{model.hyper.hidden}->{_CLASSES}, {dtype})")
    if on_case:
        on_case(where)
    rng = np.random.default_rng(17)
    initial = {k: v.astype(np.float64) for k, v in model.init_params(3).items()}
    x = {t: rng.uniform(-1, 1, (n, _TYPED_WIDTH)) for t, n in graph.node_counts.items()}
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
        problems += typed_natives_problems(row.operator, model, graph, initial, x, ref_logits, where)
    _record(row, "typed", problems)
    row.seconds = time.perf_counter() - begin
    if row.status == "passed":
        natives = _natives_of(model_cls)
        row.detail = (f"target logits and {len(initial)} parameter gradients vs the dense float64 equation on a "
                      f"typed graph of {len(graph.relations)} relations"
                      + (f"; dense logits vs {' and '.join(natives)}" if natives else ""))
    return row


def typed_natives_problems(label, model, graph, initial, x, ref_logits, where) -> list[str]:
    """The dense equation's target logits against each installed library's declared layers, float64."""
    import importlib.util

    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.registry import NATIVE_SYSTEMS

    F = get_frontend("torch", "cpu", "float64")
    want = ref_logits.detach().numpy()
    problems = []
    for system, entry in NATIVE_SYSTEMS.items():
        module = importlib.import_module(entry["module"])
        if not all(importlib.util.find_spec(p) for p in entry["requires"]) or \
                getattr(model, module.COUNTERPART, None) is None:
            continue
        try:
            from gnnbench.peers.typed import build_typed

            _, forward = build_typed(module.COUNTERPART, module.layer_library(), model, graph, initial, F,
                                     {t: F.tensor(v) for t, v in x.items()})
            with torch.no_grad():
                got = forward(False).detach().numpy()
        except Exception as err:  # noqa: BLE001 - a peer that cannot build the layer is reported
            problems.append(f"{label} logits on {where} vs {system}: raised {type(err).__name__}: {err}")
            continue
        tol = MODEL_TOLERANCES["float64"]
        bad = compare(got, want, Tolerance(tol.rtol, tol.atol * max(1.0, float(np.abs(want).max(initial=0.0)))))
        if bad:
            problems.append(f"{label} dense equation vs {system} logits on {where}: {bad}")
    return problems
