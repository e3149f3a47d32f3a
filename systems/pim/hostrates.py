"""Host merge throughput: row copies and row additions, measured once on this machine.

PyGim's tuner prices the host merge of the slices' partial results with two
measured rates, rows copied per ms and rows added per ms, by row width. With
``[host] merge = "measure"`` (the default) we measure both here, once per
process and row width, on the running machine; with ``merge = "table"`` the
machine file's tables are used instead (PyGim's own host, for example).

The measurement copies (adds) a ``[R, w]`` block into the first ``w`` columns
of an ``[R, F]`` accumulator with NumPy (one thread): exactly the access
pattern of merging one dense chunk of width ``w`` into ``F`` columns, whose
cache lines are touched whole even when ``w`` is narrow. ``R = 2^18`` rows
(fewer when the accumulator would exceed 64 MB); the best of 9 repetitions
counts (the machine may be shared).
"""
from __future__ import annotations

import time

import numpy as np

from .machine import Machine, interp_time_per_item

__all__ = ["HostRates", "measured_rates"]

_ROWS = 1 << 18
_REPEATS = 9
#: (kind, width, accumulator width, dtype name) -> rows per second, filled on first use
_CACHE: dict[tuple[str, int, int, str], float] = {}


def _measure(kind: str, width: int, total: int, dtype: np.dtype) -> float:
    rows = max(min(_ROWS, (1 << 24) // total), 1024)  # the accumulator stays under 64 MB
    src = np.ones((rows, width), dtype=dtype)
    dst = np.zeros((rows, total), dtype=dtype)
    view = dst[:, :width]
    best = float("inf")
    for _ in range(_REPEATS):
        t0 = time.perf_counter()
        if kind == "copy":
            view[...] = src
        else:
            view += src
        best = min(best, time.perf_counter() - t0)
    return rows / max(best, 1e-9)


def measured_rates() -> dict[str, float]:
    """Every rate measured so far in this process, as ``"kind/width/of total/dtype" -> rows per ms``."""
    return {f"{k}/{w}/of{t}/{d}": v / 1e3 for (k, w, t, d), v in sorted(_CACHE.items())}


class HostRates:
    """Rows per second the host copies and adds at a given row width.

    Args:
        machine: its ``host_merge`` mode selects measurement or tables.
    """

    def __init__(self, machine: Machine):
        self.machine = machine

    def _rate(self, kind: str, width: int, total: int, dtype: np.dtype) -> float:
        width = max(int(width), 1)
        if self.machine.host_merge == "table":
            table = self.machine.row_copy_rows_per_ms if kind == "copy" else self.machine.row_add_rows_per_ms
            return 1e3 / interp_time_per_item(table, width)
        key = (kind, width, max(int(total), width), np.dtype(dtype).name)
        if key not in _CACHE:
            _CACHE[key] = _measure(kind, width, key[2], np.dtype(dtype))
        return _CACHE[key]

    def copy_s(self, rows: int, width: int, total: int | None = None, dtype=np.int32) -> float:
        """Seconds to copy ``rows`` rows of ``width`` elements into an accumulator ``total`` wide."""
        return rows / self._rate("copy", width, total or width, dtype) if rows and width else 0.0

    def add_s(self, rows: int, width: int, total: int | None = None, dtype=np.int32) -> float:
        """Seconds to add ``rows`` rows of ``width`` elements into an accumulator ``total`` wide."""
        return rows / self._rate("add", width, total or width, dtype) if rows and width else 0.0

    def describe(self) -> dict:
        if self.machine.host_merge == "table":
            return {"source": f"machine file tables ({self.machine.path})"}
        return {"source": "measured on this host (NumPy, once per process)", "rows_per_ms": measured_rates()}
