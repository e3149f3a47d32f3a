"""Stored runs as a pandas DataFrame: one row per run, the form people analyse results in.

:func:`load_results` reads the results store (:mod:`gnnbench.results.store`) into a
DataFrame whose columns are the store's :data:`~gnnbench.results.store.RUN_FIELDS`
(JSON decoded: per-epoch samples stay Python lists, ``machine`` and ``extra``
stay dicts) plus the columns of :data:`FRAME_FIELDS`. :func:`gnnbench.results.compare.compare`,
:func:`gnnbench.results.plot.plot` and the HTML report (:mod:`gnnbench.results.report`) all read it.

Note [verification join]
    A run stores the verification status its system had when it ran. What counts
    is the status of that exact build *now*: a system verified (or found wrong)
    after the run changes what the run proves. So the frame's ``verified`` is
    looked up when the frame is built, by system and ``system_hash``, in the
    store's ``verifications`` table (:func:`gnnbench.results.status.verification_status`);
    a build that was never verified keeps the status stored with the run, and
    that stored value stays in ``verified_at_run``. The lookup lives in
    :func:`join_verification` alone, so a faster or richer lookup swaps in there.

Note [modeled rows]
    A system that models its aggregation instead of running it (``pim``: its
    ``extra.system_report`` holds ``modeled_aggregation_s``) stores epoch times
    that are a simulation's wall time, not a pass or an epoch of anything. The
    frame says so once, in ``timing``: ``measured`` for every other run;
    ``modeled`` for an inference run whose ``extra.modeled_inference`` gives the
    pass as modeled (host share measured plus aggregation modeled, Note
    [inference mode] in :mod:`gnnbench.run.harness`), that figure in
    ``modeled_time_s``; ``simulated`` for a modeling run without such a figure
    (training). ``compare`` and ``plot`` read these two columns and never show a
    simulation's wall time as if it were an epoch.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gnnbench.results.store import RUN_FIELDS, Field

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_results", "frame_from_rows", "join_verification", "frame_records", "FRAME_FIELDS",
           "frame_markdown", "timing_of"]

_F = Field
#: Columns the frame adds to, or changes from, the stored run fields.
FRAME_FIELDS: tuple[Field, ...] = (
    _F("timestamp", "datetime64[ns, UTC]", "The stored ISO text parsed to a timezone-aware pandas timestamp."),
    _F("verified", "str", "`passed`, `failed` or `unverified`: the latest verification of this exact build "
                          "(system + `system_hash`) when the frame was built; the stored value when the build "
                          "was never verified. See Note [verification join] in `gnnbench/results/frame.py`."),
    _F("verified_at_run", "str", "The verification status stored with the run, when it ran."),
    _F("samples", "Int64", "Number of timed epochs (`len(epoch_times)`), 0 when none were stored."),
    _F("mode", "str", "`train` or `inference` (`hyperparameters.mode`; `train` for runs stored before the "
                      "mode existed)."),
    _F("timing", "str", "`measured`; `modeled` when the time is a model's (`modeled_time_s`); `simulated` "
                        "when the epoch times are a simulation's wall time and no modeled figure exists. See "
                        "Note [modeled rows] in `gnnbench/results/frame.py`."),
    _F("modeled_time_s", "float64", "The modeled pass time in seconds of a `modeled` run "
                                    "(`extra.modeled_inference.pass_time_s`); null otherwise."),
)
del _F
_INTEGER = tuple(f.name for f in RUN_FIELDS if f.sqltype == "INTEGER")


def frame_from_rows(rows: Iterable[Mapping[str, Any]]) -> "pd.DataFrame":
    """Builds the frame from run dicts (as ``ResultsStore.rows()`` returns them), without the join.

    Missing fields become null; integer columns use pandas' nullable ``Int64``;
    ``verified_at_run`` copies ``verified``.
    """
    import pandas as pd

    names = [f.name for f in RUN_FIELDS]
    records = [{n: row.get(n) for n in names} for row in rows]
    frame = pd.DataFrame.from_records(records, columns=names)
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
    for name in _INTEGER:
        frame[name] = frame[name].astype("Int64")
    frame["verified"] = frame["verified"].astype(object).where(frame["verified"].notna(), "unverified")
    frame["verified_at_run"] = frame["verified"]
    frame["samples"] = pd.array([len(t) if isinstance(t, list) else 0 for t in frame["epoch_times"]],
                                dtype="Int64")
    frame["mode"] = [(h.get("mode") if isinstance(h, dict) else None) or "train" for h in frame["hyperparameters"]]
    timings = [timing_of(e) for e in frame["extra"]]
    frame["timing"] = [t for t, _ in timings]
    frame["modeled_time_s"] = pd.array([v for _, v in timings], dtype="float64")
    return frame


def timing_of(extra: Any) -> tuple[str, float | None]:
    """``(timing, modeled_time_s)`` of a run from its ``extra`` (Note [modeled rows])."""
    extra = extra if isinstance(extra, dict) else {}
    modeled = extra.get("modeled_inference")
    if isinstance(modeled, dict) and isinstance(modeled.get("pass_time_s"), (int, float)):
        return "modeled", float(modeled["pass_time_s"])
    report = extra.get("system_report")
    if isinstance(report, dict) and "modeled_aggregation_s" in report:
        return "simulated", None
    return "measured", None


def join_verification(frame: "pd.DataFrame", store: Any) -> "pd.DataFrame":
    """Sets ``verified`` from the store's verification records (Note [verification join]).

    Args:
        frame: a frame from :func:`frame_from_rows`; modified in place and returned.
        store: an open :class:`~gnnbench.results.store.ResultsStore`.
    """
    from gnnbench.results.status import verification_status

    pairs = {(s, h) for s, h in zip(frame["system"], frame["system_hash"]) if isinstance(s, str)}
    known = {}
    for system, build in pairs:
        build = build if isinstance(build, str) else None
        # verification_status answers 'unverified' both for "never verified" and for "no such record";
        # only a record found for this build overrides what the run stored.
        if store.latest_verification(system, build) is not None:
            known[(system, build)] = verification_status(store, system, build)
    if known:
        frame["verified"] = [known.get((s, h if isinstance(h, str) else None), v)
                             for s, h, v in zip(frame["system"], frame["system_hash"], frame["verified"])]
    return frame


def load_results(path: str | os.PathLike | None = None, **filters: Any) -> "pd.DataFrame":
    """Stored runs as a DataFrame, one row per run, ordered by id.

    Args:
        path (str or Path, optional): the results database (default:
            ``$GNNBENCH_RESULTS`` or ``results/gnnbench.sqlite``), or a campaign's committed
            rows file (``results/rows/NAME.jsonl.gz``, Note [committed rows] in
            :mod:`gnnbench.results.rows_file`).
        **filters: as :meth:`gnnbench.results.store.ResultsStore.rows`: ``field=value``,
            ``field=None`` for null, or a list of values, e.g.
            ``load_results(dataset="cora", system=["reference", "dgl"])``.

    Returns:
        A ``pandas.DataFrame`` with the columns of ``docs/results-schema.md``
        ("The results frame"); per-epoch samples are lists in their cells.

    Example::

        >>> df = gnnbench.load_results("results/sweep.sqlite", model="gcn")
        >>> df.groupby(["dataset", "system"])["epoch_time_median_s"].min()
    """
    from gnnbench.results.rows_file import is_rows_file, read_rows
    from gnnbench.results.store import ResultsStore, default_results_path

    if path is not None and is_rows_file(path):
        return frame_from_rows(_filtered(read_rows(path), filters))
    # a reader: never creates a database or its folders (Note [store first])
    with ResultsStore(path if path is not None else default_results_path(), create=False) as store:
        return join_verification(frame_from_rows(store.rows(**filters)), store)


def _filtered(rows: list[dict[str, Any]], filters: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``rows`` that match ``filters`` as :meth:`~gnnbench.results.store.ResultsStore.rows` matches them."""
    from gnnbench.results.store import RUN_FIELDS

    unknown = sorted(set(filters) - {f.name for f in RUN_FIELDS})
    if unknown:
        raise ValueError(f"unknown filter field(s) {unknown}; valid fields are {[f.name for f in RUN_FIELDS]}")

    def matches(value: Any, wanted: Any) -> bool:
        if isinstance(wanted, (list, tuple, set, frozenset)):
            return value in wanted
        return value is None if wanted is None else value == wanted

    return sorted((r for r in rows if all(matches(r.get(k), v) for k, v in filters.items())),
                  key=lambda r: r.get("id") or 0)


