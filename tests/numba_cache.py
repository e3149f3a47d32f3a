"""numba's disk cache filled once, before the test workers start (``tests/conftest.py``).

Note [numba compiled once per test run]
    isplib's kernels take minutes to compile cold (its warm-up compiles
    every kernel for one index and float dtype pair), and dgnn runs the same
    kernels for every operator but GAT's. Under ``-n 2`` two workers met
    them at once, each compiling the same signatures (numba writes a cache
    entry only when its compilation ends), so a fresh clone's CI paid the
    cold compile twice. Now the controller process, before any worker
    starts, runs :data:`WARM` here in ``shares`` processes, one share each,
    and every worker loads what it needs from the cache beside the kernels'
    sources (the cache that Note [parallel tests] in ``tests/parallel.py``
    shares on purpose). Each signature is compiled once per run.

    The shares compile different signatures of the same functions at
    once, and numba's index of a function's cache entries is a file that
    each compilation reads, extends and writes back; two writers could
    each drop the other's entry. So the warm-up processes write an index
    under one ``flock`` (:func:`_serialised_index_writes`), which makes the
    read, extend and write one step.

    :data:`WARM` lists what the tests run: isplib at float64 (the
    conformance suite's dtype for a system with both, at int32 and int64
    indices) and at float32 with int64 indices (a run's dtype), dgnn's own
    fused kernels at every pair its tests take. A pair left out is compiled
    by the first test that needs it, as before.

    It runs on the whole suite (pytest given no paths: ``testpaths``), or
    whenever ``GNNBENCH_WARM_NUMBA=1``; ``GNNBENCH_WARM_NUMBA=0`` turns it
    off. With a warm cache it costs the loading, a few seconds.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

#: (system, index dtype, float dtype) pairs to compile, in the order they are handed to shares
WARM = (("isplib", "int64", "float64"), ("isplib", "int64", "float32"), ("isplib", "int32", "float64"),
        ("dgnn", "int64", "float64"), ("dgnn", "int64", "float32"), ("dgnn", "int32", "float64"),
        ("dgnn", "int32", "float32"))


def share_of(share: int, shares: int) -> tuple[tuple[str, str, str], ...]:
    """The pairs share ``share`` of ``shares`` compiles: every ``shares``-th, from the ``share``-th."""
    return WARM[share::shares]


@contextmanager
def _serialised_index_writes(lock: Path):
    """numba's cache-index writes of this process under an exclusive ``flock`` on ``lock``
    (Note [numba compiled once per test run])."""
    from numba.core import caching

    save = caching.IndexDataCacheFile.save

    def locked_save(self, key, data):
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            save(self, key, data)

    caching.IndexDataCacheFile.save = locked_save
    try:
        yield
    finally:
        caching.IndexDataCacheFile.save = save


def warm(pairs, lock: Path) -> None:
    """Compile (or load) each system's kernels at each pair."""
    import numpy as np

    from gnnbench.systems.dgnn import kernels as dgnn
    from gnnbench.systems.isplib import kernels as isplib

    warm_up = {"isplib": isplib.warm_up, "dgnn": dgnn.warm_up}
    with _serialised_index_writes(lock):
        for system, index_dtype, float_dtype in pairs:
            start = time.perf_counter()
            warm_up[system](np.dtype(index_dtype), np.dtype(float_dtype))
            print(f"{system} {index_dtype} {float_dtype}: {time.perf_counter() - start:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fill numba's disk cache with one share of WARM")
    parser.add_argument("--share", type=int, default=0)
    parser.add_argument("--shares", type=int, default=1)
    parser.add_argument("--lock", type=Path, required=True)
    args = parser.parse_args(argv)
    warm(share_of(args.share, args.shares), args.lock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
