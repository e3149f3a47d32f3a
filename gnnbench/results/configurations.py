"""Which stored runs are processes of one configuration, pooled for ``compare``, by-build and the report.

Note [configurations]
    A configuration is one system measured on one group (``compare``'s group
    fields: dataset, model, framework, and mode when the data holds inference
    runs) by one build of it (``system_hash``). Its stored runs are its
    processes, whatever their seed, date or gnnbench commit: repeats and seeds
    are exactly the replication Note [between-process statistics] in
    :mod:`gnnbench.core.statistics` needs. Per group and system, ``compare``
    pools the build of the latest run (its ``system_hash``; ``compare --by
    build`` labels each build as a system of its own, so it pools every
    build); runs of other builds are left out with a warning, never mixed.
    Of a configuration's runs the successful ones are pooled, oldest first; a
    failed run beside successful ones of the same build is left out (a
    ``--retry-failed`` rerun replaces it, as the latest run used to), and a
    configuration with no successful run is its latest run (``!``). Pooled
    runs that differ in a field that decides speed (:data:`COMPARABLE_FIELDS`,
    or the hyperparameters) are still pooled, with a warning naming the
    field: a mixed pool is said, never silent. Memory, accuracy, verification
    and SpMM figures are the latest pooled run's; only times are pooled.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gnnbench.results.row import COMPARABLE_FIELDS

__all__ = ["Configuration", "configurations"]

_SPEED_FIELDS = (*COMPARABLE_FIELDS, "hyperparameters")


@dataclass(frozen=True)
class Configuration:
    """The pooled runs of one group, system and build (Note [configurations]), oldest first."""

    group: tuple
    system: str
    rows: tuple[dict[str, Any], ...]

    @property
    def latest(self) -> dict[str, Any]:
        """The latest pooled run: the configuration's status, memory, accuracy and verification."""
        return self.rows[-1]


def _ok(row: Mapping[str, Any]) -> bool:
    return (row.get("status") or "ok") == "ok"


def _where(group: tuple, system: str) -> str:
    return f"{system} on {'/'.join(str(v) for v in group)}"


def _mixed(config: Configuration) -> list[str]:
    """A warning per speed-deciding field in which the pooled runs differ."""
    out = []
    for name in _SPEED_FIELDS:
        counts: dict[str, int] = {}
        for row in config.rows:
            if row.get(name) is not None:
                key = repr(row[name])
                counts[key] = counts.get(key, 0) + 1
        if len(counts) > 1:
            listing = ", ".join(f"{v} ({n} run{'s' * (n != 1)})" for v, n in sorted(counts.items()))
            out.append(f"{_where(config.group, config.system)} pools runs that differ in {name}: {listing}")
    return out


def configurations(data: Any, group_by: Sequence[str]) -> tuple[list[Configuration], list[str]]:
    """The configuration of each group and system in ``data``, and warnings about what was left out or mixed.

    Args:
        data: a results frame (:func:`gnnbench.load_results`) or run dicts.
        group_by (sequence of str): the group fields.

    Returns:
        ``(configurations, warnings)``; configurations in the order their group and system first appear.
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows, frame_records

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    if frame.empty:
        return [], []
    ordered = frame.assign(_order=range(len(frame))).sort_values(
        ["timestamp", "id", "_order"], na_position="first", kind="stable").drop(columns="_order")
    runs: dict[tuple, list[dict[str, Any]]] = {}
    for row in frame_records(ordered):
        runs.setdefault((tuple(row.get(g) for g in group_by), row.get("system") or "?"), []).append(row)
    out, warnings = [], []
    for (group, system), rows in runs.items():
        build = rows[-1].get("system_hash")
        mine = [r for r in rows if r.get("system_hash") == build]
        if len(mine) < len(rows):
            others = len({r.get("system_hash") for r in rows} - {build})
            warnings.append(f"{_where(group, system)}: {len(rows) - len(mine)} run(s) of {others} other build(s) "
                            f"left out; the latest build is pooled (`compare --by build` sets builds side by side)")
        ok = [r for r in mine if _ok(r)]
        config = Configuration(group, system, tuple(ok or mine[-1:]))
        warnings += _mixed(config)
        out.append(config)
    return out, warnings
