"""A static HTML report of stored runs that opens from ``file://``, like asv's ``publish``.

:func:`build_report` writes ``index.html`` and ``figures/`` into a folder:

* per dataset x model x framework, the comparison table of
  :func:`gnnbench.results.compare.compare` (the figure over pooled processes and
  their count, speedup with its confidence interval or why it claims nothing,
  asv marks, verification status, memory, accuracy);
* the figures of :func:`gnnbench.results.plot.plot` (SVG shown, PNG linked);
* each system's summary and spec, and for a system that models its
  aggregation the modeled time breakdown its runs stored (``extra.system_report``);
* every run's provenance: machine, CPU, commit, framework and library versions,
  allocator, threads, and the error of a run that failed.

Note [report safety]
    Everything in the page comes from files users write (specs, dataset names,
    error text, hostnames). The page is rendered by Jinja2 with autoescaping on
    and ``StrictUndefined``, Python code hands it plain strings only (never
    ``Markup``), and its one script is inline and static: it reads the table
    cells' text and never evaluates them. Nothing is loaded from the network,
    so the page works offline and from ``file://``.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gnnbench.results.compare import COMPARABLE_FIELDS, REFERENCE, Comparison, compare
from gnnbench.errors import UserError
from gnnbench.results.row import Extra
from gnnbench.results.tables import fmt_number

__all__ = ["build_report", "TEMPLATE"]

TEMPLATE = Path(__file__).with_name("report.html.j2")
_MIB = float(1 << 20)
_MODELED_PHASES = ("transfer_s", "kernel_s", "retrieve_s", "merge_s", "total_s")


def _cell(text: Any, sort: Any = None, cls: str = "") -> dict[str, Any]:
    """One table cell: shown ``text``, an optional numeric ``sort`` key, and a CSS class."""
    return {"text": "" if text is None else str(text), "sort": sort, "cls": cls}


def _table(table_id: str, header: Sequence[str], numeric: Sequence[bool], rows: list[list[dict]],
           caption: str = "") -> dict[str, Any]:
    return {"id": table_id, "header": list(header), "numeric": list(numeric), "rows": rows, "caption": caption}


_MARK_CLASS = {"-": "faster", "+": "slower", "!": "failing", "x": "incomparable", "~": "insignificant"}


def _comparison_tables(c: Comparison) -> list[dict[str, Any]]:
    """One sortable table per group of the comparison."""
    unit, scale = c.unit
    header = ["mark", "system", "verified", f"epoch time ({unit})", "IQR/median", "procs", "speedup",
              f"{c.confidence:.0%} CI", f"peak mem vs {c.baseline}", f"test acc vs {REFERENCE}", "run"]
    numeric = [False, False, False, True, True, True, True, True, True, True, True]
    groups: dict[tuple, list] = {}
    for r in c.results:
        groups.setdefault(tuple(r.group.values()), []).append(r)
    tables = []
    for index, (key, results) in enumerate(groups.items()):
        rows = []
        for r in results:
            if r.status != "ok":
                time = _cell(r.status, None, "failing")
            elif r.median_s is None:
                time = _cell("n/a")
            else:
                time = _cell(fmt_number(r.median_s / scale), r.median_s / scale, "noisy" if r.noisy else "")
            speedup = (_cell(f"{r.speedup:.2f}x", r.speedup) if r.speedup is not None
                       else _cell(r.note if r.note and r.status == "ok" else "n/a"))
            rows.append([
                _cell(r.mark, None, _MARK_CLASS.get(r.mark, "")),
                _cell(r.system),
                _cell(*(("oracle", None, "verified-oracle") if r.system == REFERENCE
                        else (r.verified, None, f"verified-{r.verified}"))),
                time,
                _cell(f"{r.noise:.0%}" if r.noise is not None else "", r.noise, "noisy" if r.noisy else ""),
                _cell(r.processes or "", r.processes),
                speedup,
                _cell(r.interval, r.ci_low, "unstable" if r.withheld or (r.note == "baseline" and r.unstable) else ""),
                _cell(f"{r.memory_ratio:.2f}x" if r.memory_ratio is not None else "n/a", r.memory_ratio),
                _cell(f"{r.accuracy_diff * 100:+.2f} pp" if r.accuracy_diff is not None else "n/a",
                      r.accuracy_diff),
                _cell(r.run_id, r.run_id),
            ])
        title = " · ".join(str(v) for v in key)
        tables.append(_table(f"compare-{index}", header, numeric, rows, title))
    return tables


def _versions(machine: Mapping[str, Any] | None) -> str:
    libraries = (machine or {}).get("libraries") or (machine or {}).get("versions") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(libraries.items()) if v)


def _provenance(records: list[dict[str, Any]]) -> dict[str, Any]:
    header = ["run", "started (UTC)", "status", "system", "build", "model", "dataset", "framework", "device",
              "threads", "allocator", "host", "CPU", "commit", "Python", "libraries", "error"]
    numeric = [True] + [False] * 8 + [True] + [False] * 7
    rows = []
    for r in records:
        machine = r.get("machine") or {}
        framework = " ".join(str(v) for v in (r.get("framework"), r.get("framework_version")) if v)
        rows.append([
            _cell(r.get("id"), r.get("id")), _cell((r.get("timestamp") or "")[:19].replace("T", " ")),
            _cell(r.get("status"), None, "failing" if r.get("status") not in ("ok", "skipped") else ""),
            _cell(r.get("system")),
            _cell(" ".join(v for v in (r.get("system_version"), (r.get("system_hash") or "")[:12]) if v)),
            _cell(r.get("model")), _cell(r.get("dataset")), _cell(framework), _cell(r.get("device")),
            _cell(r.get("threads"), r.get("threads")), _cell(r.get("allocator") or "unknown"),
            _cell(machine.get("hostname")), _cell(r.get("cpu_model") or machine.get("cpu_model")),
            _cell((r.get("git_commit") or "")[:12]), _cell(machine.get("python")),
            _cell(_versions(machine), None, "wrap"), _cell(r.get("error"), None, "wrap"),
        ])
    return _table("runs", header, numeric, rows, "Every run in the report, one row each")


def _shown_path(path: str) -> str:
    """A spec path relative to the checkout (``systems/pim/pim.gnn``) when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path(__file__).resolve().parents[1]))
    except ValueError:
        return path


