"""The example out-of-tree package (docs/examples/extsp), installed for a test without pip.

A distribution is a ``*.dist-info`` folder on ``sys.path``; ``importlib.metadata``
reads its ``entry_points.txt`` exactly as it reads one pip wrote, so gnnbench
finds the system through its ``gnnbench.systems`` entry point.
"""
from __future__ import annotations

import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "extsp"


def write_distribution(site: Path, name: str, entry_points: dict[str, str]) -> None:
    """A minimal installed distribution ``name`` with ``gnnbench.systems`` entry points."""
    info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[gnnbench.systems]\n{lines}")


def _forget_modules(*prefixes: str) -> None:
    for name in [m for m in sys.modules if m.startswith(prefixes)]:
        del sys.modules[name]


@contextmanager
def installed_example(site: Path) -> Iterator[Path]:
    """``docs/examples/extsp`` copied into ``site`` and registered by its entry point; yields the package folder."""
    from gnnbench.runtime.registry import forget_systems

    shutil.copytree(EXAMPLE / "extsp", site / "extsp", ignore=shutil.ignore_patterns("_glue*", "__pycache__"))
    write_distribution(site, "gnnbench-extsp", {"extsp": "extsp"})
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(site))
        forget_systems()
        try:
            yield site / "extsp"
        finally:
            _forget_modules("extsp", "_gnnbench_external_")
    forget_systems()
