"""A campaign's stored runs as the entries a table shows: the pooled processes of one configuration.

Note [campaign entries]
    A table row is one configuration: the values of the table's ``rows``
    fields (``system`` among them) and of its section. Its runs are pooled as
    ``compare`` pools them (Note [configurations] in
    :mod:`gnnbench.results.configurations`): the latest build, its successful
    runs, each run one process. The epoch figure is the median of the
    per-process medians, its interval over processes (Note [between-process
    statistics]); every other figure (a phase, preparation, tuning, peak
    memory) is the median over the pooled runs, so a single run's figure is
    its own. A field is read from the row, else from what the sweep asked
    for (``extra.sweep.spec``: the *requested* allocator, not the one the
    process ended up with), else from the hyperparameters; ``edges`` is the
    graph's size as a label (``4M``), from an R-MAT name's ``edges=`` or the
    stored edge count. Table rows come in the order their first run comes
    in the rows given, which ``gnnbench campaign run`` commits in the
    campaign's own order (:func:`gnnbench.campaign.publish.in_campaign_order`),
    so a configuration measured again later keeps its place.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Entry", "entries", "field_of", "size_label", "size_value", "selected", "batches_per_epoch"]


def size_label(edges: int | float) -> str:
    """A graph's size as a reader says it: ``4000000`` -> ``4M``; ``114600000`` -> ``114.6M``; ``524288`` ->
    ``524k`` (whole thousands: a power of two's digits are noise in a label)."""
    if edges >= 1e6:
        return f"{edges / 1e6:.4g}M"
    return f"{round(edges / 1e3):d}k" if edges >= 1e3 else f"{edges:g}"


def size_value(label: str) -> float:
    """:func:`size_label` read back, to order sizes: ``4M`` -> ``4e6``, ``524k`` -> ``524000``."""
    text = str(label)
    return float(text[:-1]) * (1e6 if text.endswith("M") else 1e3) if text[-1:] in ("M", "k") else float(text)


def _edges(row: Mapping[str, Any]) -> int | None:
    dataset = str(row.get("dataset") or "")
    if dataset.startswith("rmat:") and "edges=" in dataset:
        params = dict(p.split("=", 1) for p in dataset.split(":", 1)[1].split(",") if "=" in p)
        return int(params["edges"])
    return row.get("dataset_edges")


def _hashable(value: Any) -> Any:
    """A table value as a key: a mapping (a run's ``options``) as ``k=v,k=v``, a list as a tuple."""
    if isinstance(value, Mapping):
        return ",".join(f"{k}={value[k]}" for k in sorted(value))
    return tuple(value) if isinstance(value, list) else value


def field_of(row: Mapping[str, Any], name: str) -> Any:
    """A row's value of ``name`` (Note [campaign entries]); a mapping reads as ``k=v,k=v``."""
    return _hashable(_field(row, name))


def _field(row: Mapping[str, Any], name: str) -> Any:
    if name == "edges":
        edges = _edges(row)
        return None if edges is None else size_label(edges)
    if name == "edges_count":
        return _edges(row)
    extra = row.get("extra") if isinstance(row.get("extra"), Mapping) else {}
    config = ((extra.get("sweep") or {}).get("spec") or {}) if isinstance(extra.get("sweep"), Mapping) else {}
    if name == "options":
        # a campaign's `options` table is the run's system_options (`-o KEY=VALUE`): pairs in the sweep's spec,
        # a mapping in the row's hyperparameters; None for a run without any
        hyper = row.get("hyperparameters") if isinstance(row.get("hyperparameters"), Mapping) else {}
        pairs = config.get("system_options") or hyper.get("system_options") or row.get("options")
        return dict(pairs) if pairs else None
    if name in config and config[name] is not None:
        return config[name]
    if row.get(name) is not None:
        return row[name]
    hyper = row.get("hyperparameters") if isinstance(row.get("hyperparameters"), Mapping) else {}
    if name in hyper:
        return hyper[name]
    return {"mode": "train", "batching": "full"}.get(name)


def selected(rows: Sequence[Mapping[str, Any]], where: Sequence[tuple[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows whose fields match every ``(field, value or tuple of values)`` of ``where``."""
    def matches(row) -> bool:
        for name, wanted in where:
            value = field_of(row, name)
            if not (value in wanted if isinstance(wanted, tuple) else value == wanted):
                return False
        return True

    return [r for r in rows if matches(r)]


@dataclass(frozen=True)
class Entry:
    """One configuration's pooled runs, oldest first (Note [campaign entries])."""

    key: tuple[tuple[str, Any], ...]
    runs: tuple[Mapping[str, Any], ...]
    #: the paired comparison of this row's system against the table's baseline, for a table that shows one
    #: (a :class:`gnnbench.results.paired.Session`; Note [decided tables] in gnnbench/campaign/columns.py)
    comparison: Any = field(default=None, compare=False)

    def __getitem__(self, name: str) -> Any:
        return dict(self.key).get(name)

    @property
    def latest(self) -> Mapping[str, Any]:
        return self.runs[-1]

    @property
    def ok(self) -> bool:
        return self.latest.get("status") == "ok"

    @property
    def processes(self):
        from gnnbench.core.statistics import Processes

        return Processes.from_rows(self.runs)

    def median(self, name: str) -> float | None:
        """The median over the pooled runs of a per-run figure; None when no run has it."""
        values = [float(r[name]) for r in self.runs if isinstance(r.get(name), (int, float))]
        return float(np.median(values)) if values else None

    def extra_median(self, name: str) -> float | None:
        """:meth:`median` of a figure kept in the runs' ``extra``."""
        values = [float(r["extra"][name]) for r in self.runs
                  if isinstance(r.get("extra"), Mapping) and isinstance(r["extra"].get(name), (int, float))]
        return float(np.median(values)) if values else None

    def per_batch(self, name: str) -> float | None:
        """The median over the pooled runs of a per-epoch figure divided by the run's batches per epoch
        (:func:`batches_per_epoch`); None for full-graph runs or when no run has it."""
        values = [float(r[name]) / n for r in self.runs
                  if isinstance(r.get(name), (int, float)) and (n := batches_per_epoch(r))]
        return float(np.median(values)) if values else None

    @property
    def epoch(self) -> float | None:
        """The epoch figure in seconds: the median of the per-process medians."""
        p = self.processes
        return p.median if len(p) else self.median("epoch_time_median_s")


def entries(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[Entry]:
    """The configurations of ``rows`` by ``fields`` (``system`` among them), in the order they first appear,
    each pooled as Note [campaign entries] says."""
    from gnnbench.results.configurations import configurations
    from gnnbench.results.frame import frame_from_rows

    if not rows:
        return []
    frame = frame_from_rows(rows)
    frame["_key"] = [tuple((f, field_of(r, f)) for f in fields if f != "system") for r in rows]
    configs, _ = configurations(frame, ["_key"])
    first: dict[tuple, int] = {}  # the rows' own order (a campaign's, Note [campaign entries]), not their times
    for i, key in enumerate(zip(frame["_key"], (r.get("system") or "?" for r in rows))):
        first.setdefault(key, i)
    configs = sorted(configs, key=lambda c: first.get((c.group[0], c.system), len(first)))
    out = []
    for config in configs:
        key = dict(config.group[0])
        key["system"] = config.system
        runs = tuple({k: v for k, v in r.items() if k != "_key"} for r in config.rows)
        out.append(Entry(tuple((f, key.get(f)) for f in fields), runs))
    return out


def batches_per_epoch(row: Mapping[str, Any]) -> int | None:
    """A sampled training run's batches per epoch: its seeds per epoch (``seeds_per_s`` times the median epoch it
    was taken from, Note [sampled batching]) over its batch size, rounded up; None for any other run."""
    seeds_per_s, epoch = row.get("seeds_per_s"), row.get("epoch_time_median_s")
    batch = field_of(row, "batch_size")
    if field_of(row, "batching") != "sampled" or not isinstance(batch, int) or batch <= 0 \
            or not isinstance(seeds_per_s, (int, float)) or not isinstance(epoch, (int, float)) \
            or not np.isfinite(seeds_per_s * epoch):
        return None
    seeds = round(float(seeds_per_s) * float(epoch))
    return -(-seeds // batch) if seeds > 0 else None
