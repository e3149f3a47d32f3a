"""The operator conformance suite: every operator a system implements against ``reference``.

Each :class:`OpCase` (``spmm(reduce=mean, weight)``, ``sddmm(op=dot)``, ...) runs
on every adversarial graph of :func:`adversarial_graphs`, with int32 and int64
indices, one and four heads and every width of the profile, forward and every
gradient, through the framework's frontend and autodiff exactly as a model
calls it (torch autograd, or a TensorFlow ``GradientTape``). The system's
outputs and gradients are compared with ``reference``'s (torch, float64) on
identical inputs, elementwise::

    |system - reference| <= atol + rtol * |reference|

with the tolerances of :data:`TOLERANCES`, the one place they are stated.

Note [exact inputs]
    Inputs lie on a dyadic grid (multiples of ``2**-10`` in ``[-1, 1]``; edge
    weights ``±(1 + k/128)``), so products are exact in float32 and float64
    and sums are exact in float64: a correct float64 kernel agrees with the
    oracle to rounding of the few inexact steps (mean, exp), whatever its
    summation order, and tolerances can be tight. For ``spmm(reduce=max)``
    each feature column of ``x`` is a permutation of distinct values, so the
    winner of a row is never a near-tie that float32 rounding could flip (an
    exact tie breaks to the first edge, as the kernel set specifies).

Note [guarded runtime]
    With ``guard=True`` every kernel call of the system goes through
    :func:`guarded_run` around its framework runtime's ``run``: each output,
    save and workspace is allocated inside a larger buffer whose head and
    tail hold a canary bit pattern (a NaN with a payload, or an unlikely
    integer), the kernel gets the exact-sized inner view, and after the call
    the canaries must be intact (else it wrote past its output), outputs
    without ``= 0`` must hold no fill value (else it left elements unwritten)
    and inputs must be unchanged (else it wrote into an input; bit for bit,
    or by checksum above 2**24 elements). The results are then copied into
    the runtime's own outputs. A violation raises :class:`KernelFault`,
    which the suite reports like any other exception. The normal runtime
    path is untouched: the guard swaps the ``_run`` global of the system's
    generated glue modules for the duration of a ``with guarded(system):``
    block (a hook in the runtimes would make that cleaner).
"""
from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Iterator

import numpy as np
import torch

from gnnbench.check.bipartite import FAST_SAMPLED_BLOCKS, SAMPLED_BLOCKS, is_block
from gnnbench.core.oracle import REFERENCE
from gnnbench.frameworks import torch_runtime
from gnnbench.frameworks.composed import COMPOSITIONS
from gnnbench.runtime.graph import Graph

__all__ = ["Tolerance", "TOLERANCES", "E2E_TOLERANCE", "PROFILES", "OpCase", "OP_CASES", "INDEX_RANGES",
           "declared_cases", "differentiable", "gradient_inputs", "torch_leaves", "CaseResult",
           "KernelFault", "adversarial_graphs", "compare", "guarded", "guarded_run", "guard_supported", "run_suite",
           "system_float_dtype"]


# ----------------------------------------------------------------- tolerances
@dataclass(frozen=True)
class Tolerance:
    """Elementwise ``|a - e| <= atol + rtol * scale``, ``scale`` as Note [cancelling sums] says."""

    rtol: float
    atol: float
    #: the most terms any reduction it judges has (set by :meth:`for_rows`; Note [cancelling sums])
    row_length: int = 1

    def __str__(self) -> str:
        return f"rtol {self.rtol:g}, atol {self.atol:g}"

    def for_rows(self, longest_row: int) -> "Tolerance":
        """This tolerance widened for reductions over rows of ``longest_row`` terms (Note [row-length tolerance])."""
        scale = max(1.0, math.sqrt(longest_row / ROW_LENGTH_CALIBRATED))
        return Tolerance(self.rtol * scale, self.atol * scale, max(1, longest_row))

    def bound(self, expected: np.ndarray, magnitude: np.ndarray | None = None) -> np.ndarray:
        """The largest error allowed at each element of ``expected``; ``magnitude`` is the oracle's
        sum of |terms| of each element (Note [cancelling sums]), or ``None`` to judge by ``|expected|``."""
        scale = np.where(np.isfinite(expected), np.abs(expected), 0.0)
        if magnitude is not None:
            typical = np.where(np.isfinite(magnitude), np.abs(magnitude), 0.0) / math.sqrt(self.row_length)
            scale = np.maximum(scale, typical)
        return self.atol + self.rtol * scale


#: Operator tolerances by the system's float dtype (Note [exact inputs] says why float64 is tight),
#: for rows of up to :data:`ROW_LENGTH_CALIBRATED` terms; longer rows widen them (Note [row-length tolerance]).
TOLERANCES = {"float64": Tolerance(rtol=1e-9, atol=1e-11), "float32": Tolerance(rtol=1e-4, atol=1e-5)}

#: Note [row-length tolerance]
#:     The oracle is float64 (``reference`` under the float64 frontend), so a float32 system is judged
#:     against a computation at least 2**29 times more precise than itself. Its rounding error on a
#:     reduction of ``L`` terms grows with ``L``: the probabilistic bound for recursive summation is
#:     ``~ sqrt(L) * u * sum|terms|`` (Higham & Mary, SIAM J. Sci. Comput. 2019). The base tolerances
#:     hold for rows of up to ``L0 = 256`` terms; for a case whose longest row, in either orientation
#:     (forward rows, and transposed rows for gradients), has ``L`` terms, both ``rtol`` and ``atol``
#:     are multiplied by ``max(1, sqrt(L / L0))``: 1 up to 256 edges, 14 for the 50,000-edge hub.
ROW_LENGTH_CALIBRATED = 256

#: Note [cancelling sums]
#:     A reduction whose terms cancel ends far smaller than its terms: on ``hub_50k`` node 1's
#:     gradient in spmm(max, weight) sums 50,000 terms averaging 0.75 in size to -0.28. Its rounding
#:     error follows the partial sums, not the result, so a bound relative to ``|e|`` (0.00053 there)
#:     failed every correct float32 kernel, reference's own included: they were 0.0016 off, the one
#:     row dgl, pyg, mkl, dgnn and isplib failed in the full suite. So each element is judged relative
#:     to ``max(|e|, S / sqrt(L))``, where ``S`` is its sum of |terms| (the float64 oracle run again on
#:     the absolute values of every input and of ``grad_out``: exact for sums, means and their
#:     gradients) and ``L`` the graph's longest row. ``S / sqrt(L)`` is the size a sum of ``L`` terms
#:     of random sign has, and a lower bound of ``sqrt(sum of squared terms)``. With the widening
#:     above, float32's expected error there, ``u S / sqrt(2)`` = 0.0016 (``u = 2**-24``), is about
#:     150 times under the bound (0.23), at any ``L``, while leaving out one term of median size is
#:     still caught (tests/check/test_conformance.py). One missing term of average size becomes
#:     invisible to the float32 tolerance only above about 160,000 terms a row. For maxima and softmax
#:     the pass on |inputs| is not an exact sum of |terms|, only a scale of the same order.


