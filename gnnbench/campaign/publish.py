"""``gnnbench campaign run|render NAME``: a campaign file under campaigns/ run through the sweep, its rows
committed as text (Note [committed rows]) and its declared pages rendered (Note [campaign declares its tables]).

:func:`run_campaign` runs (or resumes: Note [resuming] in :mod:`gnnbench.run.sweep`) the campaign into its
SQLite store, writes every stored process of its plan to ``results/rows/NAME.jsonl.gz`` and renders;
:func:`render_campaign` renders from the committed rows alone, so a clean clone rewrites every published
table byte for byte. A campaign that decides (``decide = true``: Note [deciding campaigns] in
:mod:`gnnbench.run.ab`) runs its comparisons in paired rounds instead, each until decided or out of its
budget, skipping those the store already answers (Note [resuming decided comparisons]), and commits the
processes of the comparison that answers each, from which its tables show the verdicts (Note [decided
tables] in :mod:`gnnbench.campaign.columns`).

Note [resuming decided comparisons]
    A deciding campaign run again (``gnnbench campaign run NAME``, which
    commits its rows) does not rerun a comparison the store has already
    answered. :func:`stored_comparisons` rebuilds every session of the
    campaign's rows (``extra.sweep.campaign``; Note [paired rows]) and
    matches it to a comparison by provenance (Note [provenance] in
    :mod:`gnnbench.run.sweep`): each of its rows has the provenance of the
    comparison's system or baseline configuration, as its role says (a
    failed process's row is stamped with its configuration's identity, as a
    sweep stamps one), and its threshold is the campaign's. A matching
    session answers the comparison when it ended (Note [how a comparison
    ends] in :mod:`gnnbench.results.paired`): decided; failed, unless
    ``retry_failed``; or out of a budget at least the campaign's, so raising
    ``budget`` runs the undecided ones again with the larger budget. A
    cut-short session (the run was interrupted) answers nothing and the
    comparison runs again from its first round; ``rerun = true`` runs every
    comparison again. A new commit of the code is a new provenance, so it
    runs everything again, as a sweep does. Of several answering sessions
    the latest counts (:func:`gnnbench.results.paired.latest`).
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gnnbench.campaign.declaration import Declaration, Page, declaration_from_mapping
from gnnbench.errors import UserError

__all__ = ["ROOT", "campaign_names", "load", "rows_path", "run_campaign", "in_campaign_order", "render_campaign",
           "Rendered", "DecidedReport", "stored_comparisons", "headline_text", "page_rows"]

#: the repository: campaigns/ and results/ live here
ROOT = Path(__file__).resolve().parents[2]


def _campaigns(root: Path) -> Path:
    return root / "campaigns"


def campaign_names(root: Path | None = None) -> list[str]:
    """The stems of the campaign files under ``root/campaigns``."""
    root = root or ROOT
    return sorted(p.stem for p in _campaigns(root).glob("*.toml"))


def rows_path(name: str, root: Path | None = None) -> Path:
    """Where campaign ``name`` commits its rows (Note [committed rows])."""
    root = root or ROOT
    return root / "results" / "rows" / f"{name}.jsonl.gz"


def load(name: str, root: Path | None = None):
    """``(Campaign, Declaration)`` of ``campaigns/NAME.toml``.

    Raises:
        UserError: no such campaign (the choices listed), or a bad key, each in one line.
    """
    root = root or ROOT
    from gnnbench.run.sweep import campaign_from_mapping, campaign_toml

    names = campaign_names(root)
    if name not in names:
        raise UserError(f"unknown campaign {name!r}; choices: {', '.join(names)}")
    path = _campaigns(root) / f"{name}.toml"
    where = str(path.relative_to(root))
    data = campaign_toml(path.read_bytes(), where)
    data.setdefault("name", name)
    campaign = campaign_from_mapping(data, where)
    return campaign, declaration_from_mapping(data, name, where)


@contextmanager
def _setup(declaration: Declaration, root: Path):
    """The environment ``[setup]`` asks for, for the sweep's processes; restored afterwards."""
    saved = {k: os.environ.get(k) for k in ("GNNBENCH_SYSTEMS_PATH", "GNNBENCH_CACHE")}
    try:
        folders = [str((root / p).resolve()) for p in declaration.setup.systems_path]
        if folders:
            os.environ["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join(
                folders + [p for p in (saved["GNNBENCH_SYSTEMS_PATH"] or "").split(os.pathsep) if p])
        with tempfile.TemporaryDirectory(prefix="gnnbench-tuning-") as cache:
            if declaration.setup.fresh_tuning_cache:  # Note [tune on first use]: as on a new machine
                os.environ["GNNBENCH_CACHE"] = cache
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass(frozen=True)
class Rendered:
    """What a render wrote: the pages and figures (paths), and the pages that were already current."""

    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]


