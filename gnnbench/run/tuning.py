"""First-use tuning: the budget of a system's ``tune`` hook and the one call of it in a full-graph run.

The rules are Note [tune on first use] in :mod:`gnnbench.run.harness`, whose loop calls
:meth:`FirstUseTuning.after_epoch` after every epoch; the sampled loop tunes per class of block with
:data:`TUNE_BUDGET_MIN_S` (Note [tuning blocks] in :mod:`gnnbench.run.sampled`).
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from gnnbench.errors import UserError
from gnnbench.run.allocator import numpy_hugepage_advice
from gnnbench.run.environment import PeakMemory
from gnnbench.run.events import RunEvent, stderr_lines

__all__ = ["FirstUseTuning", "tune_budget_s", "TUNE_BUDGET_MIN_S", "TUNE_BUDGET_MAX_S"]

#: Bounds of the first-use tuning budget in seconds (Note [tune on first use]).
TUNE_BUDGET_MIN_S = 1.0
TUNE_BUDGET_MAX_S = 120.0


def tune_budget_s(first_epoch_s: float, epochs: int) -> float:
    """The first-use tuning budget (Note [tune on first use]): 5 % of a run of ``max(epochs, 200)`` epochs."""
    override = os.environ.get("GNNBENCH_TUNE_BUDGET_S")
    if override:
        try:
            value = float(override)
        except ValueError:
            raise UserError(f"GNNBENCH_TUNE_BUDGET_S must be a number of seconds (got {override!r})") from None
        if value <= 0:
            raise UserError(f"GNNBENCH_TUNE_BUDGET_S must be positive (got {override!r})")
        return value
    return min(TUNE_BUDGET_MAX_S, max(TUNE_BUDGET_MIN_S, 0.05 * max(epochs, 200) * first_epoch_s))


class FirstUseTuning:
    """Calls a system's ``tune`` hook once, after the first or second epoch (Note [tune on first use])."""

    def __init__(self, tuner, bound, epochs: int, extra: dict[str, Any],
                 report: Callable[[RunEvent], None] = stderr_lines, warmup: int = 0):
        self.tuner, self.bound, self.epochs, self.extra = tuner, bound, epochs, extra
        self.report = report
        self.warmup = warmup
        # the second epoch when it is a warm-up too, else the first; never past the last
        self.tune_after = min(1 if warmup >= 2 else 0, max(epochs - 1, 0))
        self.epoch_times: list[float] = []
        self.seconds: float | None = None
        self.peak_before = 0
        self.residue = 0  # bytes tuning left resident (Note [tune on first use])
        self._memory: PeakMemory | None = None

    def watch(self, memory: PeakMemory) -> None:
        self._memory = memory

    def after_epoch(self, index: int, seconds: float) -> None:
        """Called after every epoch (or pass) ``index`` that took ``seconds``; tunes once, at :attr:`tune_after`."""
        if self.tuner is None or index > self.tune_after:
            return
        self.epoch_times.append(seconds)
        if index == self.tune_after:
            self._tune(min(self.epoch_times), timed=self.warmup <= index)

    def _tune(self, epoch_s: float, timed: bool) -> None:
        budget = tune_budget_s(epoch_s, self.epochs)
        self.report(RunEvent("tune", text=f"budget {budget:.1f} s"))
        resident: int | None = None
        start = time.perf_counter()

        begun = False

        def starting() -> None:  # the tuner has work and has allocated nothing yet (Note [tune on first use])
            nonlocal resident, start, begun
            if begun:
                return  # a typed graph's later relation: the first one with work started the figures
            begun = True
            if self._memory is not None:
                self.peak_before = self._memory.peak_above_baseline()
                _release()
                resident = _resident_bytes()
            start = time.perf_counter()

        from gnnbench.runtime.sut import tuned_graphs

        targets = list(tuned_graphs([self.bound], budget))  # a typed graph: each relation, sharing the budget
        with numpy_hugepage_advice(False):  # Note [huge pages outside the epochs]
            results = [self.tuner(b.graph, views=(b.view(False), b.view(True)), budget_s=share, progress=self._log,
                                  starting=starting) for b, share in targets]
        if all(result is None for result in results):
            return
        self.seconds = time.perf_counter() - start
        self._log(f"tuned in {self.seconds:.2f} s (budget {budget:.1f} s); the choices are cached for later runs")
        records = [result.as_dict() if hasattr(result, "as_dict") else str(result) for result in results]
        self.extra["tuning"] = records[0] if len(records) == 1 else {"relations": records}
        if timed:
            self.extra["tuned_after_timed_epoch"] = True
        if resident is not None:
            _release()
            self.residue = max(0, _resident_bytes() - resident)
            _reset_peak()

    def _log(self, line: str) -> None:
        self.report(RunEvent("log", text=line))


def _release() -> None:
    from gnnbench.run.allocator import release_free_memory

    release_free_memory()


def _resident_bytes() -> int:
    from gnnbench.run.environment import _status_kib

    return (_status_kib("VmRSS") or 0) * 1024


def _reset_peak() -> None:
    """Restart the kernel's high-water mark (VmHWM) at the current RSS, so tuning's arrays are not the run's."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