@dataclass(frozen=True)
class E2ETolerance:
    """End-to-end parity: first-epoch loss (relative) and final test accuracy (absolute)."""

    first_loss_rtol: float
    test_accuracy_atol: float


#: End-to-end tolerances by training dtype: the first loss is one forward pass (tight); accuracy
#: after training may drift by a node or two through rounding (float32 more than float64).
E2E_TOLERANCE = {"float64": E2ETolerance(first_loss_rtol=1e-9, test_accuracy_atol=0.02),
                 "float32": E2ETolerance(first_loss_rtol=1e-4, test_accuracy_atol=0.05)}

#: the sampler's blocks the fast profiles leave out (Note [blocks as training samples them])
_LEFT_OUT_FAST = tuple(name for name in SAMPLED_BLOCKS if name not in FAST_SAMPLED_BLOCKS)

#: Suite profiles: ``full`` is what ``gnnbench verify`` runs, ``fast`` the CI subset.
#: Widths and head counts include values off every vector width (3, 17, 33; 3 heads).
PROFILES = {
    "full": {"widths": (1, 3, 17, 33, 64, 130), "heads": (1, 3, 4), "index_dtypes": ("int32", "int64")},
    # the fast suite runs the sampled blocks (gnnbench.check.bipartite) at one shape: their cases are about
    # rows and columns, not widths, and every width and head count would add half again to its time
    # (and only FAST_SAMPLED_BLOCKS of the sampler's blocks, Note [blocks as training samples them])
    "fast": {"widths": (1, 17, 33), "heads": (1, 3), "index_dtypes": ("int32", "int64"),
             "blocks": {"widths": (17,), "heads": (3,)}, "left_out": _LEFT_OUT_FAST},
    # the fast suite's second float type: every check once per graph (Note [what runs] in gnnbench.check.dims)
    "sampled": {"widths": (17,), "heads": (3,), "index_dtypes": ("int32",), "left_out": _LEFT_OUT_FAST},
}

#: Graphs too large to run at every shape run at these only, and say so in the report.
REDUCED_SHAPES = {"hub_50k": {"widths": (17,), "heads": (1,),
                              "reason": "'hub_50k' (100,001 edges, in- and out-degree 50,001) runs at F=17, H=1 "
                                        "only: every width and head count would multiply the suite's time "
                                        "by about ten"}}

#: Graphs the NaN/inf policy cases run on (Note [NaN policy] in gnnbench.api): long rows, so that a
#: NaN lands at the first and at later positions of some row.
SPECIAL_VALUE_GRAPHS = ("duplicates", "hub", "multi_loops")


# ----------------------------------------------------------------- graphs
def adversarial_graphs(index_dtype: Any = np.int64) -> dict[str, Graph]:
    """Small graphs that each isolate one hazard, in the order failures are reported.

    ``no_edges``: every row empty. ``isolated``: four nodes touch no edge.
    ``self_loops``: every node has a loop (the only graphs with loops are
    this one, ``multi_loops`` and ``single_node``, so a kernel that drops the
    diagonal fails exactly there). ``duplicates``: multi-edges. ``hub``: node
    0 receives about 60 % of the edges and node 1 sends about a quarter, so
    both orientations have one long row. ``single_node``: one node and its
    loop. ``multi_loops``: node 0 has four parallel self loops, and rows 1
    and 2 consist only of copies of one edge. ``single_node_loops``: one node
    and three parallel loops. ``hub_50k``: node 0 receives
    and node 1 sends 50,001 edges (float32 accumulation shows there).
    """
    rng = np.random.default_rng(2024)

    def build(src, dst, n):
        return Graph.from_edges(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, index_dtype)

    def no_loops(src, dst):
        keep = src != dst
        return src[keep], dst[keep]

    src, dst = no_loops(rng.integers(0, 12, 48), rng.integers(0, 12, 48))   # nodes 12..15 touch no edge
    loops = np.arange(16)
    hub_src, hub_dst = no_loops(np.r_[rng.integers(1, 48, 300), np.full(120, 1), rng.integers(0, 48, 80)],
                                np.r_[np.zeros(300, np.int64), rng.integers(0, 48, 120), rng.integers(0, 48, 80)])
    return {
        "no_edges": build([], [], 6),
        "isolated": build(src, dst, 16),
        "self_loops": build(np.r_[src, loops], np.r_[dst, loops], 16),
        "duplicates": build(np.r_[src, src[:15], src[:5]], np.r_[dst, dst[:15], dst[:5]], 16),
        "hub": build(hub_src, hub_dst, 48),
        "single_node": build([0], [0], 1),
        "multi_loops": build(np.r_[0, 0, 0, 0, 3, 3, 3, 4, 4, src[:10] % 8],
                             np.r_[0, 0, 0, 0, 1, 1, 1, 2, 2, 5 + dst[:10] % 3], 8),
        "single_node_loops": build([0, 0, 0], [0, 0, 0], 1),
        "hub_50k": _hub_50k(build),
    }


def _hub_50k(build):
    """Node 0 receives from, and node 1 sends to, each of nodes 2 .. 50,001, plus the edge 1 -> 0."""
    others = np.arange(2, 50_002)
    return build(np.r_[others, np.ones(len(others), np.int64), 1], np.r_[np.zeros(len(others), np.int64), others, 0],
                 50_002)


def longest_row(graph: Graph) -> int:
    """The most edges any row has, in either orientation (what a reduction's length is bounded by)."""
    if graph.num_edges == 0:
        return 0
    return int(max(graph.in_degree.max(), graph.out_degree.max()))