def _clean(value: Any) -> Any:
    """pandas' missing markers (NaN, NaT, NA) as None, timestamps as ISO text, numpy scalars as Python."""
    import pandas as pd

    if value is None or isinstance(value, (list, dict, tuple, str)):
        return value
    if pd.isna(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value.item() if hasattr(value, "item") else value


def frame_records(frame: "pd.DataFrame") -> list[dict[str, Any]]:
    """The frame's rows as plain dicts with None for missing values, for code that walks runs one by one."""
    columns = list(frame.columns)
    return [{c: _clean(v) for c, v in zip(columns, values)} for values in frame.itertuples(index=False, name=None)]


def frame_markdown() -> list[str]:
    """The "results frame" section of ``docs/results-schema.md``."""
    lines = [
        "## The results frame: `gnnbench.load_results()`",
        "",
        "`gnnbench.load_results(path=None, **filters)` returns a `pandas.DataFrame` with one row per run, "
        "ordered by id. Its columns are the `runs` columns above, with the same names and meanings; JSON columns "
        "are decoded (the per-epoch samples such as `epoch_times` are Python lists in their cells, `machine` "
        "and `extra` are dicts), integer columns use pandas' nullable `Int64`, and missing values are null "
        "(`NaN`/`<NA>`). Filters are those of `ResultsStore.rows()`: `field=value`, `field=None`, or a list "
        "of values. The frame differs from the stored row in these columns:",
        "",
        "| column | dtype | description |",
        "| --- | --- | --- |",
        *[f"| `{f.name}` | {f.sqltype} | {f.description} |" for f in FRAME_FIELDS],
        "",
        "`gnnbench compare`, `gnnbench plot` and `gnnbench report` are built on this frame.",
        "",
    ]
    return lines
