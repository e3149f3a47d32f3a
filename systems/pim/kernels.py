"""The ``pim`` kernel system: aggregations on a simulated UPMEM machine, the rest on the host.

Which kernel runs where:

==========================  ==========================================================
on the simulated PIM        ``spmm_sum`` (forward view: forward aggregation; transposed
machine (modeled + run      view, as SDDMM's backward calls it: backward aggregation),
functionally per DPU)       ``spmm_sum_backward`` (transposed view, its own layout and
                            modeled time)
on the host (measured,      ``sddmm_dot``, ``sddmm_add``, ``edge_sum``, ``edge_softmax``
exact float, numba)         (+ backward), ``spmm_weight_backward``, and ``spmm_max``
                            with its two backward kernels (host-only: see hostkernels)
==========================  ==========================================================

Module-level entry points besides the kernels: :func:`configure` (options),
:func:`prepare` (per graph view: tunes the layout, cuts the adjacency, models
its load), :func:`report` and :func:`reset_report`.

Note [one layout per view]
    ``prepare`` tunes a layout at ``tune_width`` columns (default 16, the GCN
    hidden size; or the ``sp``/``ds``/``balance`` fixed by ``configure``) and
    loads it. Every later call on that view reuses it at whatever width it
    has, as PyGim keeps one configuration per graph; only when that layout is
    infeasible at a width (say, WRAM for 1433 input features) is a second
    layout tuned for that width and loaded, its load reported like the first.

Note [one search per class of block]
    A sampled run prepares every block of every batch, and the tuner scores
    every allowed layout (about 80 on 32 ranks) with the cost model, which
    took most of pim's sampled epoch on Cora. The
    blocks of one run come in a few classes, as isplib files its tuning
    (Note [block classes] in its ``tuning_cache.py``): the orientation, the width,
    and the rows, columns and nonzeros, each to a factor of two. The first
    block of a class is searched in full; the next ones take its winner
    (``sp``, ``ds``, both balances), built and costed on their own rows, and
    are searched in full only when that layout does not fit them. A full
    graph is never a block, and is always searched. On Cora block prepare
    fell to a small fraction of what it was, and the modeled aggregation (a
    cost model's, not a timing) rose a little over the best layout of every
    block (``results/studies/runtime-notes.md``): the class's layout is
    near, not at, each block's optimum. A PIM system could not search every
    batch's layouts either; PyGim tunes once per graph.
"""
from __future__ import annotations

import hashlib
import os
import time
import weakref

import numpy as np

from gnnbench.errors import UserError

from . import hostkernels as _host
from .accounting import Accounting
from .costmodel import Cost, estimate
from .errors import PimInfeasibleError, PimOverflowError
from .execute import aggregate, quantize_weights, x_levels
from .hostrates import HostRates
from .machine import Machine, load_machine
from .partition import BALANCES, SliceData, build_slices, slice_row_cum
from .tuner import Choice, tune

__all__ = ["configure", "prepare", "report", "reset_report", "ACCOUNTING", "PimPrepared",
           "spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "spmm_max", "spmm_max_backward",
           "spmm_max_weight_backward", "sddmm_dot", "sddmm_add", "edge_sum", "edge_softmax",
           "edge_softmax_backward"]

MACHINE_ENV = "GNNBENCH_PIM_MACHINE"
_DEFAULTS = {"machine": None, "arithmetic": "int32", "sp": None, "ds": None, "balance": None,
             "tasklet_balance": None, "tune_width": 16, "quant_bits": None, "weight_quant_bits": None,
             "on_overflow": "error"}
ACCOUNTING = Accounting()


class _State:
    options: dict = dict(_DEFAULTS)
    machine: Machine | None = None
    generation = 0
    #: class of block -> the winning layout's label (Note [one search per class of block])
    block_layouts: dict = {}


def _machine() -> Machine:
    if _State.machine is None:
        _State.machine = load_machine(_State.options["machine"] or os.environ.get(MACHINE_ENV) or None)
    return _State.machine