# ----------------------------------------------------------------- operator cases
#: Note [cases from the declaration]
#:     The suite knows no operator by name: each :class:`OpCase` reads its operator's declaration in
#:     ``gnnbench/api.gnn`` (:func:`declared_cases`). Its inputs are drawn in declaration order at the
#:     declared shapes, with ``N``, ``S`` and ``E`` from the graph, ``H`` the heads, ``D`` the width, a
#:     symbol that an index input ranges over (``etype indexes R``) the case's own value (every operator
#:     with one is checked at :data:`INDEX_RANGES`: one, a few and many relations), and any other symbol
#:     (``K``) the width plus :data:`OTHER_WIDTH_OFFSET`, so a kernel that confuses two widths fails.
#:     An index input is drawn uniformly over its range; an optional float input (an edge weight) gets
#:     the weights of Note [exact inputs] and is passed in the case's ``weight`` variant only; any other
#:     float input is the grid, scaled by :data:`_SCALED` where its name says it is a score. A case with
#:     an attribute value of :data:`_DISTINCT_FOR` (``reduce=max``) gets distinct columns in its first
#:     input. The call is the frontend's method of the operator's name with the attributes as keywords
#:     (Note [declared dispatch] in gnnbench.frameworks.composed), and an input's index space (edge,
#:     source, destination, or none) is its first declared dimension. So an operator costs its
#:     declaration, the oracle's kernel and its math; tests/check/test_declared_cases.py declares a toy
#:     operator in a test and gets its cases.

#: the values a symbol that an index input ranges over takes, one case each (Note [cases from the declaration])
INDEX_RANGES = (1, 3, 64)
#: a declared symbol other than the graph's, H, D and an index range is the width plus this
OTHER_WIDTH_OFFSET = 2
#: float inputs scaled on the grid, by name: softmax and attention scores (Note [exact inputs])
_SCALED = {"scores": 4.0, "score_src": 2.0, "score_dst": 2.0}
#: attribute values whose case gets distinct columns in its first input (a maximum's winner is no near-tie)
_DISTINCT_FOR = (("reduce", "max"),)
#: the first declared dimension of an input -> its index space
_SPACES = {"E": "edge", "S": "src", "N": "dst"}


def _operator_declaration(api, operator: str, attrs: dict[str, Any]):
    """The declaration of ``operator`` in ``api`` that serves ``attrs`` (an operator declared once per value of
    an attribute, like ``sddmm(op=dot)``, has one declaration per value)."""
    for decl in api.operator(operator):
        if all(attrs.get(name) == value for name, value in decl.pinned):
            return decl
    raise KeyError(f"{operator}({attrs})")


def gradient_inputs(operator: str, api=None) -> tuple[str, ...]:
    """The inputs of ``operator`` that have a gradient: those its standard kernels' backward rules give
    (``typed_aggregate``: ``x`` and ``weight``, not its constant ``norm``), or every float input of an operator no
    standard kernel implements (``gat_aggregate``, differentiated through its composition)."""
    from gnnbench.dsl.spec import FLOAT_DTYPES
    from gnnbench.dsl.system_api import system_api

    spec = api or system_api()
    kernels = [k for k in spec.kernels if k.implements == operator]
    if kernels:
        return tuple(dict.fromkeys(t for k in kernels for g in k.grads for t in g.targets))
    return tuple(dict.fromkeys(p.name for d in spec.operator(operator) for p in d.inputs if p.dtype in FLOAT_DTYPES))


def _index_ranges(decl) -> tuple[str, ...]:
    """The symbols an index input of ``decl`` ranges over that the graph does not give (``R`` of ``etype``)."""
    return tuple(dict.fromkeys(p.indexes for p in decl.inputs if p.indexes and p.indexes not in _SPACES))


