"""gnnbench/run/jit_clock.py: numba compilation inside a block, counted once per outermost compile."""
from __future__ import annotations

import numba

from gnnbench.run.jit_clock import CompileClock


def test_an_outermost_compile_is_timed_once_and_a_compiled_kernel_costs_nothing():
    @numba.njit
    def inner(x):
        return x + 1

    @numba.njit
    def outer(x):
        return inner(x) * 2  # compiles inner inside outer's compile: one nest, one interval

    ticks = iter([10.0, 15.0])
    with CompileClock(lambda: next(ticks)) as jit:
        assert outer(1) == 4
    assert jit.seconds == 5.0
    with CompileClock(lambda: 1 / 0) as again:  # the clock is never read without a compile
        outer(2)
    assert again.seconds == 0.0


def test_compiles_outside_the_block_are_not_counted():
    @numba.njit
    def later(x):
        return x - 1

    with CompileClock() as jit:
        pass
    later(3)
    assert jit.seconds == 0.0
