"""numba parallel sections that run serially below a size: :func:`parallel_above`.

Note [serial below a size]
    Launching a numba parallel section has a fixed cost: waking the pool's
    workers, handing out the chunks, waiting for the last. Under numba's
    ``workqueue`` layer (Note [thread pools] in
    :mod:`gnnbench.run.thread_pools`) it is about 100-200 us on an idle
    machine, and with another busy process beside the run each wake-up
    waits for a core: milliseconds. A sampled batch of 16 seeds has blocks
    of a few hundred edges, whose transpose, sampling and kernels take a
    few microseconds serially, each paying that launch several times. So a
    section whose work (edges, or destination rows times fanout, as each
    caller counts it) is below :data:`SERIAL_BELOW` runs a serial twin
    of the same code: the same Python function compiled without
    ``parallel``, where ``prange`` is ``range``. Every section given a twin
    writes disjoint slices per iteration (or sums integers), so the twin's
    result is bit for bit the parallel one's (``tests/runtime/test_serial.py``).
    The threshold comes from ``benchmarks/studies/bench_batch_cost.py``
    (``results/studies/batch_cost.md``, table "Serial or parallel"): the platform's
    CSR transpose of random graphs at 2 threads, serial twin against
    parallel section, interleaved, alone and beside a busy process. Below
    2^16 edges the parallel section never won by more than noise, and lost
    by an order of magnitude beside a busy process, whose second thread
    waits for a core; by 2^20 the two were even. So sections run serially
    below 2^16 units of work, and large graphs (the 64M-edge transpose of
    Note [parallel transpose]) keep every thread. The figures:
    ``results/studies/batch_cost.md`` and ``results/design_figures.md``.

    The twin is a separate function object with its own qualified name
    (``<name>_serial``): numba's disk cache keys a compiled function by its
    name, signature and bytecode, not by its ``parallel`` flag, so twins
    under one name would load each other's machine code.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from numba import njit

__all__ = ["SERIAL_BELOW", "ParallelAbove", "parallel_above"]

#: Note [serial below a size]: a section with less work than this runs serially.
SERIAL_BELOW = 1 << 16


class ParallelAbove:
    """A numba function compiled twice, parallel and serial; a call runs the serial twin when
    ``work(*args)`` is below :data:`SERIAL_BELOW` (Note [serial below a size]).

    Attributes:
        parallel, serial: the two numba dispatchers, callable on their own (tests compare them).
    """

    def __init__(self, py_func: Callable, work: Callable[..., int], options: dict[str, Any]):
        self.parallel = njit(parallel=True, **options)(py_func)
        self.serial = njit(**options)(_renamed(py_func, "_serial"))
        self._work = work
        self.__doc__, self.__name__, self.__wrapped__ = py_func.__doc__, py_func.__name__, py_func

    def twin(self, *args: Any) -> Any:
        """The dispatcher a call with ``args`` runs: the serial twin below :data:`SERIAL_BELOW` of work, else the
        parallel one (what asks whether a call would compile must ask the right one)."""
        return self.serial if self._work(*args) < SERIAL_BELOW else self.parallel

    def __call__(self, *args: Any) -> Any:
        return self.twin(*args)(*args)


def parallel_above(work: Callable[..., int], **options: Any) -> Callable[[Callable], ParallelAbove]:
    """Decorator: ``@parallel_above(lambda indices, *_: indices.shape[0], cache=True)`` compiles the function
    with ``njit(parallel=True, **options)`` and its serial twin with ``njit(**options)``.

    Args:
        work (callable): the call's arguments -> its amount of work, compared with :data:`SERIAL_BELOW`.
        options: numba ``njit`` options shared by both (``cache``, ``fastmath``, ...).
    """
    return lambda py_func: ParallelAbove(py_func, work, options)


def _renamed(py_func: Callable, suffix: str) -> Callable:
    """A copy of ``py_func`` whose name and qualified name end in ``suffix`` (its own disk-cache entry)."""
    twin = types.FunctionType(py_func.__code__, py_func.__globals__, py_func.__name__ + suffix,
                              py_func.__defaults__, py_func.__closure__)
    twin.__qualname__ = py_func.__qualname__ + suffix
    twin.__module__ = py_func.__module__
    return twin