def _check_option(key: str, value) -> None:
    def bad(expected: str) -> UserError:
        return UserError(f"pim option {key}={value!r}: expected {expected}")
    if key == "arithmetic" and value not in ("int32", "float32"):
        raise bad("'int32' or 'float32'")
    if key in ("balance", "tasklet_balance") and value is not None and value not in BALANCES:
        raise bad(f"one of {BALANCES} (or None to let the tuner choose)")
    if key == "on_overflow" and value not in ("error", "count"):
        raise bad("'error' (raise) or 'count' (wrap as the hardware does and report the count)")
    if key in ("sp", "ds", "tune_width") and value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise bad("a positive integer" + ("" if key == "tune_width" else " (or None to let the tuner choose)"))
    if key in ("quant_bits", "weight_quant_bits") and value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 30):
        raise bad("an integer in [1, 30] (or None for the largest overflow-free range)")


_INT_OPTIONS = ("sp", "ds", "tune_width", "quant_bits", "weight_quant_bits")
_AUTO_OPTIONS = ("sp", "ds", "balance", "tasklet_balance", "quant_bits", "weight_quant_bits", "machine")


def _coerce(key: str, value):
    """Options arrive as strings from ``gnnbench run -o KEY=VALUE``: parse them."""
    if not isinstance(value, str):
        return value
    if key in _AUTO_OPTIONS and value.strip().lower() in ("auto", "none", ""):
        return None
    if key in _INT_OPTIONS:
        try:
            return int(value)
        except ValueError:
            raise UserError(f"pim option {key}={value!r}: expected an integer"
                            + (" or 'auto'" if key in _AUTO_OPTIONS else "")) from None
    return value


#: Options `gnnbench verify` applies before the operator suite: the default int32
#: arithmetic is exact only up to quantisation, so the suite checks the float32 mode ...
VERIFY_OPTIONS = {"arithmetic": "float32"}
#: ... and the default int32 mode, which differs only in the PIM aggregations, is checked
#: against its own dequantised expectation and a stated error bound (Note [quantised
#: verification] in gnnbench/check/quantised.py).
VERIFY_QUANTISED = {"options": {"arithmetic": "int32"},
                    "active": lambda: _State.options["arithmetic"] == "int32",
                    "quantisation_scales": lambda: (ACCOUNTING.last_quantisation["x_scale"],
                                                    ACCOUNTING.last_quantisation["w_scale"])}


def configure(**options) -> None:
    """Set options of the ``pim`` system; options not named take their defaults.

    Each call states the whole configuration (a run's ``-o`` options, verify's
    ``VERIFY_OPTIONS``), so nothing an earlier run or verify set in this process
    leaks into the next one.

    Args:
        machine: path of a machine description TOML (default: ``$GNNBENCH_PIM_MACHINE``
            or ``systems/pim/machine.toml``).
        arithmetic: ``int32`` (quantised, as PyGim; default) or ``float32``.
        sp, ds: column slices and dense chunks (default: tuned).
        balance, tasklet_balance: ``rows`` or ``nnz`` (default: tuned).
        tune_width: dense width ``prepare`` tunes for (default: 16).
        quant_bits, weight_quant_bits: force ``2^bits - 1`` quantisation levels
            (default: the largest range that cannot overflow).
        on_overflow: ``error`` (default) or ``count``.

    String values (from ``gnnbench run -o KEY=VALUE``) are parsed; ``auto``
    means "let the tuner choose". Changing any option forgets prepared layouts
    (they are rebuilt on next use).

    Raises:
        UserError: an unknown option or value, or an unreadable machine file.
    """
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise UserError(f"unknown pim option(s) {sorted(unknown)}; allowed: {sorted(_DEFAULTS)}")
    options = {key: _coerce(key, value) for key, value in options.items()}
    for key, value in options.items():
        _check_option(key, value)
    new = {**_DEFAULTS, **options}
    machine = load_machine(new["machine"] or os.environ.get(MACHINE_ENV) or None)
    _State.options, _State.machine = new, machine
    _State.generation += 1
    _State.block_layouts = {}
    ACCOUNTING.reset(layouts=True)


def _fingerprint(a: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.shape}{a.dtype}".encode())
    h.update(np.ascontiguousarray(a).view(np.uint8).data)
    return h.hexdigest()


class _Layout:
    """A layout loaded on the DPUs for one view: plan, sliced adjacency and value caches."""

    def __init__(self, choice: Choice, slices: SliceData):
        self.choice, self.plan, self.slices = choice, choice.plan, slices
        self.costs: dict[tuple, Cost] = {}
        self.ones: dict[str, np.ndarray] = {}
        self.values: tuple | None = None  # (key, vals, scale, levels, row bound) of the last weights sent


