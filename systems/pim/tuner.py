"""Pick the layout ``(sp, ds, balance, tasklet_balance)`` with the cost model.

PyGim's tuner scores two layouts, ``(sp, ds) = (1, 32)`` and ``(2, 16)``, with
two balancing policies. We score every pair whose cluster count divides the
ranks (21 pairs on 32 ranks: ``sp * ds`` in 1, 2, 4, 8, 16, 32), with
``ds`` no wider than the features and ``sp`` no larger than the nodes, times
both policies at the DPU and the tasklet level, and keep the feasible layout of
least per-call time (transfer + kernel + retrieve + merge; the one-off load is
reported, not optimised). Options fixed by ``configure`` narrow the search.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .costmodel import Cost, estimate
from .errors import PimInfeasibleError
from .hostrates import HostRates
from .machine import Machine
from .partition import BALANCES, Plan, make_plan, valid_pairs

__all__ = ["Choice", "tune"]


@dataclass(frozen=True)
class Choice:
    """The chosen layout, its cost at the tuning width and how many layouts were scored."""

    plan: Plan
    cost: Cost
    width: int
    scored: int
    infeasible: int

    def as_dict(self) -> dict:
        return {**self.plan.label(), "tuned_width": self.width, "layouts_scored": self.scored,
                "layouts_infeasible": self.infeasible, "modeled_per_call_s": self.cost.total_s}


def tune(cum_for_sp: Callable[[int], np.ndarray], machine: Machine, host: HostRates, num_rows: int,
         num_cols: int, width: int, arithmetic: str = "int32", *, sp: int | None = None,
         ds: int | None = None, balance: str | None = None, tasklet_balance: str | None = None,
         head_dim: int | None = None) -> Choice:
    """Score every allowed layout and return the fastest feasible one.

    Args:
        cum_for_sp: ``sp -> slice_row_cum(view, sp)`` (the caller caches it).
        machine, host: the PIM machine and host merge rates.
        num_rows, num_cols: the view's shape.
        width: dense columns to tune for.
        arithmetic: ``int32`` or ``float32``.
        sp, ds, balance, tasklet_balance: fix a dimension (default: search it).
        head_dim: ``D`` when nonzeros carry one value per head.

    Raises:
        PimInfeasibleError: no allowed layout fits the machine; the message
            names the limits the best candidate breaks, or the fixed ``sp``/``ds``
            that the machine cannot host.
    """
    pairs = [(a, b) for a, b in valid_pairs(machine, num_rows, max(width, 1))
             if (sp is None or a == sp) and (ds is None or b == ds)]
    if not pairs:
        if sp is not None and ds is not None and machine.ranks % (sp * ds) == 0:
            pairs = [(sp, ds)]  # fixed by the user although wider than the features: allowed, chunks idle
        else:
            raise PimInfeasibleError(
                f"no (sp, ds) layout is allowed for sp={sp}, ds={ds} at width {width} on {machine.ranks} ranks: "
                f"sp * ds must divide the ranks, ds <= width and sp <= {num_rows} nodes; pick e.g. "
                f"{valid_pairs(machine, num_rows, max(width, 1))[-4:]}")
    best: tuple | None = None
    fallback: tuple | None = None
    scored = infeasible = 0
    for a, b in pairs:
        cum = cum_for_sp(a)
        for bal in (BALANCES if balance is None else (balance,)):
            for tbal in (BALANCES if tasklet_balance is None else (tasklet_balance,)):
                plan = make_plan(cum, machine, a, b, bal, tbal, num_cols=num_cols)
                cost = estimate(plan, machine, host, width, arithmetic, head_dim=head_dim)
                scored += 1
                if not cost.feasible:
                    infeasible += 1
                    if fallback is None or len(cost.violations) < len(fallback[1].violations):
                        fallback = (plan, cost)
                    continue
                if best is None or cost.total_s < best[1].total_s:
                    best = (plan, cost)
    if best is None:
        plan, cost = fallback
        lims = "; ".join(str(v) for v in cost.violations)
        raise PimInfeasibleError(f"no feasible PIM layout among {scored} scored on '{machine.name}' "
                                 f"({machine.path}) at width {width}; e.g. sp={plan.sp}, ds={plan.ds} "
                                 f"breaks {lims}", cost.violations)
    return Choice(best[0], best[1], width, scored, infeasible)
