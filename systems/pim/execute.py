"""Functional execution: every simulated DPU computes its rows from its own data only.

For each cluster (slice ``s``, chunk ``k``) the host builds the cluster's copy of
``X`` — rows of slice ``s``, columns of chunk ``k``, padded to the DMA
alignment — and each DPU of the cluster walks its own row range of the slice
CSR, whose column indices are *relative to the slice*: a DPU can address
nothing outside its slice and chunk, so a partitioning bug shows up as a wrong
result. Each DPU writes its rows of the cluster's output buffer; the host then
merges the ``sp`` partial results of each chunk (copy, then add) and
dequantises. DPUs of a cluster run in parallel (numba ``prange``) when the
cluster carries enough work (Note [small calls run serially] in jit.py);
clusters run one after the other, which changes nothing in the result.

Note [int32 quantisation]
    As PyGim, the default arithmetic is int32 with symmetric per-tensor scales:
    ``q = rint(a / scale)``, ``scale = max|a| / levels``. We choose the levels
    so that nothing can overflow: with ``M`` the largest row of the view
    (nonzeros), without weights ``levels_x = floor((2^31 - 1) / M)``. With
    weights, ``levels_w`` is chosen first (:func:`quantize_weights`: at most
    ``(2^31 - 1) / M``, and balancing the rounding error of a median weight
    against a typical feature, since GCN's normalised weights are mostly far
    below their maximum), then ``levels_x = floor((2^31 - 1) / B)`` with ``B``
    the largest row sum of ``|q_w|`` measured on the quantised weights.
    Every partial and merged sum is then at most ``levels_x * B <= 2^31 - 1``.
    Forcing ``quant_bits`` can break the bound (PyGim's fixed ``2^20`` range
    does on high-degree graphs).

Note [int32 overflow]
    A DPU multiplies and adds in 32-bit two's complement, so intermediate
    wrap-arounds cancel and a result is wrong exactly when the true sum of a
    DPU's row (or of the host's merge of the slices) lies outside int32. We
    accumulate exactly in int64, count every such element, and store the
    wrapped value the hardware would produce; the caller raises or reports the
    count (``on_overflow``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from .jit import DualKernel
from .partition import Plan, SliceData, even_bounds

__all__ = ["choose_levels", "x_levels", "quantize", "quantize_weights", "row_abs_sum_max", "dequantized",
           "aggregate", "ExecStats", "INT32_MAX"]

INT32_MAX = 2**31 - 1


def choose_levels(max_row_nnz: int, weighted: bool, quant_bits: int | None = None,
                  weight_quant_bits: int | None = None) -> tuple[int, int]:
    """Quantisation levels ``(levels_x, levels_w)`` per Note [int32 quantisation].

    Args:
        max_row_nnz: ``M``, the largest row of the view.
        weighted: whether nonzeros carry weights (otherwise ``levels_w = 1``).
        quant_bits: force ``levels_x = 2^bits - 1`` (default: largest safe).
        weight_quant_bits: force ``levels_w = 2^bits - 1`` (default: largest safe).
    """
    budget = max(INT32_MAX // max(int(max_row_nnz), 1), 1)
    wl = (2**weight_quant_bits - 1) if weight_quant_bits else None
    xl = (2**quant_bits - 1) if quant_bits else None
    if not weighted:
        wl = 1
    if wl is None and xl is None:
        wl = max(math.isqrt(budget), 1)
    if xl is None:
        xl = max(budget // wl, 1)
    if wl is None:
        wl = max(budget // xl, 1)
    return int(xl), int(wl)


def x_levels(row_bound: int, quant_bits: int | None = None) -> int:
    """Feature levels once the weights are quantised: ``floor((2^31 - 1) / row_bound)``.

    Args:
        row_bound: the largest sum of ``|quantised weight|`` over a row (the
            row's nonzero count without weights).
        quant_bits: force ``2^bits - 1`` levels instead.
    """
    if quant_bits:
        return 2**quant_bits - 1
    return max(INT32_MAX // max(int(row_bound), 1), 1)


def quantize(a: np.ndarray, levels: int) -> tuple[np.ndarray, float]:
    """Symmetric per-tensor quantisation: ``(rint(a / scale) as int32, scale)``, ``|q| <= levels``."""
    amax = float(np.max(np.abs(a))) if a.size else 0.0
    scale = amax / levels if amax > 0 else 1.0
    return np.rint(np.asarray(a, dtype=np.float64) / scale).astype(np.int32), scale


def row_abs_sum_max(indptr: np.ndarray, edge_ids: np.ndarray | None, w: np.ndarray) -> float:
    """The largest sum of ``|w[eid, h]|`` over a row of the view (and a head)."""
    a = np.abs(np.asarray(w, dtype=np.float64 if w.dtype.kind == "f" else np.int64))
    if edge_ids is not None:
        a = a[edge_ids]
    cs = np.zeros((a.shape[0] + 1, a.shape[1]), dtype=a.dtype)
    np.cumsum(a, axis=0, out=cs[1:])
    ip = np.asarray(indptr, dtype=np.int64)
    sums = cs[ip[1:]] - cs[ip[:-1]]
    return sums.max().item() if sums.size else 0


def quantize_weights(weight: np.ndarray, indptr: np.ndarray, edge_ids: np.ndarray | None, max_row_nnz: int,
                     quant_bits: int | None = None, weight_quant_bits: int | None = None
                     ) -> tuple[np.ndarray, float, int, int]:
    """Quantise per-edge weights for one view: ``(q_w int32 [E, H], scale, levels_w, row bound B)``.

    See Note [int32 quantisation]: unless forced, ``levels_w`` balances the
    relative rounding error of a *typical* weight (the median ``|w|``) against
    that of a typical feature (a quarter of the largest, an assumption), given
    that ``levels_x = floor((2^31 - 1) / B)``; ``B`` is then measured on the
    quantised weights, so the guarantee does not rest on the heuristic.

    Args:
        weight: ``[E, H]`` float, canonical edge order.
        indptr, edge_ids: the view's rows and canonical ids.
        max_row_nnz: ``M`` of the view.
        quant_bits, weight_quant_bits: forced levels ``2^bits - 1``.
    """
    budget = max(INT32_MAX // max(int(max_row_nnz), 1), 1)
    if weight_quant_bits or quant_bits:
        _, wl = choose_levels(max_row_nnz, True, quant_bits, weight_quant_bits)
    else:
        wmax = float(np.abs(weight).max()) if weight.size else 0.0
        if wmax == 0.0:
            wl = 1
        else:
            rel_sum = row_abs_sum_max(indptr, edge_ids, weight) / wmax  # S: a row's weights in units of the max
            nz = np.abs(weight[weight != 0])
            rel_typ = float(np.median(nz)) / wmax if nz.size else 1.0
            wl = int(math.sqrt(INT32_MAX * 0.25 / (max(rel_sum, 1e-12) * max(rel_typ, 1e-12))))
            wl = min(max(wl, 1), budget)
    wq, scale = quantize(weight, wl)
    return wq, scale, wl, int(row_abs_sum_max(indptr, edge_ids, wq))


def dequantized(a: np.ndarray, levels: int) -> np.ndarray:
    """``a`` after a quantise/dequantise round trip, in float64 (what int32 mode computes with)."""
    q, scale = quantize(a, levels)
    return q.astype(np.float64) * scale


@DualKernel
def _dpus_int(starts, stops, indptr_s, local, vals, colhead, xbuf, out, ovf):
    cwp = xbuf.shape[1]
    for d in numba.prange(starts.shape[0]):
        acc = np.zeros(cwp, np.int64)
        cnt = 0
        for r in range(starts[d], stops[d]):
            acc[:] = 0
            for p in range(indptr_s[r], indptr_s[r + 1]):
                j = local[p]
                for c in range(cwp):
                    acc[c] += np.int64(vals[p, colhead[c]]) * np.int64(xbuf[j, c])
            for c in range(cwp):
                a = acc[c]
                if a > 2147483647 or a < -2147483648:
                    cnt += 1
                    a = ((a + 2147483648) & 0xFFFFFFFF) - 2147483648
                out[r, c] = a
        ovf[d] = cnt


@DualKernel
def _dpus_float(starts, stops, indptr_s, local, vals, colhead, xbuf, out):
    cwp = xbuf.shape[1]
    for d in numba.prange(starts.shape[0]):
        acc = np.zeros(cwp, np.float32)
        for r in range(starts[d], stops[d]):
            acc[:] = 0
            for p in range(indptr_s[r], indptr_s[r + 1]):
                j = local[p]
                for c in range(cwp):
                    acc[c] += vals[p, colhead[c]] * xbuf[j, c]
            for c in range(cwp):
                out[r, c] = acc[c]


@DualKernel
def _merge_int(buf, acc, c0, cw, first):
    cnt = 0
    for r in numba.prange(buf.shape[0]):
        for c in range(cw):
            a = np.int64(buf[r, c])
            if not first:
                a += acc[r, c0 + c]
            if a > 2147483647 or a < -2147483648:
                cnt += 1
                a = ((a + 2147483648) & 0xFFFFFFFF) - 2147483648
            acc[r, c0 + c] = a
    return cnt


@dataclass(frozen=True)
class ExecStats:
    """What one functional aggregation observed.

    Attributes:
        overflow: int32 elements that overflowed (DPU results and host merge).
        x_scale, w_scale: quantisation scales (1.0 in float32 mode).
        x_levels, w_levels: quantisation levels (0 in float32 mode).
    """

    overflow: int
    x_scale: float
    w_scale: float
    x_levels: int
    w_levels: int


def aggregate(sd: SliceData, plan: Plan, x: np.ndarray, vals: np.ndarray, head_dim: int | None,
              out: np.ndarray, *, arithmetic: str, x_levels: int = 0, w_scale: float = 1.0,
              w_levels: int = 0, row_scale: np.ndarray | None = None,
              col_scale: np.ndarray | None = None) -> ExecStats:
    """``out = diag(row_scale) A_w diag(col_scale) x`` through the simulated DPUs.

    Args:
        sd: the view's slices for ``plan.sp``.
        plan: the DPU assignment.
        x: ``[N, F]`` dense input (float).
        vals: ``[nnz, Hv]`` nonzero values in slice order (``sd.eid`` order):
            int32 (already quantised) or float32, ``Hv = 1`` or one per head.
        head_dim: ``D`` when ``Hv > 1`` (column ``c`` uses head ``c // D``).
        out: ``[N, F]`` written in full.
        arithmetic: ``int32`` or ``float32``.
        x_levels: quantisation levels of ``x`` (int32 mode).
        w_scale, w_levels: the scale and levels ``vals`` were quantised with.
        row_scale: ``[N]`` applied to each output row after merging (mean).
        col_scale: ``[N]`` applied to each input row of ``x`` before the DPUs.

    Shapes:
        x, out ``[N, F]``; vals ``[nnz, Hv]``; row_scale, col_scale ``[N]``.
    """
    n, width = out.shape
    xin = x if col_scale is None else x * col_scale[:, None].astype(x.dtype)
    if arithmetic == "int32":
        xq, x_scale = quantize(xin, x_levels)
        acc = np.zeros((n, width), dtype=np.int64)
        dtype = np.int32
    else:
        xq, x_scale = np.asarray(xin, dtype=np.float32), 1.0
        acc = np.zeros((n, width), dtype=np.float32)
        dtype = np.float32
    chunk = even_bounds(width, plan.ds)
    overflow = 0
    first = np.ones(plan.ds, dtype=bool)
    for q in range(plan.num_clusters):
        s, k = divmod(q, plan.ds)
        c0, c1 = int(chunk[k]), int(chunk[k + 1])
        cw = c1 - c0
        if cw == 0:
            continue
        cwp = cw + (cw % 2)  # 8-byte DMA alignment of 4-byte elements
        r0, r1 = int(plan.col_bounds[s]), int(plan.col_bounds[s + 1])
        xbuf = np.zeros((r1 - r0, cwp), dtype=dtype)  # this cluster's MRAM copy of X
        xbuf[:, :cw] = xq[r0:r1, c0:c1]
        if head_dim is None:
            vk, colhead = vals, np.zeros(cwp, dtype=np.int64)
        else:
            h0, h1 = c0 // head_dim, (c1 - 1) // head_dim + 1
            vk = np.ascontiguousarray(vals[:, h0:h1])
            colhead = np.minimum((c0 + np.arange(cwp)) // head_dim - h0, h1 - h0 - 1).astype(np.int64)
        sl = plan.cluster(q)
        starts, stops = plan.row_start[sl], plan.row_stop[sl]
        buf = np.empty((n, cwp), dtype=dtype)  # the DPUs' output rows, retrieved to the host
        work = int(sd.cum[s, -1]) * cwp
        if arithmetic == "int32":
            ovf = np.zeros(starts.shape[0], dtype=np.int64)
            _dpus_int(starts, stops, sd.indptr[s], sd.local, vk, colhead, xbuf, buf, ovf, work=work)
            overflow += int(ovf.sum())
            overflow += int(_merge_int(buf, acc, c0, cw, bool(first[k]), work=n * cw))
        else:
            _dpus_float(starts, stops, sd.indptr[s], sd.local, vk, colhead, xbuf, buf, work=work)
            if first[k]:
                acc[:, c0:c1] = buf[:, :cw]
            else:
                acc[:, c0:c1] += buf[:, :cw]
        first[k] = False
    scale = x_scale * (w_scale if arithmetic == "int32" else 1.0)
    res = acc.astype(np.float64) * scale if arithmetic == "int32" else acc
    if row_scale is not None:
        res = res * row_scale[:, None]
    out[...] = res
    return ExecStats(overflow, x_scale, w_scale if arithmetic == "int32" else 1.0,
                     x_levels if arithmetic == "int32" else 0, w_levels if arithmetic == "int32" else 0)
