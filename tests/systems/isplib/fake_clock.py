"""A tuning clock that advances only inside kernel calls, so budget tests do not depend on this machine's speed."""
from __future__ import annotations

from gnnbench.systems.isplib import tuning
from gnnbench.systems.isplib.variant import default_variant


class FakeClock:
    """Seconds that pass only inside kernel calls: ``cost_s(variant, nonzeros)`` each (Note [hard tuning budget]).

    Compiling a variant, or a busy machine, takes no fake time: on a clean
    clone numba compiles every variant on its first call, which on a slow CI
    runner alone can outlast a real-time budget.
    """

    def __init__(self, cost_s, run_kernels: bool = True):
        self.now, self.cost_s, self.longest = 0.0, cost_s, 0.0
        self.run_kernels = run_kernels  # False: no kernel runs (none compiles); every output is zeros

    def __call__(self) -> float:
        return self.now

    def install(self, monkeypatch) -> "FakeClock":
        real = tuning.run_variant

        def run_variant(v, bounds, indptr, indices, eids, w, x, out, *args):
            if self.run_kernels:
                real(v, bounds, indptr, indices, eids, w, x, out, *args)
            else:
                out.fill(0)
            cost = self.cost_s(v, int(indptr[-1]))
            self.now += cost
            self.longest = max(self.longest, cost)

        monkeypatch.setattr(tuning, "_clock", self)
        monkeypatch.setattr(tuning, "run_variant", run_variant)
        return self


def faster_than_default(v, nnz):
    """1 us per nonzero for the default, 0.8 us for every other variant: a winner the tuner must find."""
    return nnz * (1e-6 if v == default_variant() else 0.8e-6)
