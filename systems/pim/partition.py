"""Hybrid parallelism: how the adjacency and the dense matrix are cut over the DPUs.

Following PyGim, an aggregation ``out = A @ X`` (``A`` the ``N x N`` adjacency
of one graph view, rows = destinations, ``X`` the ``N x F`` features) is split
three ways:

1. **Column slices** (``sp``): ``A``'s columns, i.e. the source nodes, are cut
   into ``sp`` contiguous slices; slice ``s`` only needs rows
   ``col_bounds[s]:col_bounds[s+1]`` of ``X``.
2. **Dense chunks** (``ds``): ``X``'s ``F`` columns are cut into ``ds`` chunks.
   Each (slice, chunk) pair is one *cluster*; the ``sp * ds`` clusters must
   divide the machine's ranks, and each cluster owns ``ranks / (sp * ds)``
   whole ranks (a rank holds up to 64 DPUs).
3. **Rows to DPUs**: inside a cluster, all ``N`` rows of the slice go to the
   cluster's DPUs as contiguous ranges, balanced by row count (``rows``) or by
   the slice's nonzeros (``nnz``). Rows are never split across DPUs: a split
   row would need DPU-to-DPU communication, which UPMEM does not have.
   Inside a DPU, rows (``rows``) or nonzeros (``nnz``, a row may then be
   split between tasklets and combined in WRAM) go to the tasklets.

The host sums the ``sp`` partial results of each chunk. A :class:`Plan` holds
the per-DPU row ranges and work counts; it does not depend on ``F`` (the chunk
widths enter only the cost model), so one plan serves every layer width.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .jit import DualKernel
from .machine import Machine

__all__ = ["Plan", "SliceData", "BALANCES", "even_bounds", "slice_row_cum", "build_slices",
           "make_plan", "valid_pairs"]

BALANCES = ("rows", "nnz")


def even_bounds(n: int, parts: int) -> np.ndarray:
    """``parts + 1`` boundaries cutting ``range(n)`` into near-equal contiguous parts (sizes differ by <= 1)."""
    return (np.arange(parts + 1, dtype=np.int64) * n) // parts


def valid_pairs(machine: Machine, num_rows: int, width: int) -> list[tuple[int, int]]:
    """Every ``(sp, ds)`` whose cluster count divides the ranks, with ``sp <= N`` and ``ds <= width``."""
    out = []
    for c in range(1, machine.ranks + 1):
        if machine.ranks % c:
            continue
        for sp in range(1, c + 1):
            if c % sp == 0 and sp <= max(num_rows, 1) and c // sp <= max(width, 1):
                out.append((sp, c // sp))
    return out


@DualKernel
def _slice_counts(indptr, indices, slice_of_col, sp):
    n = indptr.shape[0] - 1
    counts = np.zeros((sp, n), np.int64)
    for r in numba.prange(n):
        for p in range(indptr[r], indptr[r + 1]):
            counts[slice_of_col[indices[p]], r] += 1
    return counts


@DualKernel
def _fill_slices(indptr, indices, slice_of_col, col_start, offsets, perm, local):
    n = indptr.shape[0] - 1
    for r in numba.prange(n):
        fill = offsets[:, r].copy()
        for p in range(indptr[r], indptr[r + 1]):
            j = indices[p]
            s = slice_of_col[j]
            q = fill[s]
            perm[q] = p
            local[q] = j - col_start[s]
            fill[s] = q + 1


def _slice_of_col(num_cols: int, col_bounds: np.ndarray) -> np.ndarray:
    sp = col_bounds.shape[0] - 1
    dtype = np.int8 if sp < 127 else np.int32
    return np.repeat(np.arange(sp, dtype=dtype), np.diff(col_bounds))


def slice_row_cum(indptr: np.ndarray, indices: np.ndarray, num_cols: int, sp: int) -> np.ndarray:
    """Prefix sums of nonzeros per row inside each column slice.

    Returns:
        ``cum`` of shape ``[sp, N + 1]``: ``cum[s, r]`` = nonzeros of slice
        ``s`` in rows ``< r``.
    """
    col_bounds = even_bounds(num_cols, sp)
    counts = _slice_counts(indptr, indices, _slice_of_col(num_cols, col_bounds), sp, work=indices.shape[0])
    cum = np.zeros((sp, counts.shape[1] + 1), dtype=np.int64)
    np.cumsum(counts, axis=1, out=cum[:, 1:])
    return cum


@dataclass(frozen=True, eq=False)
class SliceData:
    """The adjacency cut into ``sp`` column slices, as each DPU's MRAM sees it.

    Attributes:
        col_bounds: ``[sp + 1]`` source-node boundaries of the slices.
        indptr: ``[sp, N + 1]`` offsets into ``local``/``eid`` of each
            (slice, row).
        local: ``[nnz]`` int32 column index *relative to the slice start*:
            a DPU addresses only its slice of ``X``.
        eid: ``[nnz]`` canonical edge id of each stored nonzero (for weights).
        cum: ``[sp, N + 1]`` nonzeros of each slice before each row.
    """

    col_bounds: np.ndarray
    indptr: np.ndarray
    local: np.ndarray
    eid: np.ndarray
    cum: np.ndarray

    @property
    def sp(self) -> int:
        return self.col_bounds.shape[0] - 1


def build_slices(indptr: np.ndarray, indices: np.ndarray, edge_ids: np.ndarray | None,
                 num_cols: int, sp: int) -> SliceData:
    """Reorder a CSR view into ``sp`` column-slice CSRs (stable inside each row).

    Args:
        indptr, indices: the view's CSR (rows = destinations on the forward view).
        edge_ids: the view's canonical edge ids, or ``None`` when positions are ids.
        num_cols: columns of the view (nodes).
        sp: number of column slices.
    """
    col_bounds = even_bounds(num_cols, sp)
    slice_of_col = _slice_of_col(num_cols, col_bounds)
    cum = slice_row_cum(indptr, indices, num_cols, sp)
    base = np.concatenate([[0], np.cumsum(cum[:, -1])[:-1]]).astype(np.int64)
    offsets = cum + base[:, None]
    nnz = int(indices.shape[0])
    perm = np.empty(nnz, dtype=np.int64)
    local = np.empty(nnz, dtype=np.int32)
    _fill_slices(indptr, indices, slice_of_col, col_bounds[:-1].copy(), offsets, perm, local, work=nnz)
    eid = perm if edge_ids is None else np.asarray(edge_ids, dtype=np.int64)[perm]
    return SliceData(col_bounds, offsets, local, eid, cum)


@dataclass(frozen=True, eq=False)
class Plan:
    """Where every row of every cluster runs, and how much work each DPU gets.

    Clusters are numbered ``q = s * ds + k`` (slice ``s``, chunk ``k``); DPU
    arrays are flat over the DPUs in use, cluster by cluster
    (``cluster_offsets[q]:cluster_offsets[q+1]``).

    Attributes:
        sp, ds: slices and chunks.
        balance: DPU-level policy, ``rows`` or ``nnz``.
        tasklet_balance: tasklet-level policy, ``rows`` or ``nnz``.
        num_rows: ``N``.
        col_bounds: ``[sp + 1]`` slice boundaries (source nodes).
        cluster_offsets: ``[C + 1]`` offsets into the DPU arrays.
        dpu_rank: ``[D]`` global rank of each DPU.
        row_start, row_stop: ``[D]`` the DPU's rows ``[start, stop)``.
        nnz: ``[D]`` nonzeros of the DPU's rows in its slice.
        max_tasklet_nnz: ``[D]`` nonzeros of its busiest tasklet.
    """

    sp: int
    ds: int
    balance: str
    tasklet_balance: str
    num_rows: int
    col_bounds: np.ndarray
    cluster_offsets: np.ndarray
    dpu_rank: np.ndarray
    row_start: np.ndarray
    row_stop: np.ndarray
    nnz: np.ndarray
    max_tasklet_nnz: np.ndarray

    @property
    def num_clusters(self) -> int:
        return self.sp * self.ds

    @property
    def rows(self) -> np.ndarray:
        return self.row_stop - self.row_start

    def cluster(self, q: int) -> slice:
        return slice(int(self.cluster_offsets[q]), int(self.cluster_offsets[q + 1]))

    def label(self) -> dict:
        return {"sp": self.sp, "ds": self.ds, "balance": self.balance, "tasklet_balance": self.tasklet_balance}


def _row_bounds(cum_s: np.ndarray, n_dpus: int, balance: str) -> np.ndarray:
    n = cum_s.shape[0] - 1
    total = int(cum_s[-1])
    if balance == "rows" or total == 0:
        return even_bounds(n, n_dpus)
    targets = (np.arange(n_dpus + 1, dtype=np.float64) * total) / n_dpus
    bounds = np.searchsorted(cum_s, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(bounds)


def _tasklet_max(cum_s: np.ndarray, start: np.ndarray, stop: np.ndarray, nnz: np.ndarray,
                 tasklets: int, policy: str) -> np.ndarray:
    if policy == "nnz":
        return -(-nnz // tasklets)
    rows = stop - start
    edges = start[:, None] + (rows[:, None] * np.arange(tasklets + 1)[None, :]) // tasklets
    per = cum_s[edges[:, 1:]] - cum_s[edges[:, :-1]]
    return per.max(axis=1)


def make_plan(cum: np.ndarray, machine: Machine, sp: int, ds: int, balance: str = "nnz",
              tasklet_balance: str = "nnz", num_cols: int | None = None) -> Plan:
    """Assign rows to the DPUs of every cluster.

    Args:
        cum: :func:`slice_row_cum` for this ``sp``.
        machine: the PIM machine.
        sp, ds: column slices and dense chunks; ``sp * ds`` must divide ``machine.ranks``.
        balance: ``rows`` or ``nnz`` across the DPUs of a cluster (default: ``nnz``).
        tasklet_balance: ``rows`` or ``nnz`` across the tasklets of a DPU (default: ``nnz``).
        num_cols: columns of the view (default: ``N``, graphs are square).

    Raises:
        ValueError: ``sp * ds`` does not divide the ranks, or a policy is unknown.
    """
    if balance not in BALANCES or tasklet_balance not in BALANCES:
        raise ValueError(f"balance and tasklet_balance must be one of {BALANCES} "
                         f"(got {balance!r}, {tasklet_balance!r})")
    clusters = sp * ds
    if cum.shape[0] != sp:
        raise ValueError(f"cum has {cum.shape[0]} slices, expected sp={sp}")
    if clusters < 1 or machine.ranks % clusters:
        raise ValueError(f"sp * ds = {clusters} clusters must divide the machine's {machine.ranks} ranks")
    per_cluster = machine.ranks // clusters
    per_rank = np.asarray(machine.dpus_per_rank, dtype=np.int64)
    offsets, ranks, starts, stops, nnzs, tmaxs = [0], [], [], [], [], []
    for q in range(clusters):
        s = q // ds
        rk = np.arange(q * per_cluster, (q + 1) * per_cluster)
        dpu_rank = np.repeat(rk, per_rank[rk])
        bounds = _row_bounds(cum[s], dpu_rank.shape[0], balance)
        start, stop = bounds[:-1], bounds[1:]
        nnz = cum[s][stop] - cum[s][start]
        ranks.append(dpu_rank)
        starts.append(start)
        stops.append(stop)
        nnzs.append(nnz)
        tmaxs.append(_tasklet_max(cum[s], start, stop, nnz, machine.tasklets, tasklet_balance))
        offsets.append(offsets[-1] + dpu_rank.shape[0])
    n = cum.shape[1] - 1
    cat = np.concatenate
    return Plan(sp, ds, balance, tasklet_balance, n, even_bounds(n if num_cols is None else num_cols, sp),
                np.asarray(offsets, dtype=np.int64), cat(ranks), cat(starts), cat(stops), cat(nnzs), cat(tmaxs))