class PimPrepared:
    """What :func:`prepare` builds for one graph view (rebuilt when options change).

    Attributes:
        orientation: ``forward`` or ``backward`` (transposed view).
        max_row_nnz: ``M``, the largest row, which bounds int32 sums.
        layouts: the layouts loaded for this view, the tuned default first.
    """

    def __init__(self, view):
        self.indptr, self.indices, self.edge_ids = view.indptr, view.indices, view.edge_ids
        self.num_rows, self.num_cols = view.num_rows, view.num_cols
        self.orientation = "backward" if view.transposed else "forward"
        self.graph_id = view.graph.signature()
        self.is_block = view.graph.is_block
        deg = np.diff(np.asarray(view.indptr, dtype=np.int64))
        self.max_row_nnz = int(deg.max()) if deg.size else 0
        self.generation = -1
        self.refresh()

    def refresh(self) -> None:
        if self.generation == _State.generation:
            return
        self.generation = _State.generation
        self._cum: dict[int, np.ndarray] = {}
        self._slices: dict[int, SliceData] = {}
        self.layouts: list[_Layout] = []
        self._add_layout(_State.options["tune_width"], None, "prepare")

    def _cum_for(self, sp: int) -> np.ndarray:
        if sp not in self._cum:
            self._cum[sp] = slice_row_cum(self.indptr, self.indices, self.num_cols, sp)
        return self._cum[sp]

    def _block_class(self, width: int, head_dim: int | None) -> tuple | None:
        """This view's class of block (Note [one search per class of block]), None for a full graph."""
        if not self.is_block:
            return None
        octave = [int(n).bit_length() for n in (self.num_rows, self.num_cols, self.indptr[-1])]
        return (self.orientation, width, head_dim, *octave)

    def _tune(self, width: int, head_dim: int | None) -> Choice:
        opts, machine = _State.options, _machine()
        fixed = {k: opts[k] for k in ("sp", "ds", "balance", "tasklet_balance")}

        def search(**layout):
            return tune(self._cum_for, machine, HostRates(machine), self.num_rows, self.num_cols, width,
                        opts["arithmetic"], head_dim=head_dim, **layout)

        key = self._block_class(width, head_dim)
        if key in _State.block_layouts:
            try:
                return search(**_State.block_layouts[key])
            except PimInfeasibleError:
                pass  # the class's layout does not fit this block: search it in full
        choice = search(**fixed)
        if key is not None:
            _State.block_layouts[key] = choice.plan.label()
        return choice

    def _add_layout(self, width: int, head_dim: int | None, reason: str) -> _Layout:
        machine = _machine()
        choice = self._tune(width, head_dim)
        self._cum.clear()  # sp x N prefix sums per candidate: large, and the slices keep their own
        sp = choice.plan.sp
        if sp not in self._slices:
            self._slices[sp] = build_slices(self.indptr, self.indices, self.edge_ids, self.num_cols, sp)
        layout = _Layout(choice, self._slices[sp])
        resident = [x for x in ACCOUNTING.layouts if x["graph"] == self.graph_id]
        mram = choice.cost.details["mram_max_bytes"] + sum(x["mram_max_bytes"] for x in resident)
        if mram > machine.mram_bytes:
            raise PimInfeasibleError(
                f"MRAM: the layouts of graph {self.graph_id} resident together need up to {mram} bytes on a DPU "
                f"> {machine.mram_bytes}; fix sp/ds with configure() so both views fit, or use a larger machine")
        ACCOUNTING.add_layout(self.orientation, self.graph_id,
                              {**choice.as_dict(), "mram_max_bytes": choice.cost.details["mram_max_bytes"]},
                              choice.cost.load_s, reason)
        self.layouts.append(layout)
        return layout

    def layout_for(self, width: int, head_dim: int | None, weights_sent: bool) -> tuple[_Layout, Cost]:
        """The first loaded layout feasible at this width (tuning a new one if none is)."""
        self.refresh()
        arithmetic = _State.options["arithmetic"]
        key = (width, head_dim, weights_sent)
        for layout in self.layouts:
            if key not in layout.costs:
                layout.costs[key] = estimate(layout.plan, _machine(), HostRates(_machine()), width, arithmetic,
                                             head_dim=head_dim, weights_sent=weights_sent)
            if layout.costs[key].feasible:
                return layout, layout.costs[key]
        layout = self._add_layout(width, head_dim, f"width {width} infeasible on earlier layouts")
        return self.layout_for(width, head_dim, weights_sent)

    def values(self, layout: _Layout, weight: np.ndarray | None) -> tuple[np.ndarray, float, int, int, bool]:
        """Nonzero values in slice order: ``(vals [nnz, Hv], scale, levels, row bound, newly sent)``.

        ``row bound`` is the largest sum of ``|quantised value|`` over a row
        (and head): the int32 sums of that row are at most ``x_levels`` times it
        (Note [int32 quantisation] in execute.py).
        """
        opts = _State.options
        arithmetic = opts["arithmetic"]
        if weight is None:
            if arithmetic not in layout.ones:
                dtype = np.int32 if arithmetic == "int32" else np.float32
                layout.ones[arithmetic] = np.ones((layout.slices.eid.shape[0], 1), dtype=dtype)
            return layout.ones[arithmetic], 1.0, 1, self.max_row_nnz, False
        key = (_fingerprint(weight), arithmetic, opts["quant_bits"], opts["weight_quant_bits"])
        cached = layout.values
        if cached is not None and cached[0] == key:
            return cached[1], cached[2], cached[3], cached[4], False
        if arithmetic == "int32":
            wq, scale, wl, bound = quantize_weights(weight, self.indptr, self.edge_ids, self.max_row_nnz,
                                                    opts["quant_bits"], opts["weight_quant_bits"])
        else:
            wq, scale, wl, bound = np.asarray(weight, dtype=np.float32), 1.0, 0, self.max_row_nnz
        vals = np.ascontiguousarray(wq[layout.slices.eid])
        layout.values = (key, vals, scale, wl, bound)
        return vals, scale, wl, bound, True


