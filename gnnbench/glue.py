"""What generated glue registers, framework-neutral: a system and its graphs.

Each ``systems/<name>/_glue_<framework>.py`` builds one :class:`SystemGlue`
(named ``SYSTEM``) from its spec. :class:`BoundGraph` pairs a graph with the
system's prepared format, so ``prepare`` runs once per graph orientation and
its time is measured apart from epochs.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .graph import Graph, GraphView

__all__ = ["SystemGlue", "OperatorImpl", "BoundGraph"]


@dataclass(frozen=True)
class OperatorImpl:
    """One kernel implementing an operator for some attribute values."""

    operator: str
    kernel: str
    attrs: dict[str, Any]                    # attr -> allowed values (tuple) or a type name
    apply: Callable                           # apply(graph, attrs, *inputs) -> outputs

    def accepts(self, attrs: dict[str, Any]) -> bool:
        for name, allowed in self.attrs.items():
            if isinstance(allowed, tuple) and attrs.get(name) not in allowed:
                return False
        return True


@dataclass
class SystemGlue:
    """A system as the harness and the frontend see it."""

    name: str
    version: str
    framework: str
    kernels_module: str
    spec_path: str
    operators: dict[str, list[OperatorImpl]]
    hooks: dict[str, str] = field(default_factory=dict)
    _module: Any = None

    @property
    def module(self):
        if self._module is None:
            self._module = importlib.import_module(self.kernels_module)
        return self._module

    def hook(self, name: str) -> Callable | None:
        fn_name = self.hooks.get(name)
        return getattr(self.module, fn_name) if fn_name else None

    def find(self, operator: str, attrs: dict[str, Any]) -> OperatorImpl | None:
        for impl in self.operators.get(operator, ()):
            if impl.accepts(attrs):
                return impl
        return None

    def implemented(self) -> list[str]:
        """Human-readable list, e.g. ``spmm(reduce=sum|mean)``."""
        out = []
        for op, impls in self.operators.items():
            for impl in impls:
                attrs = ", ".join(f"{n}={'|'.join(v) if isinstance(v, tuple) else v}" for n, v in impl.attrs.items())
                out.append(f"{op}({attrs})")
        return out


class BoundGraph:
    """A graph bound to one system: views carry the system's prepared format.

    Args:
        graph: the graph.
        system: the system's glue.
        tensors: framework tensors derived from the graph (e.g. GCN edge weights),
            created by the frontend once.
    """

    def __init__(self, graph: Graph, system: SystemGlue):
        self.graph, self.system = graph, system
        self.prepare_time_s = 0.0
        self._views: dict[bool, GraphView] = {}
        self.tensors: dict[str, Any] = {}

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_edges(self) -> int:
        return self.graph.num_edges

    def view(self, transposed: bool = False) -> GraphView:
        view = self._views.get(transposed)
        if view is None:
            view = self.graph.view(transposed)
            prepare = self.system.hook("prepare")
            if prepare is not None:
                start = time.perf_counter()
                view = view.with_prepared(prepare(view))
                self.prepare_time_s += time.perf_counter() - start
            self._views[transposed] = view
        return view

    def prepare(self) -> float:
        """Build both orientations now; returns the seconds ``prepare`` took."""
        self.view(False)
        self.view(True)
        return self.prepare_time_s