@dataclass(frozen=True)
class OpCase:
    """One operator variant: name, attributes, whether an edge weight is passed, and the value of each
    symbol an index input ranges over (``R=64``: Note [cases from the declaration])."""

    operator: str
    attrs: tuple[tuple[str, Any], ...] = ()
    weighted: bool = False
    #: "" (the grid of Note [exact inputs]), "large scores", "extreme scores" or "NaN/inf" (Note [hard values])
    values: str = ""
    ranges: tuple[tuple[str, int], ...] = ()
    #: the parsed system API the operator is declared in (None: gnnbench/api.gnn)
    api: Any = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.attrs if k != "negative_slope"] + (["weight"] if self.weighted else [])
        parts += [f"{k}={v}" for k, v in self.ranges]
        parts += [self.values] if self.values else []
        return f"{self.operator}({', '.join(parts)})" if parts else self.operator

    @property
    def declaration(self):
        from gnnbench.dsl.system_api import system_api

        return _operator_declaration(self.api or system_api(), self.operator, dict(self.attrs))

    @property
    def uses_width(self) -> bool:
        return any("D" in p.symbols for p in self.declaration.inputs)

    def space(self, name: str) -> str | None:
        """The index space of input ``name``: ``edge``, ``src``, ``dst``, or None (a dense input like a weight)."""
        p = next(p for p in self.declaration.inputs if p.name == name)
        first = p.shape[0] if p.shape else ()
        return _SPACES.get(first[0]) if len(first) == 1 and isinstance(first[0], str) else None

    @property
    def gradients(self) -> tuple[str, ...]:
        """The inputs the case takes gradients of (:func:`gradient_inputs`)."""
        return gradient_inputs(self.operator, self.api)

    def inputs(self, graph: Graph, heads: int, width: int, rng: np.random.Generator,
               dtype: str = "float64") -> dict[str, np.ndarray]:
        """Float64 inputs on the grid of Note [exact inputs] (or Note [hard values]), in call order; index
        inputs keep their declared integer type."""
        arrays = self._grid_inputs(graph, heads, width, rng)
        if self.values in ("large scores", "extreme scores"):
            big = self.values == "large scores"
            for name in ("scores", "score_src", "score_dst"):
                if arrays.get(name) is not None:
                    share = 2 if name == "scores" else 1   # gat_aggregate adds the two halves
                    arrays[name] = (LARGE_SCORE_OFFSET * share / 2 + arrays[name]) if big \
                        else arrays[name] * EXTREME_SCORE[dtype] / share
        elif self.values == "NaN/inf":
            first = next((k for k, v in arrays.items() if v is not None and v.size and v.dtype.kind == "f"), None)
            if first is not None:
                arrays[first] = np.ascontiguousarray(arrays[first])
                flat = arrays[first].reshape(-1)   # a view, so the writes land
                picks = rng.choice(flat.size, size=min(3, flat.size), replace=False)
                for pick, value in zip(picks, (np.nan, np.inf, -np.inf)):
                    flat[pick] = value
        return arrays

    def symbols(self, graph: Graph, heads: int, width: int) -> dict[str, int]:
        """Every shape symbol's value in a case on ``graph`` (Note [cases from the declaration])."""
        env = {"N": graph.num_dst, "S": graph.num_src, "E": graph.num_edges, "H": heads, "D": width,
               **dict(self.ranges)}
        for p in self.declaration.inputs:
            for sym in p.symbols:
                env.setdefault(sym, width + OTHER_WIDTH_OFFSET)
        return env

    def _grid_inputs(self, graph: Graph, heads: int, width: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        env = self.symbols(graph, heads, width)   # s > n on a block (gnnbench.check.bipartite)
        distinct = any(a in self.attrs for a in _DISTINCT_FOR)
        arrays: dict[str, np.ndarray | None] = {}
        for p in self.declaration.inputs:
            shape = tuple(math.prod(f if isinstance(f, int) else env[f] for f in dim) for dim in p.shape)
            if p.optional and not self.weighted:
                arrays[p.name] = None
            elif p.indexes:
                arrays[p.name] = rng.integers(0, env[p.indexes], size=shape).astype(
                    np.int32 if p.dtype == "i32" else np.int64)
            elif p.optional:
                arrays[p.name] = _weights(rng, shape)
            elif distinct and not arrays and len(shape) == 3:
                arrays[p.name] = _distinct_columns(rng, *shape)
            else:
                arrays[p.name] = _SCALED.get(p.name, 1.0) * _grid(rng, shape)
        return arrays

    def call(self, F, bound, tensors: list):
        """The operator through frontend ``F``, as a model calls it (Note [declared dispatch])."""
        attrs = dict(self.attrs)
        if self.api is not None:  # an operator of another API (a test's): the frontend's generic dispatch
            return F.operator(self.operator, bound, *tensors, **attrs)
        return getattr(F, self.operator)(bound, *tensors, **attrs)


#: the hard-value variants (Note [hard values]) of the operators that have inputs they stress: (label, values)
_HARD_VALUES = (
    *((label, values) for label in ("edge_softmax", "gat_aggregate") for values in ("large scores", "extreme scores")),
    *((label, "NaN/inf") for label in ("spmm(reduce=sum)", "spmm(reduce=mean)", "spmm(reduce=max)",
                                       "spmm(reduce=max, weight)", "sddmm(op=dot)", "sddmm(op=add)", "edge_softmax",
                                       "gat_aggregate")),
)
#: free numeric attributes' values in the cases
_FREE_ATTRIBUTES = {"float": 0.2, "int": 1}


def declared_cases(api=None) -> tuple[OpCase, ...]:
    """Every operator variant of ``api`` (default: ``gnnbench/api.gnn``): each combination of enumerated
    attribute values, with and without an optional input, at each value of :data:`INDEX_RANGES` for a symbol an
    index input ranges over, then the hard-value variants of :data:`_HARD_VALUES`
    (Note [cases from the declaration])."""
    from gnnbench.dsl.system_api import system_api

    spec = api or system_api()
    plain: list[OpCase] = []
    for name in dict.fromkeys(o.name for o in spec.operators):
        attrs = spec.operator_attrs(name)
        combos: list[tuple] = [()]
        for attr, values in attrs.items():
            combos = [c + ((attr, v),) for c in combos
                      for v in (values if isinstance(values, tuple) else (_FREE_ATTRIBUTES[values],))]
        for combo in combos:
            decl = _operator_declaration(spec, name, dict(combo))
            weights = (False, True) if any(p.optional for p in decl.inputs) else (False,)
            ranges = [()]
            for sym in _index_ranges(decl):
                ranges = [r + ((sym, v),) for r in ranges for v in INDEX_RANGES]
            plain += [OpCase(name, combo, w, ranges=r, api=api) for w in weights for r in ranges]
    by_label = {case.label: case for case in plain}
    hard = [replace(by_label[label], values=values) for label, values in _HARD_VALUES if label in by_label]
    return (*plain, *hard)


def __getattr__(name: str) -> Any:
    """:data:`OP_CASES`, every operator variant of ``gnnbench/api.gnn`` (:func:`declared_cases`), derived on first
    use (parsing the API costs about a third of a second)."""
    if name != "OP_CASES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if "OP_CASES" not in globals():
        globals()["OP_CASES"] = declared_cases()
    return globals()["OP_CASES"]


#: Note [hard values]
#:     ``large scores`` shifts every softmax/attention score by 4096: exp(4096) overflows float32 and
#:     float64 alike, so a kernel that does not subtract the row maximum returns inf or NaN, while the
#:     scores stay on an exact grid and the softmax stays non-trivial. ``extreme scores`` scales them
#:     up to the dtype's safe range (2**100 for float32, 2**1000 for float64: sums of two stay finite),
#:     where rows become one-hot or split evenly between exact ties. ``NaN/inf`` puts a NaN, a +inf and
#:     a -inf into the first input at random elements; the expected output and gradients are the
#:     float64 oracle's, which follows Note [NaN policy] in :mod:`gnnbench.api`, and the comparison
#:     requires NaN exactly where the oracle has NaN and the same infinity where it has one.
LARGE_SCORE_OFFSET = 4096.0
EXTREME_SCORE = {"float32": 2.0**100, "float64": 2.0**1000}


def _grid(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(-1024, 1025, size=shape).astype(np.float64) / 1024.0


def _weights(rng: np.random.Generator, shape) -> np.ndarray:
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return sign * (1.0 + rng.integers(0, 128, size=shape) / 128.0)


def _distinct_columns(rng: np.random.Generator, n: int, heads: int, width: int) -> np.ndarray:
    scale = 2.0 ** max(1, math.ceil(math.log2(max(n, 2))))
    ranks = np.argsort(rng.random((heads * width, n)), axis=1).T.reshape(n, heads, width)
    return (ranks - n / 2 + 0.5) / scale


# ----------------------------------------------------------------- comparison
def compare(actual: np.ndarray, expected: np.ndarray, tol: Tolerance, magnitude: np.ndarray | None = None) -> str | None:
    """``None`` when within ``tol``, else ``'max abs err A, max rel err R at [i, j] (got g, expected e)'``.

    The allowance is :meth:`Tolerance.bound` (``magnitude``: Note [cancelling sums]). Relative error is
    ``|a - e| / max(|e|, atol)``; the worst element is the one furthest outside its bound; NaN or
    infinity counts as infinitely wrong.
    """
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    if actual.size == 0:
        return None
    a = actual.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - expected)
        diff = np.where(np.isfinite(diff), diff, np.inf)
        # Note [NaN policy]: NaN where the oracle has NaN, the same infinity where it has one
        diff = np.where(np.isnan(expected) & np.isnan(a), 0.0, diff)
        diff = np.where(np.isinf(expected) & (a == expected), 0.0, diff)
        bound = tol.bound(expected, magnitude)
        if np.all(diff <= bound):
            return None
        ratio = diff / bound
        rel = np.nan_to_num(diff / np.maximum(np.abs(expected), tol.atol), nan=np.inf)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    where = "[" + ", ".join(str(int(i)) for i in worst) + "]"
    return (f"max abs err {diff.max():.3g}, max rel err {rel.max():.3g} at {where} "
            f"(got {a[worst]:.6g}, expected {expected[worst]:.6g}, allowed {bound[worst]:.3g})")


# ----------------------------------------------------------------- guarded runtime
class KernelFault(RuntimeError):
    """A kernel broke the producer-only contract under the guard (Note [guarded runtime])."""


_BITS = {torch.float32: torch.int32, torch.float64: torch.int64, torch.int32: torch.int32, torch.int64: torch.int64}
#: bit pattern of unwritten memory: NaNs with a payload for floats, unlikely negatives for ints
_FILL = {torch.float32: 0x7FC0DEAD, torch.float64: 0x7FF8DEADBEEFDEAD, torch.int32: -0x5EADBEEF,
         torch.int64: -0x5EADBEEF5EADBEEF}


def _guard_size(shape: tuple[int, ...]) -> int:
    """Canary elements on each side: at least 64, at least one row, at most 2**16."""
    row = math.prod(shape[1:]) if len(shape) > 1 else 1
    return min(max(64, row), 1 << 16)


def guarded_run(kernel, view, inputs, attrs, arrays: str = "numpy", runtime=None):
    """``runtime(kernel, ...)`` with the kernel wrapped by the checks of Note [guarded runtime].

    The framework runtime (default: ``torch_runtime.run``) checks the inputs
    and allocates as usual; the wrapper hands the kernel canaried buffers
    instead of the runtime's outputs, checks them after the call and copies
    the results into the runtime's outputs.
    """
    return (runtime or torch_runtime.run)(replace(kernel, fn=_checked(kernel)), view, inputs, attrs, arrays)


def _as_torch(a) -> torch.Tensor:
    """A torch view of what a kernel receives (torch tensor or NumPy array, possibly read-only)."""
    if isinstance(a, torch.Tensor):
        return a
    a = np.asarray(a)
    return torch.from_numpy(a if a.flags.writeable else a.view(np.ndarray).copy())


_FINGERPRINT_ABOVE = 1 << 24  # inputs larger than this are compared by a checksum, not a copy


def _fingerprint(a):
    t = _as_torch(a)
    bits = t.view(_BITS.get(t.dtype, t.dtype))
    return int(bits.sum()) if t.numel() > _FINGERPRINT_ABOVE else bits.clone()


def _same(old, new) -> bool:
    now = _fingerprint(new)
    return old == now if isinstance(old, int) else torch.equal(old, now)


def _checked(kernel):
    decls = (*kernel.outputs, *kernel.saves, *kernel.workspaces)

    def call(view, *args, **kwargs):
        ins, given = args[:len(kernel.inputs)], args[len(kernel.inputs):]
        before = [None if a is None else _fingerprint(a) for a in ins]
        buffers, views = [], []
        for decl, out in zip(decls, given):
            t = _as_torch(out)
            n, pad = t.numel(), _guard_size(tuple(t.shape))
            buf = torch.empty(n + 2 * pad, dtype=t.dtype, device=t.device)
            buf.view(_BITS[t.dtype]).fill_(_FILL[t.dtype])
            inner = buf[pad:pad + n].view(t.shape)
            if decl.zero:
                inner.zero_()
            buffers.append((decl, t, buf, n, pad))
            views.append(inner if isinstance(out, torch.Tensor) else inner.numpy())
        kernel.fn(view, *ins, *views, **kwargs)
        for decl, t, buf, n, pad in buffers:
            _check_buffer(kernel, decl, buf, n, pad)
            t.copy_(buf[pad:pad + n].view(t.shape))
        for decl, old, new in zip(kernel.inputs, before, ins):
            if old is not None and not _same(old, new):
                raise KernelFault(f"kernel {kernel.qualname} wrote into its input '{decl.name}'")

    return call


def _check_buffer(kernel, decl, buf: torch.Tensor, n: int, pad: int) -> None:
    bits, fill = buf.view(_BITS[buf.dtype]), _FILL[buf.dtype]
    role = _role(kernel, decl)
    for side, part in (("before the start", bits[:pad].flip(0)), ("past the end", bits[pad + n:])):
        changed = torch.nonzero(part != fill)
        if changed.numel():
            raise KernelFault(f"kernel {kernel.qualname} wrote {side} of its {role} '{decl.name}' "
                              f"({changed.numel()} of {pad} guard elements changed, the nearest "
                              f"{int(changed[0]) + 1} element(s) {side})")
    if not decl.zero and decl not in kernel.workspaces:
        unwritten = torch.nonzero(bits[pad:pad + n] == fill)
        if unwritten.numel():
            raise KernelFault(f"kernel {kernel.qualname} left {unwritten.numel()} of {n} elements of its {role} "
                              f"'{decl.name}' unwritten (first at flat index {int(unwritten[0])})")


def _role(kernel, decl) -> str:
    return "output" if decl in kernel.outputs else "saved tensor" if decl in kernel.saves else "workspace"


def _glue_modules(system) -> list:
    modules = []
    for impls in system.operators.values():
        for impl in impls:
            owner = getattr(impl.apply, "__self__", impl.apply)
            module = sys.modules.get(getattr(owner, "__module__", ""))
            if module is not None and module not in modules:
                modules.append(module)
    return modules


def _runtime_of(module):
    """The framework runtime's ``run`` a generated glue module calls kernels through, or ``None``."""
    run = getattr(module, "_run", None)
    owner = getattr(run, "__module__", "") or ""
    return run if owner.startswith("gnnbench.frameworks.") and owner.endswith("_runtime") else None


def guard_supported(system) -> bool:
    """Whether the system's glue calls kernels through a framework runtime's ``run`` (which the guard wraps)."""
    return any(_runtime_of(m) is not None for m in _glue_modules(system))


@contextmanager
def guarded(system) -> Iterator[bool]:
    """Route the system's kernel calls through :func:`guarded_run`; yields whether that was possible."""
    patched = [(m, _runtime_of(m)) for m in _glue_modules(system) if _runtime_of(m) is not None]
    for module, runtime in patched:
        module._run = partial(guarded_run, runtime=runtime)
    try:
        yield bool(patched)
    finally:
        for module, runtime in patched:
            module._run = runtime


# ----------------------------------------------------------------- running the suite
@dataclass
class CaseResult:
    """Outcome of one operator variant over all its cases."""

    operator: str
    status: str = "passed"                   # passed, failed or skipped
    cases: int = 0
    failed_cases: int = 0
    failures: list[str] = field(default_factory=list)
    failed_graphs: list[str] = field(default_factory=list)
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "status": self.status, "cases": self.cases,
                "failed_cases": self.failed_cases, "failures": self.failures,
                "failed_graphs": self.failed_graphs, "reason": self.reason, "detail": self.detail,
                "seconds": round(self.seconds, 3)}


