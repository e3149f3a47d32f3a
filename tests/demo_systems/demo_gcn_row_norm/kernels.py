"""``reference``'s kernels, unchanged: this demo's bug is in its model (``model.py``).

The kernels are correct, so the operator suite passes; verify's model check,
pointed at ``demo_gcn_row_norm.model:MODELS`` (Note [model check]), must fail
on ``model gcn``.
"""
from __future__ import annotations

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)