def run_campaign(name: str, *, rounds: int | None = None, results: str | None = None, root: Path | None = None,
                 sweep: Callable | None = None, dry_run: bool = False, runner: Callable | None = None,
                 on_result: Callable | None = None, on_round: Callable | None = None):
    """Runs (or resumes) campaign ``name``, commits its rows and renders its pages.

    Args:
        rounds (int, optional): processes per configuration (default: the campaign's; not for a campaign that
            decides, whose test decides how many).
        results (str, optional): the SQLite store (default: the campaign's ``results``).
        sweep (callable, optional): ``sweep(campaign, dry_run=...) -> SweepReport`` (default:
            :func:`gnnbench.run.sweep.run_sweep`); the CLI passes its progress display.
        runner (callable, optional): a deciding campaign's round runner (default: the campaign's
            ``processes``, Note [round runners] in :mod:`gnnbench.run.ab`); tests pass canned rows.
        on_result, on_round (callable, optional): a deciding campaign's progress, as
            :func:`gnnbench.run.ab.decide_campaign` takes them.

    Returns:
        ``(SweepReport or DecidedReport, Rendered or None)``: None for a dry run or a campaign that publishes
        nothing.

    Raises:
        UserError: ``rounds`` for a campaign that decides, or one that decides on Ray; each one line.
    """
    root = root or ROOT
    from gnnbench.results.rows_file import write_rows
    from gnnbench.results.store import ResultsStore
    from gnnbench.run.sweep import plan, provenance, run_sweep, with_rounds

    campaign, declaration = load(name, root)
    if campaign.decide and rounds is not None:
        raise UserError(f"--rounds does not apply to campaign {name}, which decides (decide = true): the "
                        f"sequential test decides how many rounds each comparison runs")
    if campaign.decide and campaign.executor != "local":
        raise UserError(f"campaigns/{name}.toml: decide = true runs its paired rounds on this machine; drop "
                        f"executor = \"{campaign.executor}\"")
    if rounds is not None:
        campaign = with_rounds(campaign, {"rounds": rounds})
    store = Path(results or (root / campaign.results if campaign.results else root / "results" / f"{name}.sqlite"))
    campaign = replace(campaign, results=str(store))
    with _setup(declaration, root):
        if campaign.decide:
            report, rows = _run_decided(campaign, store, dry_run, runner, on_result, on_round)
            if dry_run:
                return report, None
        else:
            report = (sweep or (lambda c, dry_run: run_sweep(c, dry_run=dry_run)))(campaign, dry_run=dry_run)
            if dry_run or not store.exists():
                return report, None
            with ResultsStore(store, create=False) as db:
                keys = [task.key for task in plan(campaign, db).tasks]
                rows = [_committed(r) for r in in_campaign_order(keys, db.rows(), provenance)]
    write_rows(rows_path(name, root), rows)
    return report, (render_campaign(name, root=root) if declaration.pages else None)


def in_campaign_order(keys: Sequence[str], rows: Iterable[Mapping[str, Any]],
                      key_of: Callable[[Mapping[str, Any]], str]) -> list[Mapping[str, Any]]:
    """The ``rows`` whose key (``key_of``) is one of the campaign's ``keys``, in the order of ``keys`` (its plan's),
    rows of one key in their stored order: a configuration measured again later (a resumed or repeated run)
    keeps its place in the tables, which list configurations as they first appear."""
    order: dict[str, int] = {}
    for key in keys:
        order.setdefault(key, len(order))
    return sorted((r for r in rows if key_of(r) in order), key=lambda r: order[key_of(r)])