def system_float_dtype(spec_path: str) -> str:
    """``float64`` unless some kernel of the spec admits float32 only (``f32``)."""
    from gnnbench.dsl.parse import load_spec

    spec = load_spec(spec_path)
    return "float32" if any(p.dtype == "f32" for k in spec.kernels for p in k.params) else "float64"


def _graph_label(name: str, index_dtype: str, case: OpCase, heads: int, width: int, dtype: str = "") -> str:
    shape = f"F={width}, H={heads}" if case.uses_width else f"H={heads}"
    return f"'{name}' ({index_dtype}, {shape}{', ' + dtype if dtype else ''})"


def case_grid(case: OpCase, profile: str, graph_names) -> list[tuple[str, str, int, int | None]]:
    """``(index dtype, graph, heads, width)`` of every case of ``case`` in ``profile``, in report order."""
    settings = PROFILES[profile]
    grid = []
    for idx in settings["index_dtypes"]:
        for name in graph_names:
            if (case.values == "NaN/inf" and name not in SPECIAL_VALUE_GRAPHS) or name in settings.get("left_out", ()):
                continue
            shapes = REDUCED_SHAPES.get(name) or (settings.get("blocks", settings) if is_block(name) else settings)
            heads = shapes["heads"] if case.values != "NaN/inf" else (1, 3)
            widths = (shapes["widths"] if case.values != "NaN/inf" else (17,)) if case.uses_width else (None,)
            grid.extend((idx, name, h, w) for h in heads for w in widths)
    return grid


