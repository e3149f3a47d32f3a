"""One SpMM kernel variant: which loop, how rows are split, how many threads.

A :class:`Variant` names a point of the space the auto-tuner searches
(Note [variant knobs] in :mod:`~gnnbench.systems.isplib.spmm_numba`), and
:func:`run_variant` executes it. The default variant is what a kernel uses when
the tuning cache has no entry for its graph, width and dtype.

Note [thread count per call]
    ``numba.set_num_threads`` is per calling thread and sticky, and the
    harness may have limited the thread count for a run (``--threads``). A
    variant's ``threads`` is therefore an upper bound: a call uses
    ``min(variant.threads, numba.get_num_threads())`` and restores the previous
    value afterwards, so a tuned choice never oversubscribes a limited run.

Note [no feature tiles]
    Issue 19 asked for feature-column tiles (sum columns ``c .. c+T-1`` of
    every row, then the next ``T``) sized so that the gathered slice of ``x``
    stays in the last-level cache, as a tuning dimension. They are not one,
    because on the machine they were meant for they only lose: a random row
    gather is latency-bound, the adjacent lines of a row arrive about as
    fast as one line, so cutting rows into ``F / T`` tiles multiplies the
    random accesses (and the index reads) by ``F / T`` and gains nothing
    back, even when the whole ``x`` is several times the LLC. The variant
    space therefore keeps the whole row per gather, and the output stays in
    the untiled summation order.

    Nor are blocks of *sources* (``K`` passes, each summing only the edges
    whose source lies in one range of ``x``'s rows): each pass needs its own
    copy of the indices, and the gain was confined to one cell (R-MAT's hubs
    at the widest width), short of making a layout per ``K`` worth it. Nor
    is the order the output rows are visited in: whatever an order gains in
    shared sources it loses in reading the indices and writing ``out`` out
    of sequence. The measurements of all three:
    ``results/studies/isplib-variants.md``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numba
import numpy as np

from gnnbench.systems.isplib.row_ops import STREAM_ALIGN

__all__ = ["Variant", "default_variant", "run_variant", "streams", "line_aligned_empty", "ThreadScope", "Dummies", "PARTITIONS", "KERNELS",
           "STORES"]

#: How rows are cut into the blocks that ``prange`` hands out.
#: ``rows``: equal row counts, one block per thread (OpenMP static);
#: ``nnz``: equal nonzeros (+1 per row), one block per thread;
#: ``nnz-dynamic``: equal nonzeros, 8 blocks per thread handed out one at a time.
PARTITIONS = ("rows", "nnz", "nnz-dynamic")
#: ``generic``: width known at run time; ``fixed``: width compiled in.
KERNELS = ("generic", "fixed")
#: How the width-specialised kernel writes its output rows: through the caches, or past them (Note [streaming stores]).
STORES = ("cached", "streaming")
_BLOCKS_PER_THREAD = {"rows": 1, "nnz": 1, "nnz-dynamic": 8}


@dataclass(frozen=True)
class Variant:
    """A point of the SpMM tuning space.

    Args:
        kernel: ``"generic"`` or ``"fixed"`` (width specialised at compile time).
        unroll: edges per inner iteration, 1, 4 or 8.
        prefetch: software prefetch distance in edges, 0 for none.
        partition: one of :data:`PARTITIONS`.
        threads: upper bound on threads (Note [thread count per call]).
        stores: one of :data:`STORES`; ``streaming`` takes effect only in the
            ``fixed`` kernel on line-aligned rows (:func:`streams`).
    """

    kernel: str = "generic"
    unroll: int = 4
    prefetch: int = 16
    partition: str = "nnz"
    threads: int = 0  # 0: all that numba may use
    stores: str = "cached"

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise ValueError(f"Variant.kernel must be one of {KERNELS} (got {self.kernel!r})")
        if self.unroll not in (1, 4, 8):
            raise ValueError(f"Variant.unroll must be 1, 4 or 8 (got {self.unroll!r})")
        if self.stores not in STORES:
            raise ValueError(f"Variant.stores must be one of {STORES} (got {self.stores!r})")
        if self.partition not in PARTITIONS:
            raise ValueError(f"Variant.partition must be one of {PARTITIONS} (got {self.partition!r})")
        if self.prefetch < 0 or self.threads < 0:
            raise ValueError(f"Variant.prefetch and threads must be >= 0 (got {self.prefetch}, {self.threads})")

    @property
    def label(self) -> str:
        """A short stable name, e.g. ``generic/u4/pf16/nnz/t2``, with ``/nt`` for streaming stores."""
        streamed = "/nt" if self.stores == "streaming" else ""
        return f"{self.kernel}/u{self.unroll}/pf{self.prefetch}/{self.partition}/t{self.threads or 'max'}{streamed}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Variant":
        return cls(**{k: d[k] for k in ("kernel", "unroll", "prefetch", "partition", "threads", "stores") if k in d})

    def num_blocks(self, threads: int) -> int:
        return max(1, threads) * _BLOCKS_PER_THREAD[self.partition]


#: Views with at least this many nonzeros default to the width-specialised kernel (Note [untuned default]).
FIXED_DEFAULT_MIN_NNZ = 1 << 20
#: The widest row the width-specialised kernel keeps on the stack by default (4 KiB of float64).
FIXED_DEFAULT_MAX_WIDTH = 512


def default_variant(nnz: int = 0, width: int = 0) -> Variant:
    """The untuned choice for a path over ``nnz`` nonzeros at ``width`` (Note [untuned default]).

    Note [untuned default]
        Width-generic, 4-edge unroll, prefetch 16 edges ahead, nonzero-balanced,
        all threads: in the tuner's timings (``benchmarks/bench_spmm.py``) the
        4-edge unroll beat one edge at a time on every case, and prefetching 16
        edges ahead gained on nearly every one.

        On a view of at least :data:`FIXED_DEFAULT_MIN_NNZ` nonzeros the
        default is the same loop width-specialised (``fixed``): its row
        accumulator lives on the stack and its inner loops have a constant
        trip count, and it ran up to twice as fast as the generic kernel
        (``benchmarks/bench_default_variant.py``). It costs a compilation per
        width and machine, seconds, on the first call (a warm-up epoch: Note
        [fair timing]); numba's disk cache keeps it for every later run. Below
        the threshold a call takes a few milliseconds and cannot repay that, so
        small graphs (every test's) stay generic. Before this, first-use tuning
        could not reach the specialised kernel at all: under a budget it is a
        candidate only once compiled (Note [tuning budget]), so runs kept the
        generic default. The figures: ``results/studies/isplib-variants.md``.
    """
    if nnz >= FIXED_DEFAULT_MIN_NNZ and 0 < width <= FIXED_DEFAULT_MAX_WIDTH:
        return Variant(kernel="fixed")
    return Variant()


def _effective_threads(variant: Variant) -> int:
    current = numba.get_num_threads()
    return current if variant.threads <= 0 else min(variant.threads, current)


def run_variant(variant: Variant, bounds: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                eids: np.ndarray | None, w: np.ndarray | None, x: np.ndarray, out: np.ndarray,
                row_scale: np.ndarray | None, col_scale: np.ndarray | None, dummies: "Dummies") -> None:
    """Run :func:`~gnnbench.systems.isplib.spmm_numba.spmm_rows` (or its fixed twin) as ``variant`` says.

    Args:
        variant: the choice.
        bounds: row blocks for ``variant.partition`` at the effective thread count.
        indptr, indices, eids: the CSR view (``eids`` None on the forward view).
        w: ``[E, 1]`` weights or None.
        x, out: ``[num_cols, F]`` and ``[num_rows, F]``, same float dtype.
        row_scale, col_scale: optional per-row / per-gathered-row factors.
        dummies: typed empty arrays standing in for absent optionals.
    """
    from gnnbench.systems.isplib.spmm_numba import spmm_rows, spmm_rows_fixed

    line = 64 // x.dtype.itemsize
    kernel = spmm_rows_fixed(x.shape[1], line) if variant.kernel == "fixed" else spmm_rows
    stream = streams(variant, out)
    with ThreadScope(variant):
        kernel(indptr, indices,
               dummies.index if eids is None else eids, eids is not None,
               dummies.weight if w is None else w, w is not None,
               x, out,
               dummies.vector if row_scale is None else row_scale, row_scale is not None,
               dummies.vector if col_scale is None else col_scale, col_scale is not None,
               bounds, variant.unroll, variant.prefetch, line, dummies.one, stream)


def streams(variant: Variant, out: np.ndarray) -> bool:
    """Whether ``variant`` writes ``out`` with streaming stores (Note [streaming stores]).

    Only the width-specialised kernel has them, and each store writes a whole
    aligned cache line, so ``out`` must start on a line and its rows be whole
    lines; otherwise the variant's rows go through the caches, as they would
    untuned. The framework allocates ``out`` (64-byte aligned under PyTorch
    and TensorFlow), so the check costs nothing and never copies.
    """
    return (variant.stores == "streaming" and variant.kernel == "fixed" and out.ndim == 2
            and out.ctypes.data % STREAM_ALIGN == 0 and out.strides[0] % STREAM_ALIGN == 0
            and out.strides[1] == out.itemsize)


def line_aligned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous array that starts on a cache line, as PyTorch and TensorFlow allocate."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + STREAM_ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % STREAM_ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


class ThreadScope:
    """Context manager applying a variant's thread count and schedule, then restoring both."""

    __slots__ = ("threads", "dynamic", "_prev_threads", "_prev_chunk")

    def __init__(self, variant: Variant):
        self.threads = _effective_threads(variant)
        self.dynamic = variant.partition == "nnz-dynamic"

    def __enter__(self) -> "ThreadScope":
        self._prev_threads = numba.get_num_threads()
        if self.threads != self._prev_threads:
            numba.set_num_threads(self.threads)
        self._prev_chunk = numba.set_parallel_chunksize(1) if self.dynamic else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prev_chunk is not None:
            numba.set_parallel_chunksize(self._prev_chunk)
        if self.threads != self._prev_threads:
            numba.set_num_threads(self._prev_threads)


@dataclass(frozen=True)
class Dummies:
    """Typed empty arrays passed for absent optional arguments (one numba signature for all cases).

    Args:
        index: ``[0]`` of the index dtype (stands in for ``eids``).
        weight: ``[0, 1]`` of the float dtype (stands in for ``w``).
        vector: ``[0]`` of the float dtype (stands in for the scales).
        one: ``1`` as a scalar of the float dtype.
    """

    index: np.ndarray
    weight: np.ndarray
    vector: np.ndarray
    one: Any

    @classmethod
    def make(cls, index_dtype: Any, float_dtype: Any) -> "Dummies":
        fdt = np.dtype(float_dtype)
        index = np.empty(0, dtype=index_dtype)
        # read-only like GraphView.edge_ids, so both share one numba signature
        index.setflags(write=False)
        return cls(index, np.empty((0, 1), dtype=fdt), np.empty(0, dtype=fdt), fdt.type(1))
