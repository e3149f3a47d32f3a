"""The transposed CSR of a graph by a parallel counting sort by source, for ``Graph.view(transposed=True)``.

Note [linear transpose]
    The transposed view (rows are sources) was built with a stable
    ``argsort`` of the sources: ``O(E log E)`` comparisons on one core plus
    four ``E``-long int64 temporaries (sources, order, repeated
    destinations, permuted destinations). At 64M edges that sort was most
    of isplib's ``prepare`` (itself five times DGL's own CSC build), and the
    temporaries 2 GiB (``results/design_figures.md``). The CSR by
    destination is already sorted by destination, so a counting sort by
    source is stable for free: walk the rows in order and drop each edge at
    its source's next free slot. One
    pass, ``O(E + N)``, no temporary but the cursors; the result is
    identical to the stable sort's (within a source row, destinations and
    edge ids ascend).

Note [parallel transpose]
    On one core the counting sort was still most of isplib's prepare at 64M
    edges (Note [prepare at scale] in isplib's ``prepared.py``;
    ``results/design_figures.md``): a random 16-byte scatter per edge,
    latency-bound, so more cores help.
    The destination rows are cut into ``B`` blocks of equal nonzeros, one
    per thread:

    1. each block counts its sources into its own row of a ``[B, N]``
       histogram (no atomics);
    2. per source ``j`` (in parallel over ``j``), the column sum is its
       out-degree, whose prefix sum is ``indptr_t``, and block ``b``'s
       cursor starts at ``indptr_t[j]`` plus the counts of blocks before it;
    3. each block walks its rows in order and scatters from its cursors.

    Block ``b`` places its edges of source ``j`` after those of every
    earlier block and in row order within itself, so the result is the
    serial (stable) one exactly, whatever ``B`` is. The histogram costs
    ``8 B N`` bytes, capped at :data:`_MAX_HISTOGRAM_BYTES` by using fewer
    blocks; :func:`column_counts` (step 1 and the column sums, over
    positions rather than rows) is the parallel ``bincount`` behind
    ``Graph.out_degree``.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from gnnbench.runtime.serial import parallel_above

__all__ = ["transpose_csr", "column_counts", "warm_up"]

#: Note [parallel transpose]: the per-block histograms stay under this many bytes.
_MAX_HISTOGRAM_BYTES = 256 << 20


# each section serial below a size (Note [serial below a size])
@parallel_above(lambda indices, *_: indices.shape[0], cache=True)
def _block_counts(indices, position_bounds, counts):
    for b in prange(position_bounds.shape[0] - 1):
        row = counts[b]
        for p in range(position_bounds[b], position_bounds[b + 1]):
            row[indices[p]] += 1


@parallel_above(lambda counts, *_: counts.size, cache=True)
def _column_sums(counts, totals):
    for j in prange(counts.shape[1]):
        s = 0
        for b in range(counts.shape[0]):
            s += counts[b, j]
        totals[j] = s


@parallel_above(lambda counts, *_: counts.size, cache=True)
def _block_cursors(counts, starts):
    """Turn each column of ``counts`` into the blocks' first free slots, in place."""
    for j in prange(counts.shape[1]):
        q = starts[j]
        for b in range(counts.shape[0]):
            c = counts[b, j]
            counts[b, j] = q
            q += c


@parallel_above(lambda indptr, indices, *_: indices.shape[0], cache=True)
def _scatter_blocks(indptr, indices, row_bounds, cursors, indices_t, edge_ids):
    for b in prange(row_bounds.shape[0] - 1):
        cursor = cursors[b]
        for i in range(row_bounds[b], row_bounds[b + 1]):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                q = cursor[j]
                indices_t[q] = i
                edge_ids[q] = p
                cursor[j] = q + 1