_FALLBACK: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def prepare(view) -> PimPrepared:
    """Tune, cut and (model-)load the adjacency of one graph view; see Note [one layout per view]."""
    return PimPrepared(view)


def _prepared(view) -> PimPrepared:
    if isinstance(view.prepared, PimPrepared):
        return view.prepared
    if view not in _FALLBACK:
        _FALLBACK[view] = PimPrepared(view)
    return _FALLBACK[view]


def _aggregate(graph, x, weight, out, direction: str, row_scale=None, col_scale=None) -> None:
    prep = _prepared(graph)
    opts = _State.options
    n, heads, dim = x.shape
    width = heads * dim
    head_dim = dim if weight is not None and weight.shape[1] > 1 else None
    layout, _ = prep.layout_for(width, head_dim, False)
    vals, w_scale, wl, bound, sent = prep.values(layout, weight)
    cost = layout.costs[(width, head_dim, False)]
    if sent:
        cost = estimate(layout.plan, _machine(), HostRates(_machine()), width, opts["arithmetic"],
                        head_dim=head_dim, weights_sent=True)
    xl = x_levels(bound, opts["quant_bits"])
    t0 = time.perf_counter()
    # x has the view's columns, out its rows: they differ on a sampled block (Note [blocks])
    stats = aggregate(layout.slices, layout.plan, x.reshape(n, width), vals, head_dim,
                      out.reshape(out.shape[0], width),
                      arithmetic=opts["arithmetic"], x_levels=xl, w_scale=w_scale, w_levels=wl,
                      row_scale=row_scale, col_scale=col_scale)
    wall = time.perf_counter() - t0
    quant = None
    if opts["arithmetic"] == "int32":
        quant = {"x_levels": stats.x_levels, "w_levels": stats.w_levels, "x_scale": stats.x_scale,
                 "w_scale": stats.w_scale, "max_row_nnz": prep.max_row_nnz, "max_row_weight_sum": bound}
    ACCOUNTING.add_call(direction, cost, wall, stats.overflow, quant, sent)
    if stats.overflow and opts["on_overflow"] == "error":
        raise PimOverflowError(
            f"int32 overflow in {stats.overflow} elements of a {direction} aggregation ({n} x {width}, "
            f"x levels {stats.x_levels}, weight levels {stats.w_levels}, largest row {prep.max_row_nnz} "
            f"nonzeros); leave quant_bits/weight_quant_bits unset for an overflow-free range, use "
            f"configure(arithmetic='float32'), or configure(on_overflow='count') to wrap and count",
            stats.overflow)


