"""What a campaign file declares beyond its runs: how its processes start (``[setup]``) and what it publishes
(``[[publish]]`` pages of ``[[publish.tables]]``).

Note [campaign declares its tables]
    A published table is a view of a campaign's rows, so the campaign file
    says which view, as data: each ``[[publish]]`` page names its output
    (``out``, a path under the repository without suffix: ``out.md``, and a
    figure per ``figures`` entry under ``results/figures/``), its ``title``,
    its ``about`` text and its ``headline`` (the one figure the index and
    README quote); each of its ``[[publish.tables]]`` names the runs it
    shows (``where``: field = value or list of values), what sets it apart
    into sections (``sections``, a field), what a row is (``rows``: fields,
    ``system`` among them), which ``columns`` it shows (the names of
    :data:`gnnbench.campaign.columns.COLUMNS`) and the ``baseline`` system its
    ratios are taken against (a value of ``against``, ``system`` unless it
    names another of the ``rows`` fields, such as ``framework``; a list gives
    each its own ratio columns). One renderer (:mod:`gnnbench.campaign.render`)
    draws every page, so a new table is a declaration, not a script. A
    campaign that decides declares its verdicts the same way, with the columns
    of Note [decided tables] in :mod:`gnnbench.campaign.columns`. A page may
    close with paragraphs computed from its rows, ``[[publish.findings]]``
    (Note [campaign findings] in :mod:`gnnbench.campaign.findings`).

Example (``campaigns/scaling.toml``)::

    [[publish]]
    out = "results/scaling"
    title = "Training as the graph grows"
    headline = { subject = "isplib", baseline = "dgl-native", where = { edges = "16M" } }
    figures = ["against-edges"]

    [[publish.tables]]
    sections = "model"
    rows = ["edges", "system"]
    columns = ["epoch ms", "prepare s", "tune s", "peak MiB", "vs baseline", "processes", "stability"]
    baseline = "dgl-native"
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnnbench.errors import UserError

__all__ = ["Setup", "Headline", "TableDeclaration", "Page", "Declaration", "declaration_from_mapping",
           "FIGURE_KINDS", "Finding", "FINDING_KEYS"]

#: the figures a page may ask for (drawn by :mod:`gnnbench.campaign.figures`)
FIGURE_KINDS = ("against-edges", "phases")
#: the paragraphs a page may ask for, each computed from its rows (Note [campaign findings] in
#: :mod:`gnnbench.campaign.findings`), and the keys each takes besides `kind`, `title` and `where`
FINDING_KEYS = {"first-to-target": (), "extrapolation": ("to", "nodes", "edges")}
_SETUP_KEYS = ("systems_path", "fresh_tuning_cache")
_PAGE_KEYS = ("out", "title", "about", "headline", "figures", "tables", "findings")
_TABLE_KEYS = ("title", "about", "where", "sections", "rows", "columns", "baseline", "against")
_HEADLINE_KEYS = ("subject", "baseline", "against", "where", "metric")
#: what a headline's ratio is of: the epoch (over processes) or the time to a target accuracy (over seeds)
HEADLINE_METRICS = ("epoch", "time to target")


@dataclass(frozen=True)
class Setup:
    """How ``gnnbench campaign run`` starts the processes: folders of systems outside systems/
    (``GNNBENCH_SYSTEMS_PATH``, Note [external systems]) and whether isplib meets an empty tuning cache,
    as a user on a new machine does (Note [tune on first use])."""

    systems_path: tuple[str, ...] = ()
    fresh_tuning_cache: bool = False


@dataclass(frozen=True)
class Headline:
    """The figure the index quotes: ``baseline``'s epoch (or time to target, ``metric``) over ``subject``'s, values
    of ``against`` (default ``system``), per model and dataset of the runs ``where`` selects."""

    subject: str
    baseline: str
    against: str = "system"
    where: tuple[tuple[str, Any], ...] = ()
    metric: str = "epoch"


@dataclass(frozen=True)
class TableDeclaration:
    """One table of a page (Note [campaign declares its tables])."""

    rows: tuple[str, ...]
    columns: tuple[str, ...]
    title: str | None = None
    about: str | None = None
    where: tuple[tuple[str, Any], ...] = ()
    sections: str | None = None
    #: the values of ``against`` the ratio columns are taken against, one set of such columns each
    baselines: tuple[str, ...] = ()
    #: the field whose values the baselines are (default ``system``; ``framework`` sets frameworks side by side)
    against: str = "system"


@dataclass(frozen=True)
class Finding:
    """One paragraph of a page computed from its rows at render time (Note [campaign findings] in
    :mod:`gnnbench.campaign.findings`): its ``kind``, heading, the runs it reads (``where``) and the values its
    kind takes (:data:`FINDING_KEYS`)."""

    kind: str
    title: str | None = None
    where: tuple[tuple[str, Any], ...] = ()
    values: tuple[tuple[str, Any], ...] = ()

    def value(self, key: str) -> Any:
        return dict(self.values).get(key)


@dataclass(frozen=True)
class Page:
    """One published page: ``out.md`` with its tables, and its figures."""

    out: str
    title: str
    tables: tuple[TableDeclaration, ...]
    about: str | None = None
    headline: Headline | None = None
    figures: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Declaration:
    """A campaign file's ``[setup]`` and ``[[publish]]`` pages."""

    name: str
    setup: Setup = Setup()
    pages: tuple[Page, ...] = field(default_factory=tuple)