def _num_blocks(num_nodes: int, blocks: int | None) -> int:
    if blocks is None:
        blocks = numba.get_num_threads()
    return max(1, min(blocks, _MAX_HISTOGRAM_BYTES // (8 * max(num_nodes, 1))))


def _histogram(indices: np.ndarray, position_bounds: np.ndarray, num_nodes: int) -> np.ndarray:
    counts = np.zeros((position_bounds.shape[0] - 1, num_nodes), dtype=np.int64)
    _block_counts(indices, position_bounds, counts)
    return counts


def column_counts(indices: np.ndarray, num_nodes: int, blocks: int | None = None) -> np.ndarray:
    """``np.bincount(indices, minlength=num_nodes)`` on every thread (Note [parallel transpose]).

    Args:
        indices: ``[E]`` int32 or int64 node ids in ``[0, num_nodes)``.
        num_nodes: ``N``.
        blocks: position blocks counted apart (default: numba's thread count).

    Shapes:
        returns int64 ``[N]``.
    """
    b = _num_blocks(num_nodes, blocks)
    bounds = np.linspace(0, indices.shape[0], b + 1).round().astype(np.int64)
    totals = np.empty(num_nodes, dtype=np.int64)
    _column_sums(_histogram(indices, bounds, num_nodes), totals)
    return totals


def transpose_csr(indptr: np.ndarray, indices: np.ndarray, num_nodes: int,
                  blocks: int | None = None, *,
                  num_cols: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr_t, indices_t, edge_ids)`` of the transpose, in the index dtype of ``indices``.

    A stable counting sort by source on every thread (Notes [linear
    transpose], [parallel transpose]): the same arrays as
    ``edge_ids = argsort(indices, kind="stable")``, ``indices_t = dst[edge_ids]``.

    Args:
        indptr: ``[N + 1]`` offsets of the CSR by destination.
        indices: ``[E]`` sources, int32 or int64.
        num_nodes: ``N``, the rows of the CSR by destination.
        blocks: row blocks scattered in parallel (default: numba's thread count).
        num_cols: ``S``, its columns (default ``N``); a block has ``S >= N``.

    Shapes:
        returns ``[S + 1]``, ``[E]``, ``[E]``.
    """
    idt = indices.dtype
    num_cols = num_nodes if num_cols is None else int(num_cols)
    indptr64 = np.asarray(indptr, dtype=np.int64)
    b = _num_blocks(num_cols, blocks)
    # equal nonzeros per block; the rows' bounds and the positions where they start
    row_bounds = np.searchsorted(indptr64, np.linspace(0, indptr64[-1], b + 1), side="left").astype(np.int64)
    row_bounds[0], row_bounds[-1] = 0, num_nodes
    row_bounds = np.maximum.accumulate(row_bounds)
    counts = _histogram(indices, indptr64[row_bounds], num_cols)
    degree = np.empty(num_cols, dtype=np.int64)
    _column_sums(counts, degree)
    indptr_t = np.zeros(num_cols + 1, dtype=np.int64)
    np.cumsum(degree, out=indptr_t[1:])
    del degree
    _block_cursors(counts, indptr_t[:-1])
    indices_t = np.empty(indices.shape[0], dtype=idt)
    edge_ids = np.empty(indices.shape[0], dtype=idt)
    _scatter_blocks(indptr, indices, row_bounds, counts, indices_t, edge_ids)
    return (indptr_t.astype(idt) if idt == np.int32 else indptr_t), indices_t, edge_ids


def warm_up() -> None:
    """Runs the transpose once on a two-node graph in both index dtypes, before a run's clock starts.

    A process's first call of any cached numba function initialises numba's
    CPU target (about half a second on this machine, results/design_figures.md),
    start-up that lands in whichever system first asks the platform for a
    transposed view. The harness calls this beside the system's imports, so
    each system's ``prepare`` holds only the work its graph costs.
    """
    for dtype in (np.int32, np.int64):
        transpose_csr(np.array([0, 1, 1], dtype=np.int64), np.array([1], dtype=dtype), 2)