def _inv_degree(deg: np.ndarray) -> np.ndarray:
    return 1.0 / np.maximum(np.asarray(deg, dtype=np.float64), 1.0)


def spmm_sum(graph, x, weight, out, *, reduce):
    """``out[i] = sum over row i of w[eid] * x[j]`` (mean: divided by ``max(row_degree[i], 1)``) on PIM."""
    direction = "backward" if graph.transposed else "forward"
    _aggregate(graph, x, weight, out, direction, row_scale=_inv_degree(graph.row_degree) if reduce == "mean"
               else None)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    """On the transposed view: ``grad_x[j] = sum over row j of w[edge_ids[p]] * grad_out[i]`` on PIM.

    For ``mean`` each ``grad_out[i]`` is first divided by ``max(col_degree[i], 1)``
    (the forward in-degree) on the host.
    """
    _aggregate(graph, grad_out, weight, grad_x, "backward",
               col_scale=_inv_degree(graph.col_degree) if reduce == "mean" else None)


def _hosted(name: str, fn):
    def kernel(*args, **kwargs):
        with ACCOUNTING.host_kernel(name):
            fn(*args, **kwargs)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"Host kernel (measured, not modeled). {fn.__doc__}"
    return kernel


spmm_weight_backward = _hosted("spmm_weight_backward", _host.spmm_weight_backward)
spmm_max = _hosted("spmm_max", _host.spmm_max)
spmm_max_backward = _hosted("spmm_max_backward", _host.spmm_max_backward)
spmm_max_weight_backward = _hosted("spmm_max_weight_backward", _host.spmm_max_weight_backward)
sddmm_dot = _hosted("sddmm_dot", _host.sddmm_dot)
sddmm_add = _hosted("sddmm_add", _host.sddmm_add)
edge_sum = _hosted("edge_sum", _host.edge_sum)
edge_softmax = _hosted("edge_softmax", _host.edge_softmax)
edge_softmax_backward = _hosted("edge_softmax_backward", _host.edge_softmax_backward)


def report() -> dict:
    """Modeled PIM time and measured simulation time since the last :func:`reset_report`, as a dict."""
    machine = _machine()
    opts = {**_State.options, "machine": machine.path}
    full = ACCOUNTING.report(machine=machine.describe(), options=opts, host=HostRates(machine).describe())
    full["summary"] = _summary(full)
    return full


def _summary(full: dict) -> list[str]:
    """The lines `gnnbench run` prints: modeled PIM time and measured simulation time, kept apart."""
    agg = full.get("modeled_aggregation_s", {})
    lines = []
    for direction in ("forward", "backward"):
        d = agg.get(direction) or {}
        if d.get("calls"):
            lines.append(f"modeled PIM {direction} aggregation: {d['total_s'] * 1e3:.2f} ms over {d['calls']} calls "
                         f"(transfer {d['transfer_s'] * 1e3:.2f}, kernel {d['kernel_s'] * 1e3:.2f}, "
                         f"retrieve {d['retrieve_s'] * 1e3:.2f}, merge {d['merge_s'] * 1e3:.2f} ms)")
    load = full.get("modeled_load_s", {}).get("total")
    if load is not None:
        lines.append(f"modeled PIM adjacency load: {load * 1e3:.3f} ms (once per graph, apart)")
    wall = full.get("measured_simulation_wall_s", {}).get("total")
    if wall is not None:
        lines.append(f"measured wall time of the simulation on this CPU: {wall:.3f} s (not a PIM figure)")
    for c in full.get("configuration", [])[:2]:
        lines.append(f"{c['orientation']} layout: sp={c['sp']}, ds={c['ds']}, balance={c['balance']}, "
                     f"tasklets by {c['tasklet_balance']} ({c['reason']})")
    m = full.get("machine", {})
    lines.append(f"machine: {m.get('name', '?')} ({m.get('path', '?')}, sha256 {str(m.get('sha256', ''))[:12]})")
    return lines


def reset_report() -> None:
    """Clear per-call figures (layouts still loaded, and their load time, stay reported)."""
    ACCOUNTING.reset()