@dataclass
class DecidedReport:
    """What a run of a deciding campaign did (Note [resuming decided comparisons]).

    Args:
        campaign (str): its name.
        comparisons (int): how many it holds.
        stored (list of Session): the comparisons the store already answered, which did not run.
        todo (list of (system config, baseline config)): the comparisons to run (a dry run's: that would run).
        ran (list of AbResult): the comparisons run, in order.
        unsaved (list of (path, error)): rows the store refused, each saved as JSON instead (Note [store first]).
        dry_run (bool): nothing ran.
    """

    campaign: str
    comparisons: int
    stored: list[Any]
    todo: list[tuple[Any, Any]]
    ran: list[Any]
    unsaved: list[tuple[str, str]]
    dry_run: bool = False

    @property
    def failures(self) -> list[Any]:
        """The comparisons stopped by a process that did not succeed."""
        return [r for r in self.ran if r.stopped == "failed"]


def _run_decided(campaign, store: Path, dry_run: bool, runner: Callable | None, on_result: Callable | None,
                 on_round: Callable | None) -> tuple[DecidedReport, list[dict[str, Any]]]:
    """Runs the comparisons of a deciding campaign that the store does not answer yet, storing each row as it
    arrives; the report and the rows to commit: the processes of the comparison that answers each."""
    import sqlite3

    from gnnbench.results.paired import paired_rounds
    from gnnbench.results.status import verification_status
    from gnnbench.results.store import ResultsStore, save_unsaved
    from gnnbench.run.ab import ROUND_RUNNERS, comparisons, decide_campaign

    pairs = comparisons(campaign)
    configs = [c for pair in pairs for c in pair]

    def rows_of(db) -> list[dict[str, Any]]:  # the runs a comparison of the campaign may hold, as a sweep reads
        return db.rows(system=sorted({c.system for c in configs}), model=sorted({c.model for c in configs}),
                       dataset=sorted({c.dataset for c in configs}))

    if dry_run:
        stored = []
        if store.exists():
            with ResultsStore(store, create=False) as db:
                stored = rows_of(db)
        found = stored_comparisons(campaign, stored)
        return DecidedReport(campaign.name, len(pairs), [s for *_, s in found if s is not None],
                             [(a, b) for a, b, s in found if s is None], [], [], dry_run=True), []
    unsaved: list[tuple[str, str]] = []
    with ResultsStore(store, create=True) as db:
        def store_row(row: dict[str, Any]) -> None:  # as a sweep stores one (Note [store first])
            row["verified"] = verification_status(db, row.get("system"), row.get("system_hash"))
            try:
                row["id"] = db.insert(row)
            except (sqlite3.Error, OSError) as err:
                unsaved.append((str(save_unsaved(row, db.path)), str(err).splitlines()[0] if str(err) else ""))

        found = stored_comparisons(campaign, rows_of(db))
        todo = [(a, b) for a, b, s in found if s is None]
        report = DecidedReport(campaign.name, len(pairs), [s for *_, s in found if s is not None], todo, [], unsaved)
        report.ran = decide_campaign(campaign, runner=runner or ROUND_RUNNERS[campaign.processes], pairs=todo,
                                     on_row=store_row, on_result=on_result, on_round=on_round)
        rows = rows_of(db)
    sessions = paired_rounds(rows)
    just_run = {_key(a): sessions.get(result.session) for (a, _), result in zip(todo, report.ran)}
    committed = []
    for system_config, _, session in stored_comparisons(campaign, rows):
        session = session or just_run.get(_key(system_config))  # run now, and ended unanswered: still shown
        committed += list(session.rows) if session is not None else []
    return report, [_committed(r) for r in sorted(committed, key=lambda r: r.get("id") or 0)]


