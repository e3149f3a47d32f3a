"""Expected failures: the CLI prints one line for these and exits with status 2.

Anything else is a bug in gnnbench or a system and keeps its traceback.
"""
from __future__ import annotations

__all__ = ["UserError", "BoundaryError", "UnavailableError"]


class UserError(Exception):
    """Bad input from the user: a flag, a name, a file. ``str(err)`` is the one line shown."""


class BoundaryError(UserError, TypeError):
    """A tensor handed to a kernel violates its declared contract.

    Attributes:
        operator: the kernel (``system.kernel``) being called.
        argument: the offending argument's name.
    """

    def __init__(self, operator: str, argument: str, problem: str):
        self.operator, self.argument, self.problem = operator, argument, problem
        super().__init__(f"{operator}: argument '{argument}' {problem}")


class UnavailableError(UserError):
    """A system, framework or peer that cannot run here; the message says why and what to do."""