def _keys(data: Any, allowed: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: expected a table (got {data!r})")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    return data


def _text(data: Mapping[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None and required:
        raise UserError(f"{where}: '{key}' is required")
    if value is not None and not isinstance(value, str):
        raise UserError(f"{where}: '{key}' must be text (got {value!r})")
    return value


def _texts(data: Mapping[str, Any], key: str, where: str, required: bool = False) -> tuple[str, ...]:
    value = data.get(key, [] if not required else None)
    if value is None or not isinstance(value, list) or not all(isinstance(v, str) for v in value) \
            or (required and not value):
        raise UserError(f"{where}: '{key}' must be a list of text" + (", not empty" if required else "")
                        + f" (got {value!r})")
    return tuple(value)


def _where(data: Mapping[str, Any], where: str) -> tuple[tuple[str, Any], ...]:
    value = data.get("where", {})
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: 'where' must be a table of field = value (got {value!r})")
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in value.items())


def _table(data: Any, where: str) -> TableDeclaration:
    from gnnbench.campaign.columns import COLUMNS

    data = _keys(data, _TABLE_KEYS, where)
    columns = _texts(data, "columns", where, required=True)
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise UserError(f"{where}: unknown column(s) {', '.join(map(repr, unknown))}; choices: "
                        f"{', '.join(COLUMNS)}")
    rows = _texts(data, "rows", where, required=True)
    if "system" not in rows:
        raise UserError(f"{where}: 'rows' must name system (got {list(rows)})")
    baseline = data.get("baseline", [])
    baselines = (baseline,) if isinstance(baseline, str) else _texts(data, "baseline", where)
    needs = [c for c in columns if COLUMNS[c].needs_baseline or COLUMNS[c].paired]
    if not baselines and needs:
        raise UserError(f"{where}: column(s) {', '.join(needs)} need a 'baseline'")
    against = _text(data, "against", where) or "system"
    if against not in rows:
        raise UserError(f"{where}: 'against' names a field of 'rows' (got {against!r}; rows: {', '.join(rows)})")
    return TableDeclaration(rows=rows, columns=columns, title=_text(data, "title", where),
                            about=_text(data, "about", where), where=_where(data, where),
                            sections=_text(data, "sections", where), baselines=baselines, against=against)


def _finding(data: Any, where: str) -> Finding:
    """One ``[[publish.findings]]``: a known kind, its own keys, each of them given (one line otherwise)."""
    if isinstance(data, Mapping) and data.get("kind") not in FINDING_KEYS:
        raise UserError(f"{where}: 'kind' must be one of {', '.join(FINDING_KEYS)} (got {data.get('kind')!r})")
    own = FINDING_KEYS[data["kind"]] if isinstance(data, Mapping) else ()
    data = _keys(data, ("kind", "title", "where", *own), where)
    values = []
    for key in own:
        value = data.get(key)
        wanted = str if key == "to" else int
        if not isinstance(value, wanted) or isinstance(value, bool) or (wanted is int and value <= 0):
            kind = "text" if wanted is str else "a whole number above 0"
            raise UserError(f"{where}: '{key}' must be {kind} (got {value!r}); kind {data['kind']} needs "
                            f"{', '.join(own)}")
        values.append((key, value))
    return Finding(data["kind"], _text(data, "title", where), _where(data, where), tuple(values))


def _page(data: Any, where: str) -> Page:
    data = _keys(data, _PAGE_KEYS, where)
    out = _text(data, "out", where, required=True)
    if Path(out).is_absolute() or ".." in Path(out).parts or Path(out).suffix:
        raise UserError(f"{where}: 'out' must be a path inside the repository without suffix, such as "
                        f"results/scaling (got {out!r})")
    tables = data.get("tables")
    if not isinstance(tables, list) or not tables:
        raise UserError(f"{where}: a page needs [[publish.tables]]")
    figures = _texts(data, "figures", where)
    unknown = [f for f in figures if f not in FIGURE_KINDS]
    if unknown:
        raise UserError(f"{where}: unknown figure(s) {', '.join(unknown)}; choices: {', '.join(FIGURE_KINDS)}")
    findings = data.get("findings", [])
    if not isinstance(findings, list):
        raise UserError(f"{where}: 'findings' must be [[publish.findings]] tables (got {findings!r})")
    headline = None
    if data.get("headline") is not None:
        h = _keys(data["headline"], _HEADLINE_KEYS, f"{where} headline")
        metric = _text(h, "metric", f"{where} headline") or HEADLINE_METRICS[0]
        if metric not in HEADLINE_METRICS:
            raise UserError(f"{where} headline: 'metric' must be one of {', '.join(HEADLINE_METRICS)} (got "
                            f"{metric!r})")
        headline = Headline(_text(h, "subject", f"{where} headline", True),
                            _text(h, "baseline", f"{where} headline", True),
                            _text(h, "against", f"{where} headline") or "system", _where(h, f"{where} headline"),
                            metric)
    return Page(out=out, title=_text(data, "title", where, required=True), about=_text(data, "about", where),
                tables=tuple(_table(t, f"{where} [[publish.tables]] #{i + 1}") for i, t in enumerate(tables)),
                headline=headline, figures=figures,
                findings=tuple(_finding(f, f"{where} [[publish.findings]] #{i + 1}") for i, f in enumerate(findings)))


def declaration_from_mapping(data: Mapping[str, Any], name: str, where: str) -> Declaration:
    """The ``[setup]`` and ``[[publish]]`` of a parsed campaign file; bad keys are one line naming ``where``."""
    setup = _keys(data.get("setup", {}), _SETUP_KEYS, f"{where} [setup]")
    fresh = setup.get("fresh_tuning_cache", False)
    if not isinstance(fresh, bool):
        raise UserError(f"{where} [setup]: 'fresh_tuning_cache' must be true or false (got {fresh!r})")
    pages = data.get("publish", [])
    if not isinstance(pages, list):
        raise UserError(f"{where}: 'publish' must be [[publish]] pages (got {pages!r})")
    return Declaration(name=name, setup=Setup(_texts(setup, "systems_path", f"{where} [setup]"), fresh),
                       pages=tuple(_page(p, f"{where} [[publish]] #{i + 1}") for i, p in enumerate(pages)))