def _answers(session, keys: Mapping[str, str], campaign) -> bool:
    """Whether a stored ``session`` answers the comparison whose roles have provenance ``keys`` (Note
    [resuming decided comparisons])."""
    from gnnbench.core.sequential import THRESHOLD
    from gnnbench.results.paired import pairing
    from gnnbench.run.ab import BUDGET, parse_budget
    from gnnbench.run.sweep import provenance

    if not session.rows or abs(session.threshold - (campaign.threshold or THRESHOLD)) > 1e-12:
        return False
    if any(provenance(row) != keys.get(pairing(row).get("role")) for row in session.rows):
        return False
    budget = campaign.budget or parse_budget(BUDGET)
    return (session.stopped == "decided" or (session.stopped == "failed" and not campaign.retry_failed)
            or (session.stopped == "budget" and session.budget_s is not None and session.budget_s >= budget))


def stored_comparisons(campaign, rows: Iterable[Mapping[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """``(system config, baseline config, session or None)`` for each comparison of ``campaign``
    (:func:`gnnbench.run.ab.comparisons`): the stored session among ``rows`` that answers it (Note [resuming
    decided comparisons]), None when it is still to run (always, with ``rerun``)."""
    from gnnbench.results.paired import latest, paired_rounds
    from gnnbench.run.ab import comparisons, identities
    from gnnbench.run.sweep import provenance

    def ours(row: Mapping[str, Any]) -> bool:
        extra = row.get("extra")
        sweep = extra.get("sweep") if isinstance(extra, Mapping) else None
        return isinstance(sweep, Mapping) and sweep.get("campaign") == campaign.name

    sessions = list(paired_rounds(r for r in rows if ours(r)).values())
    out = []
    for system_config, baseline_config in comparisons(campaign):
        keys = {role: provenance(fields) for role, fields in identities(system_config, baseline_config).items()}
        found = [] if campaign.rerun else [s for s in sessions if _answers(s, keys, campaign)]
        out.append((system_config, baseline_config, latest(found)))
    return out


def _key(config) -> str:
    return json.dumps(config.as_dict(), sort_keys=True, default=str)


def _committed(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row as it is committed (Note [committed rows]): without its stderr (kept in the store) and
    without the machine's host name."""
    out = {k: v for k, v in row.items() if k != "stderr"}
    if isinstance(out.get("machine"), Mapping):
        out["machine"] = {k: v for k, v in out["machine"].items() if k != "hostname"}
    return out


def page_rows(page: Page, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows any of ``page``'s tables shows (:func:`gnnbench.campaign.render.page_rows`)."""
    from gnnbench.campaign.render import page_rows as shown

    return shown(page, rows)


def _graph_label(dataset: str, row: Mapping[str, Any]) -> str:
    """A headline's short name of a graph: ``rmat 4M`` (its edges), ``aifb-like`` or ``igbh-like x0.1`` (a
    typed preset and its scale, Note [hetero presets]), else the dataset's family."""
    from gnnbench.campaign.entries import field_of

    family, _, spec = dataset.partition(":")
    if family == "rmat":
        return f"{family} {field_of(row, 'edges')}"
    params = dict(part.partition("=")[::2] for part in spec.split(",") if "=" in part)
    if family == "hetero" and params.get("like"):
        scale = params.get("scale", "1")
        return f"{params['like']}-like" + ("" if float(scale) == 1 else f" x{float(scale):g}")
    return family


def headline_text(page: Page, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The page's headline: ``dgl-native's epoch / isplib's: gcn 1.09x [1.01, 1.17]; sage ...``, one ratio per
    model and dataset the headline's ``where`` leaves (no interval where the rows hold no processes); None
    without a headline or the runs it needs. Where the rows hold paired comparisons of the headline's subject
    against its baseline, the verdict line of each instead (:func:`_verdicts_headline`)."""
    from gnnbench.campaign import to_target
    from gnnbench.campaign.columns import ratio_text
    from gnnbench.campaign.entries import entries, selected

    h = page.headline
    if h is None:
        return None
    verdicts = _verdicts_headline(page, rows)
    if verdicts is not None:
        return verdicts
    fields = ["model", "dataset", "system"] + ([h.against] if h.against != "system" else [])
    found = [e for e in entries(selected(rows, h.where), fields) if e.ok]
    parts = []
    several = len({e["dataset"] for e in found}) > 1
    for e in (e for e in found if e[h.against] == h.subject):
        base = next((b for b in found if b[h.against] == h.baseline
                     and all(b[f] == e[f] for f in fields if f != h.against)), None)
        if base is not None:
            label = (e["model"], f"on {_graph_label(str(e['dataset']), e.latest)}" if several else None)
            ratio = ratio_text(base, e) if h.metric == "epoch" else to_target.speedup_text(e, base)
            parts.append(" ".join(str(v) for v in (*label, ratio) if v is not None))
    if not parts:
        return None
    where = ", ".join(f"{k} {_where_value(k, v, found)}" for k, v in h.where)
    return f"{h.baseline}'s {h.metric} / {h.subject}'s" + (f" ({where})" if where else "") + ": " + "; ".join(parts)


def _where_value(key: str, value: Any, found: Sequence[Any]) -> str:
    """A headline's ``where`` value as its text says it: a dataset by its graph label (``igbh-like x0.1``)."""
    if isinstance(value, tuple):
        return "/".join(str(v) for v in value)
    if key == "dataset":
        row = next((e.latest for e in found if e["dataset"] == value), {})
        return _graph_label(str(value), row)
    return str(value)


def _verdicts_headline(page: Page, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """``gcn: isplib 1.12x faster than dgl-native [1.06, 1.19], decided after 14 rounds (...); sage: ...``: the
    verdict line ``gnnbench ab`` prints (:func:`gnnbench.results.paired.verdict_line`) of each comparison of the
    headline's subject against its baseline that the rows hold, per model and dataset, the latest that ended
    (Note [decided tables] in :mod:`gnnbench.campaign.columns`); None when they hold none."""
    from gnnbench.campaign.entries import field_of, selected
    from gnnbench.core.sequential import SYSTEM
    from gnnbench.results.paired import latest, paired_rounds, pairing

    h = page.headline
    if h is None or h.against != "system":
        return None
    groups: dict[tuple[Any, Any], list[Any]] = {}
    for session in paired_rounds(rows).values():
        own = [r for r in session.rows if pairing(r).get("role") == SYSTEM]
        if session.system == h.subject and session.baseline == h.baseline and selected(own[:1], h.where):
            groups.setdefault((field_of(own[0], "model"), field_of(own[0], "dataset")), []).append(session)
    if not groups:
        return None
    several = len({dataset for _, dataset in groups}) > 1
    parts = []
    for (model, dataset), sessions in groups.items():
        label = f"{model} on {str(dataset).split(':')[0]}" if several else str(model)
        parts.append(f"{label}: {latest(sessions).line()}")
    return "; ".join(parts)


def render_campaign(name: str, *, root: Path | None = None,
                    rows: Sequence[Mapping[str, Any]] | None = None) -> Rendered:
    """Renders campaign ``name``'s pages from its committed rows (or ``rows``); a page whose text is unchanged
    is not rewritten, so a render of current rows leaves ``git status`` clean.

    Raises:
        UserError: no such campaign, no pages declared, or no committed rows.
    """
    root = root or ROOT
    from gnnbench.campaign.figures import draw
    from gnnbench.campaign.render import render_page
    from gnnbench.results.rows_file import read_rows

    _, declaration = load(name, root)
    if not declaration.pages:
        raise UserError(f"campaign {name} declares no tables; add [[publish]] pages to campaigns/{name}.toml "
                        f"(Note [campaign declares its tables] in gnnbench/campaign/declaration.py)")
    if rows is None:
        path = rows_path(name, root)
        if not path.exists():
            raise UserError(f"campaign {name} has no committed rows at {path.relative_to(root)}; run "
                            f"`gnnbench campaign run {name}` on a quiet machine first")
        rows = read_rows(path)
    written, unchanged = [], []
    for page in declaration.pages:
        target = root / f"{page.out}.md"
        text = render_page(page, rows)
        if target.exists() and target.read_text(encoding="utf-8") == text:
            unchanged.append(target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(target)
        for kind in page.figures:
            written += draw(kind, page_rows(page, rows), root / "results" / "figures", Path(page.out).name)
    return Rendered(tuple(written), tuple(unchanged))
