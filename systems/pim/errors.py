"""The two ways a PIM aggregation refuses to run: no feasible layout, or int32 overflow."""
from __future__ import annotations

from gnnbench.errors import UserError

__all__ = ["PimInfeasibleError", "PimOverflowError"]


class PimInfeasibleError(UserError):
    """A configuration breaks a hardware limit of the PIM machine.

    Attributes:
        violations: the broken limits (:class:`~.costmodel.Violation`), each naming its limit.
    """

    def __init__(self, message: str, violations=()):
        self.violations = tuple(violations)
        super().__init__(message)


class PimOverflowError(UserError, ArithmeticError):
    """An int32 aggregation overflowed (Note [int32 overflow] in execute.py).

    Attributes:
        count: elements whose exact value did not fit int32.
    """

    def __init__(self, message: str, count: int):
        self.count = count
        super().__init__(message)