def _run_one(F, bound, case: OpCase, arrays: dict, grad_seed: int, device: str, absolute: bool = False):
    """Forward, then backward with a seeded ``grad_out``, through frontend ``F`` and its framework's autodiff.

    Returns ``(out, {input: grad or None}, failed stage or None, exception or None)`` as NumPy arrays.
    ``absolute`` runs it on the absolute values of the inputs and of ``grad_out`` (the oracle's sums of
    |terms|, Note [cancelling sums]).
    """
    if absolute:
        arrays = {k: None if v is None else np.abs(v) for k, v in arrays.items()}
    names = differentiable(case, arrays)
    if F.name == "tensorflow":
        return _run_one_tensorflow(F, bound, case, arrays, names, grad_seed)
    leaves = torch_leaves(F, arrays, names, device)
    try:
        out = case.call(F, bound, [leaves.get(k) for k in arrays])
    except Exception as err:  # noqa: BLE001 - a kernel that raises is a finding, not a crash
        return None, {}, "forward", err
    g = _grid(np.random.default_rng(grad_seed), tuple(out.shape))
    g = torch.from_numpy(np.abs(g) if absolute else g).to(F.dtype).to(device)
    try:
        grads = torch.autograd.grad(out, [leaves[k] for k in names], g, allow_unused=True)
    except Exception as err:  # noqa: BLE001
        return out.detach().cpu().numpy(), {}, "backward", err
    return (out.detach().cpu().numpy(),
            {k: None if gr is None else gr.cpu().numpy() for k, gr in zip(names, grads)}, None, None)


def differentiable(case: OpCase, arrays: dict) -> list[str]:
    """The inputs a case takes gradients of: every given input with a gradient (:attr:`OpCase.gradients`; index
    inputs and constants like ``norm`` have none)."""
    return [k for k, v in arrays.items() if v is not None and k in case.gradients]


def torch_leaves(F, arrays: dict, names, device: str = "cpu") -> dict[str, Any]:
    """Torch tensors of a case's inputs: float ones in ``F``'s dtype, those in ``names`` requiring a gradient;
    index ones as drawn."""
    return {k: torch.from_numpy(np.ascontiguousarray(v)).to(F.dtype).to(device).requires_grad_(k in names)
            if v.dtype.kind == "f" else torch.from_numpy(np.ascontiguousarray(v)).to(device)
            for k, v in arrays.items() if v is not None}


def _run_one_tensorflow(F, bound, case: OpCase, arrays: dict, names: list, grad_seed: int):
    import tensorflow as tf

    leaves = {k: F.tensor(v) for k, v in arrays.items() if v is not None}
    try:
        with tf.GradientTape() as tape:
            tape.watch([leaves[k] for k in names])
            out = case.call(F, bound, [leaves.get(k) for k in arrays])
    except Exception as err:  # noqa: BLE001
        return None, {}, "forward", err
    g = F.tensor(_grid(np.random.default_rng(grad_seed), tuple(out.shape)))
    try:
        grads = tape.gradient(out, [leaves[k] for k in names], output_gradients=g)
    except Exception as err:  # noqa: BLE001
        return out.numpy(), {}, "backward", err
    return (out.numpy(), {k: None if gr is None else tf.convert_to_tensor(gr).numpy() for k, gr in zip(names, grads)},
            None, None)


def _unchecked(system: str, name: str, profile: str, requested: str | None) -> str:
    """Why operator ``name``, which ``system`` does not implement, goes unchecked; empty when its composition
    is checked instead.

    Note [compositions verified]
        An operator a system does not implement but can compose (:data:`COMPOSITIONS`: ``gat_aggregate`` from
        sddmm, edge_softmax and spmm; ``typed_aggregate`` from one spmm per relation) runs its cases through
        the composition, on the system's own operators, against ``reference``'s kernel, forward and every
        gradient. A run of that system computes the operator this way (Note [declared dispatch]), so its
        primitives passing alone proved only part of it: the per-relation mask, the matmul and the sum are
        the composition's. The row passes or fails like a kernel's and says ``composed from X's own
        operators``. Before, these rows were skipped with "the composition of its primitives is checked
        instead". An operator with no composition is still skipped as not implemented. The fast suite (CI's)
        skips a composition unless it names the operator: composed, typed_aggregate's fast cases took mkl 65 s
        (64 spmm calls a case at R = 64), which every whole-suite verify of a demo system in the tests would
        pay; CI's conformance tests name their operators.
    """
    if name in COMPOSITIONS and not (profile == "fast" and requested is None):
        return ""
    return f"not implemented by {system}" + (" (its composition is checked by the full suite, or with --operator)"
                                              if name in COMPOSITIONS else "")


