"""Operator fallback: a system that implements some operators borrows the rest from another.

``gnnbench run --system extsp --model gat --fallback reference`` trains GAT on
a system that implements only SpMM: ``sddmm(op=add)`` and ``edge_softmax``
run on ``reference``. It is opt-in, and the row says what was borrowed.

Note [fallback accounting]
    A borrowed operator runs the lender's own glue on the lender's own
    prepared graph (:class:`_LentGraph`, whose views are
    :class:`BorrowedView`), so the lender's kernels see exactly what they see
    when it runs alone. The kernel clock (Note [kernel time]) files a call made
    on a borrowed view under the lender, apart from the system's own kernels:
    ``kernel_median_s`` stays the system's own share, and the row's
    ``extra.fallback`` holds the borrowed operators, the lender's kernel time
    and its share of all kernel time. The epoch still contains the lender's
    time, so ``compare`` marks such rows and never ranks them as the
    system's own figures.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gnnbench.errors import UnavailableError, UserError
from gnnbench.runtime.glue import BoundGraph, OperatorImpl, SystemGlue
from gnnbench.runtime.graph import Graph, GraphView

__all__ = ["BorrowedView", "FallbackGraph", "find_operator", "check_fallback", "fallback_summary"]


@dataclass(frozen=True, eq=False)
class BorrowedView(GraphView):
    """A graph view handed to a lender's kernel; ``lender`` names the system that lent it."""

    lender: str = ""

    @classmethod
    def of(cls, view: GraphView, lender: str) -> "BorrowedView":
        return cls(view.indptr, view.indices, view.edge_ids, view.row_degree, view.col_degree, view.num_rows,
                   view.num_cols, view.transposed, view.graph, view.prepared, lender)


class _LentGraph(BoundGraph):
    """The graph bound to the lender: its own prepared format, in views marked as borrowed."""

    def __init__(self, graph: Graph, system: SystemGlue):
        super().__init__(graph, system)
        self._lent_views: dict[bool, BorrowedView] = {}

    def view(self, transposed: bool = False) -> GraphView:
        view = self._lent_views.get(transposed)
        if view is None:
            view = self._lent_views[transposed] = BorrowedView.of(super().view(transposed), self.system.name)
        return view


class FallbackGraph(BoundGraph):
    """A graph bound to ``system``, with ``lender`` bound beside it for the operators ``system`` lacks.

    Attributes:
        lent: the lender's bound graph.
        borrowed: the operators that ran on the lender, e.g. ``sddmm(op=add)``.
    """

    def __init__(self, graph: Graph, system: SystemGlue, lender: SystemGlue):
        super().__init__(graph, system)
        self.lent = _LentGraph(graph, lender)
        self.borrowed: set[str] = set()

    def prepare(self) -> float:
        """Both systems' formats; the system's own seconds stay in ``prepare_time_s``."""
        own = super().prepare()
        self.lent.prepare()
        return own + self.lent.prepare_time_s


def _label(operator: str, attrs: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in attrs.items())
    return f"{operator}({shown})" if shown else operator


def find_operator(graph: BoundGraph, operator: str, attrs: dict[str, Any]) -> tuple[OperatorImpl, BoundGraph]:
    """The kernel for ``operator`` and the bound graph to call it on: the system's, else the lender's.

    Raises:
        UnavailableError: neither the system nor its lender (if any) implements it.
    """
    impl = graph.system.find(operator, attrs)
    if impl is not None:
        return impl, graph
    lent = graph.lent if isinstance(graph, FallbackGraph) else None
    if lent is not None:
        impl = lent.system.find(operator, attrs)
        if impl is not None:
            graph.borrowed.add(_label(operator, attrs))
            return impl, lent
        raise UnavailableError(
            f"neither system '{graph.system.name}' nor its fallback '{lent.system.name}' implements "
            f"{_label(operator, attrs)}; they implement: {', '.join(graph.system.implemented())} and "
            f"{', '.join(lent.system.implemented())}")
    raise UnavailableError(
        f"system '{graph.system.name}' does not implement {_label(operator, attrs)} (add `--fallback reference` "
        f"to borrow the operators it lacks); it implements: {', '.join(graph.system.implemented())}")


def check_fallback(system: str, fallback: str | None, framework: str = "torch", device: str = "cpu") -> None:
    """Refuse a fallback that can never work, before any run starts.

    Raises:
        UserError: ``fallback`` is unknown, broken, a native baseline, ``system``
            itself, or cannot run with this framework and device.
    """
    if fallback is None:
        return
    from gnnbench.runtime.registry import system_info

    if fallback == system:
        raise UserError(f"--fallback {fallback} names the system itself; name another kernel system, e.g. reference")
    info = system_info(fallback)
    if info.kind != "kernel":
        raise UserError(f"--fallback {fallback} is a native baseline; the fallback must be a kernel system, "
                        f"e.g. reference")
    if system_info(system).kind != "kernel":
        raise UserError(f"--fallback applies to kernel systems; '{system}' is a native baseline")
    reason = info.unavailable_reason(framework, device)
    if reason:
        raise UserError(f"fallback system '{fallback}' is unavailable: {reason}")


def fallback_summary(graph: FallbackGraph, lent_seconds: list[float], own_seconds: list[float]) -> dict[str, Any]:
    """The row's ``extra.fallback`` (Note [fallback accounting]).

    Args:
        lent_seconds: the lender's kernel seconds in each timed epoch.
        own_seconds: the system's own kernel seconds in the same epochs.
    """
    from gnnbench.core.measurement import Measurement
    from gnnbench.runtime.registry import system_hash

    lent = Measurement(tuple(lent_seconds)).median if lent_seconds else None
    total = [a + b for a, b in zip(lent_seconds, own_seconds)]
    share = None
    if lent_seconds and sum(total) > 0:
        share = sum(lent_seconds) / sum(total)
    return {
        "system": graph.lent.system.name,
        "system_version": graph.lent.system.version,
        "system_hash": system_hash(graph.lent.system.name),
        "operators": sorted(graph.borrowed),
        "kernel_time_s": lent,
        "kernel_share": share,
        "prepare_time_s": graph.lent.prepare_time_s,
    }
