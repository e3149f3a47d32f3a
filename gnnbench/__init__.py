"""gnnbench: fair, correct-before-fast benchmarks of GNN kernel systems.

The package's Python entry point for results is :func:`load_results` (a pandas
DataFrame of stored runs); it is imported on first use so that ``import gnnbench``
stays light for the worker processes.
"""
from __future__ import annotations

from typing import Any

__all__ = ["load_results"]


def __getattr__(name: str) -> Any:
    if name == "load_results":
        from gnnbench.results.frame import load_results

        return load_results
    raise AttributeError(f"module 'gnnbench' has no attribute {name!r}")