def run_suite(system: str, operator: str | None = None, profile: str = "full", framework: str = "torch",
              device: str = "cpu", dtype: str | None = None, guard: bool = True,
              threads: int | None = None, max_failures: int = 5, labels=None,
              on_case=None, on_result=None) -> tuple[list[CaseResult], dict[str, Any]]:
    """Run the conformance suite of ``system``; returns per-variant results and the settings used.

    Args:
        system (str): a kernel system's name.
        operator (str, optional): only this operator (``spmm``, ``sddmm``, ...).
        profile (str): ``full`` or ``fast`` (:data:`PROFILES`).
        dtype (str, optional): float dtype of the system's inputs (default: :func:`system_float_dtype`).
        guard (bool): run the system's kernels under Note [guarded runtime] (where its glue allows;
            the settings returned say whether it did).
        threads (int, optional): torch intra-op threads for the system's calls (default: unchanged;
            the oracle always runs single-threaded, Note [oracle threads]).
        max_failures (int): failure messages kept per variant, from the first failing case of
            each graph (all failing cases are counted).
        labels (iterable of str, optional): only the :class:`OpCase` variants with these labels.
        on_case (callable, optional): ``on_case(label, where)`` before each case runs (verify's
            isolation uses it to name the case a crash happened in).
        on_result (callable, optional): ``on_result(CaseResult)`` after each variant.

    """
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.registry import load_system, system_info

    info = system_info(system)
    sys_glue, ref_glue = load_system(system, framework, device), load_system(REFERENCE)
    options = verification_options(sys_glue)
    dtype = dtype or system_float_dtype(info.spec_path)
    guard = guard and guard_supported(sys_glue)
    sides = _Sides(sys_glue, ref_glue, get_frontend(framework, device, dtype),
                   get_frontend("torch", "cpu", "float64"), device, guard, threads, TOLERANCES[dtype])
    from gnnbench.check.bipartite import bipartite_graphs, sampled_blocks  # the blocks of sampled training

    graphs = {idx: {**adversarial_graphs(np.dtype(idx)), **bipartite_graphs(np.dtype(idx)),
                    **sampled_blocks(np.dtype(idx))} for idx in PROFILES[profile]["index_dtypes"]}
    results = []
    for case in __getattr__("OP_CASES"):
        if (operator is not None and case.operator != operator) or (labels is not None and case.label not in labels):
            continue
        result = CaseResult(case.label)
        results.append(result)
        if sys_glue.find(case.operator, dict(case.attrs)) is None:
            result.reason = _unchecked(system, case.operator, profile, operator)
            if result.reason:
                result.status = "skipped"
                if on_result:
                    on_result(result)
                continue
            result.detail = f"composed from {system}'s own operators"   # Note [compositions verified]
        start = time.perf_counter()
        grid = case_grid(case, profile, list(next(iter(graphs.values()))))
        for seed, (idx, name, heads, width) in enumerate(grid, 1):
            where = _graph_label(name, idx, case, heads, width, dtype)
            if on_case:
                on_case(case.label, where)
            problems = sides.problems(case, graphs[idx][name], (idx, name), heads, width, seed, dtype, where)
            result.cases += 1
            if problems:
                result.status = "failed"
                result.failed_cases += 1
                if name not in result.failed_graphs:  # keep the first failing case of each graph
                    result.failed_graphs.append(name)
                    result.failures.extend(f"{case.label} {quantity} on {where}: {text}"
                                           for quantity, text in problems)
                    del result.failures[max_failures:]
        result.seconds = time.perf_counter() - start
        if on_result:
            on_result(result)
    notes = [REDUCED_SHAPES[name]["reason"] for name in REDUCED_SHAPES]
    return results, {"dtype": dtype, "tolerance": f"{sides.tol} (x max(1, sqrt(L/{ROW_LENGTH_CALIBRATED})) for rows "
                     f"of L edges; relative to max(|expected|, sum of |terms| / sqrt(L)))", "profile": profile, "guard": guard, "options": options,
                     "device": device, "framework": framework, "notes": notes}


@dataclass
class _Sides:
    """The system under test and ``reference``, as :func:`run_suite` runs one case on both and compares them."""

    sys_glue: Any
    ref_glue: Any
    F_sys: Any
    F_ref: Any
    device: str
    guard: bool
    threads: int | None
    tol: Tolerance
    #: each graph bound to both systems once, by ``(index dtype, graph name)``
    bound: dict = field(default_factory=dict)

    def problems(self, case: OpCase, graph, key: tuple, heads: int, width: int, seed: int, dtype: str,
                 where: str) -> list[tuple[str, str]]:
        """What differs between the system and ``reference`` on one case, as ``(quantity, text)``."""
        from gnnbench.runtime.glue import BoundGraph

        arrays = case.inputs(graph, heads, width or 1, np.random.default_rng(seed), dtype)
        if key not in self.bound:
            self.bound[key] = (BoundGraph(graph, self.sys_glue), BoundGraph(graph, self.ref_glue))
        b_sys, b_ref = self.bound[key]
        with _torch_threads(1):  # Note [oracle threads]
            expected = _run_one(self.F_ref, b_ref, case, arrays, seed, "cpu")
        if expected[3] is not None:
            raise RuntimeError(f"reference failed on {case.label} {where}: {expected[3]}") from expected[3]
        with guarded(self.sys_glue) if self.guard else _nullcontext(), \
                _torch_threads(self.threads or torch.get_num_threads()):
            got = _run_one(self.F_sys, b_sys, case, arrays, seed, self.device)

        def magnitude():  # Note [cancelling sums], only when needed
            with _torch_threads(1):
                return _run_one(self.F_ref, b_ref, case, arrays, seed, "cpu", absolute=True)

        tol = self.tol.for_rows(longest_row(graph))
        problems = _problems(got, expected, tol, magnitude)
        if not problems or not case.ranges:
            return problems
        named = []
        for quantity, text in problems:
            values = _indexed_by(case, graph, arrays, quantity, got, expected, tol)
            if len(values) > 1:
                values = self._at_fault(case, key, arrays, seed, values, tol)
            named.append((quantity, text + _index_text(case, values)))
        return named

    def _at_fault(self, case: OpCase, key: tuple, arrays: dict, seed: int, candidates: set, tol: Tolerance) -> set:
        """The index values among ``candidates`` whose edges alone still make the forward differ: each run with
        the case's per-edge float inputs (``norm``) zeroed on every other index's edges (Note [the relation a
        failure involves]); ``candidates`` unchanged when the operator has no such input."""
        index = next(p.name for p in case.declaration.inputs if p.indexes in dict(case.ranges))
        masked = [k for k, v in arrays.items() if v is not None and v.dtype.kind == "f" and case.space(k) == "edge"]
        if not masked:
            return candidates
        b_sys, b_ref = self.bound[key]
        kinds = np.asarray(arrays[index])
        faulty = set()
        for value in sorted(candidates)[:_MOST_CANDIDATES]:
            keep = kinds == value
            only = {k: v * keep.reshape(-1, *[1] * (v.ndim - 1)) if k in masked else v for k, v in arrays.items()}
            with _torch_threads(1):
                expected = _run_one(self.F_ref, b_ref, case, only, seed, "cpu")
            with guarded(self.sys_glue) if self.guard else _nullcontext(), \
                    _torch_threads(self.threads or torch.get_num_threads()):
                got = _run_one(self.F_sys, b_sys, case, only, seed, self.device)
            if _problems(got, expected, tol):
                faulty.add(value)
        return faulty or candidates