def _systems(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Summary and spec text of every system that appears in the runs."""
    from gnnbench.runtime.registry import list_systems

    seen: dict[str, str] = {}
    for r in records:
        if r.get("system"):
            seen[r["system"]] = r.get("verified") or "unverified"
    known = {info.name: info for info in list_systems()}
    out = []
    for name in sorted(seen, key=lambda s: (s != REFERENCE, s)):
        info = known.get(name)
        spec_text = ""
        if info is not None and info.spec_path and Path(info.spec_path).is_file():
            spec_text = Path(info.spec_path).read_text(encoding="utf-8", errors="replace")
        out.append({"name": name, "kind": info.kind if info else "unknown", "version": info.version if info else "",
                    "summary": info.summary if info else "not registered on the machine that built this report",
                    "spec_path": _shown_path(info.spec_path) if info else "", "spec": spec_text,
                    # reference is the oracle the others are verified against, never verified itself
                    "verified": "oracle" if name == REFERENCE else seen[name]})
    return out


def _modeled(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The modeled breakdown of every run whose system models its aggregation (its ``extra.system_report``
    holds ``modeled_aggregation_s``, Note [inference mode]); the section is named after that system."""
    header = ["run", "dataset", "model", "direction", "calls", "transfer (ms)", "kernel (ms)", "retrieve (ms)",
              "merge (ms)", "total (ms)", "per call (ms)"]
    numeric = [True, False, False, False] + [True] * 7
    rows, notes, systems = [], [], []
    for r in records:
        report = Extra.of(r).system_report or {}
        if not isinstance(report, dict) or "modeled_aggregation_s" not in report:
            continue
        systems += [r.get("system")] if r.get("system") not in systems else []
        for direction, figures in (report.get("modeled_aggregation_s") or {}).items():
            ms = [figures.get(p) for p in _MODELED_PHASES] + [figures.get("per_call_s")]
            rows.append([_cell(r.get("id"), r.get("id")), _cell(r.get("dataset")), _cell(r.get("model")),
                         _cell(direction), _cell(figures.get("calls"), figures.get("calls")),
                         *(_cell("" if v is None else f"{v * 1e3:.3f}", v) for v in ms)])
        notes += [f"run {r.get('id')}: {line}" for line in report.get("summary") or []]
    if not rows:
        return None
    name = str(systems[0])
    return {"id": name, "title": f"{name.upper()}: modeled breakdown",
            "table": _table(name, header, numeric, rows, "Modeled UPMEM time per aggregation direction"),
            "notes": notes}


def _figures(frame: Any, out: Path) -> tuple[list[dict[str, str]], str]:
    from gnnbench.results.plot import FIGURES, plot

    try:
        drawn = {path.stem for path in plot(frame, out / "figures")}
    except UserError as err:
        return [], f"No figures: {err}."
    titles = {"epoch_time": "Median epoch time per group (whiskers: quartiles; hatched: not verified)",
              "peak_memory": "Peak memory per group", "scaling": "Epoch time against graph size"}
    from gnnbench.results.history_figure import single_size_note

    one_size = single_size_note(frame)  # why plot drew no scaling figure: one graph size
    return [{"name": n, "svg": f"figures/{n}.svg", "png": f"figures/{n}.png", "title": titles[n]}
            for n in FIGURES if n in drawn], (one_size or "") if "scaling" not in drawn else ""


def _render(context: Mapping[str, Any]) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template(TEMPLATE.name).render(**context)


def build_report(data: Any, out_dir: str | os.PathLike, *, baseline: str = REFERENCE,
                 include_unverified: bool = False, title: str = "gnnbench report", source: str = "",
                 figures: bool = True) -> Path:
    """Writes the report for ``data`` into ``out_dir`` and returns the path of its ``index.html``.

    Args:
        data: the results frame (:func:`gnnbench.load_results`), or stored run dicts.
        out_dir (str or Path): the report folder; created if missing. ``index.html``
            is replaced whole (written beside it, then renamed), figures under ``figures/``.
        baseline (str): system the speedups are against (default: reference).
        include_unverified (bool): claim speedups of unverified systems too (default: False).
        title (str): the page title (default: "gnnbench report").
        source (str): where the runs came from, shown in the header (default: none).
        figures (bool): draw the figures (needs matplotlib) (default: True).

    Raises:
        UserError: there are no runs.
    """
    import pandas as pd

    from gnnbench.results.frame import frame_from_rows, frame_records
    from gnnbench.results.store import utc_now

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    if frame.empty:
        raise UserError("nothing to report: no stored runs match; run `gnnbench run` or `gnnbench sweep` first")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"report folder {out} is a file: expected a folder path (--out DIR)")
    out.mkdir(parents=True, exist_ok=True)
    comparison = compare(frame, baseline=baseline, include_unverified=include_unverified)
    records = frame_records(frame)
    figures, no_figures = _figures(frame, out) if figures else ([], "Figures were not drawn for this report.")
    from gnnbench.results.history_figure import history_figures

    history, no_history = (history_figures(frame, out / "figures") if figures
                           else ([], "History figures were not drawn for this report."))
    context = {
        "title": title, "generated": utc_now(), "source": source, "runs_count": len(records),
        "ok_count": sum(r.get("status") == "ok" for r in records),
        "groups": _comparison_tables(comparison), "notes": comparison.table(warnings=False).notes,
        "warnings": comparison.warnings, "comparable_fields": ", ".join(COMPARABLE_FIELDS),
        "figures": figures, "no_figures": no_figures, "systems": _systems(records), "modeled": _modeled(records),
        "runs": _provenance(records), "history": history, "no_history": no_history,
    }
    html = _render(context)
    fd, tmp = tempfile.mkstemp(prefix=".index.", suffix=".html", dir=out)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(html)
        os.replace(tmp, out / "index.html")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out / "index.html"