#: the most index values :meth:`_Sides._at_fault` runs alone
_MOST_CANDIDATES = 8


def _index_text(case: OpCase, values: set) -> str:
    """``'; every wrong element involves etype = 63 (of R=64)'``, or ``''`` without values."""
    if not values:
        return ""
    index = next(p for p in case.declaration.inputs if p.indexes in dict(case.ranges))
    shown = ", ".join(str(v) for v in sorted(values)[:5]) + (", ..." if len(values) > 5 else "")
    return f"; every wrong element involves {index.name} = {shown} (of {index.indexes}={dict(case.ranges)[index.indexes]})"


def _indexed_by(case: OpCase, graph, arrays: dict, quantity: str, got, expected, tol: Tolerance) -> set:
    """Note [the relation a failure involves]
        A typed operator's case that fails says which values of its index input (``etype``, the relation) every
        wrong element involves: rows of a weight indexed by the range (``grad weight[r]``) directly, an edge
        value by its edge's index, a destination's or a source's element by the index of every edge that
        reaches it, intersected over the wrong elements (less the indices that also reach a right element,
        where any index is left after that: a relation all of whose messages are wrong leaves no element it
        reaches right). Where several remain (one wrong row reached by four relations), each runs alone on
        both sides, its per-edge float inputs (``norm``) zeroed on every other relation's edges, and those whose
        run still differs are named. A kernel that takes the wrong weight for the last relation only then fails
        naming it: ``every wrong element involves etype = 63 (of R=64)``.
    """
    decl = case.declaration
    index = next((p for p in decl.inputs if p.indexes in dict(case.ranges)), None)
    mine, theirs = (got[0], expected[0]) if quantity == "output" else \
        (got[1].get(quantity[len("grad "):]), expected[1].get(quantity[len("grad "):]))
    if index is None or mine is None or theirs is None or mine.shape != theirs.shape or not mine.size:
        return set()
    with np.errstate(invalid="ignore", over="ignore"):
        same = (np.abs(mine.astype(np.float64) - theirs) <= tol.bound(theirs)) | (np.isnan(mine) & np.isnan(theirs))
    wrong_rows = ~same.reshape(len(same), -1).all(1)
    where = np.nonzero(wrong_rows)[0]
    declared = decl.outputs[0] if quantity == "output" else next(p for p in decl.inputs
                                                                   if p.name == quantity[len("grad "):])
    first = declared.shape[0][0] if declared.shape and len(declared.shape[0]) == 1 else None
    kinds = np.asarray(arrays[index.name]).astype(np.int64)
    if first == index.indexes:
        values = set(where.tolist())
    elif first in ("E", "N", "S"):
        dst = np.repeat(np.arange(graph.num_dst), np.diff(graph.indptr.astype(np.int64)))
        ends = {"E": np.arange(graph.num_edges), "N": dst, "S": graph.indices.astype(np.int64)}[first]
        values = None
        for element in where[:256].tolist():
            reaching = set(kinds[ends == element].tolist())
            values = reaching if values is None else values & reaching
        # an index that also reaches a right element is not the one at fault, while any other remains
        cleared = set(kinds[np.isin(ends, np.nonzero(~wrong_rows)[0])].tolist())
        values = (values - cleared) or values or set()
    else:
        return set()
    return values


def verification_options(sys_glue) -> dict[str, Any]:
    """The options verify configures ``sys_glue`` with before its checks (Note [verification options]).

    Note [verification options]
        A system whose kernels module names ``VERIFY_OPTIONS`` is configured with them before its checks
        (and runs must default to the same mode, which verify checks).
    """
    options = getattr(sys_glue.module, "VERIFY_OPTIONS", None) or {}
    if options and sys_glue.hook("configure") is not None:
        sys_glue.hook("configure")(**options)
    return options


def _problems(got, expected, tol: Tolerance, magnitude=None) -> list[tuple[str, str]]:
    """``(quantity, what is wrong)`` for the output and each gradient of one case; ``magnitude`` is the
    oracle's run on absolute values (Note [cancelling sums]), a function computing it, or ``None`` to
    judge by ``|expected|``.

    A function is called only when the bound relative to ``|expected|`` finds a problem: the run on
    absolute values can only widen the bound, so a case that passes without it passes with it, and
    most cases then cost one oracle run, not two."""
    if callable(magnitude):
        problems = _problems(got, expected, tol)
        return _problems(got, expected, tol, magnitude()) if problems and got[3] is None else problems
    out_s, grads_s, stage, err = got
    out_r, grads_r, _, _ = expected
    out_m, grads_m = (None, {}) if magnitude is None else magnitude[:2]
    problems = []
    if err is not None:
        problems.append(("output" if stage == "forward" else "backward",
                         f"raised {type(err).__name__}: {_first_line(err)}"))
    if out_s is not None:
        bad = compare(out_s, out_r, tol, out_m)
        if bad:
            problems.append(("output", bad))
    for name, expected_grad in grads_r.items() if err is None else ():
        grad = grads_s.get(name)
        if grad is None:
            problems.append((f"grad {name}", f"missing (the system returns no gradient for '{name}')"))
            continue
        bad = compare(grad, expected_grad, tol, grads_m.get(name))
        if bad:
            problems.append((f"grad {name}", bad))
    return problems


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else repr(err)


@contextmanager
def _nullcontext():
    yield False


@contextmanager
def _torch_threads(n: int):
    """Note [oracle threads]
        The oracle runs single-threaded: its inputs are tiny, and on a busy
        machine an intra-op thread pool makes each scatter cost tens of
        milliseconds of barrier waiting. The system under test keeps the
        caller's thread count, so its parallel paths (and their races) run.
    """
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
