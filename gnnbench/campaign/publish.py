"""``gnnbench campaign run|render NAME``: a campaign file under campaigns/ run through the sweep, its rows
committed as text (Note [committed rows]) and its declared pages rendered (Note [campaign declares its tables]).

:func:`run_campaign` runs (or resumes: Note [resuming] in :mod:`gnnbench.run.sweep`) the campaign into its
SQLite store, writes every stored process of its plan to ``results/rows/NAME.jsonl.gz`` and renders;
:func:`render_campaign` renders from the committed rows alone, so a clean clone rewrites every published
table byte for byte.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gnnbench.campaign.declaration import Declaration, Page, declaration_from_mapping
from gnnbench.errors import UserError

__all__ = ["ROOT", "campaign_names", "load", "rows_path", "run_campaign", "render_campaign", "Rendered",
           "headline_text", "page_rows"]

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
                 sweep: Callable | None = None, dry_run: bool = False):
    """Runs (or resumes) campaign ``name``, commits its rows and renders its pages.

    Args:
        rounds (int, optional): processes per configuration (default: the campaign's).
        results (str, optional): the SQLite store (default: the campaign's ``results``).
        sweep (callable, optional): ``sweep(campaign, dry_run=...) -> SweepReport`` (default:
            :func:`gnnbench.run.sweep.run_sweep`); the CLI passes its progress display.

    Returns:
        ``(SweepReport, Rendered or None)``: None for a dry run or a campaign that publishes nothing.
    """
    root = root or ROOT
    from gnnbench.results.rows_file import write_rows
    from gnnbench.results.store import ResultsStore
    from gnnbench.run.sweep import plan, provenance, run_sweep, with_rounds

    campaign, declaration = load(name, root)
    if rounds is not None:
        campaign = with_rounds(campaign, {"rounds": rounds})
    store = Path(results or (root / campaign.results if campaign.results else root / "results" / f"{name}.sqlite"))
    campaign = replace(campaign, results=str(store))
    with _setup(declaration, root):
        report = (sweep or (lambda c, dry_run: run_sweep(c, dry_run=dry_run)))(campaign, dry_run=dry_run)
        if dry_run or not store.exists():
            return report, None
        with ResultsStore(store, create=False) as db:
            keys = {task.key for task in plan(campaign, db).tasks}
            rows = [_committed(r) for r in db.rows() if provenance(r) in keys]
    write_rows(rows_path(name, root), rows)
    return report, (render_campaign(name, root=root) if declaration.pages else None)


def _committed(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row as it is committed (Note [committed rows]): without its stderr (kept in the store) and
    without the machine's host name."""
    out = {k: v for k, v in row.items() if k != "stderr"}
    if isinstance(out.get("machine"), Mapping):
        out["machine"] = {k: v for k, v in out["machine"].items() if k != "hostname"}
    return out


def page_rows(page: Page, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows any of ``page``'s tables shows."""
    from gnnbench.campaign.entries import selected

    shown = {id(r): r for t in page.tables for r in selected(rows, t.where)}
    return list(shown.values())


def headline_text(page: Page, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The page's headline: ``dgl-native's epoch / isplib's: gcn 1.09x [1.01, 1.17]; sage ...``, one ratio per
    model and dataset the headline's ``where`` leaves (no interval where the rows hold no processes); None
    without a headline or the runs it needs."""
    from gnnbench.campaign.columns import ratio_text
    from gnnbench.campaign.entries import entries, field_of, selected

    h = page.headline
    if h is None:
        return None
    fields = ["model", "dataset", "system"] + ([h.against] if h.against != "system" else [])
    found = [e for e in entries(selected(rows, h.where), fields) if e.ok]
    parts = []
    several = len({e["dataset"] for e in found}) > 1
    for e in (e for e in found if e[h.against] == h.subject):
        base = next((b for b in found if b[h.against] == h.baseline
                     and all(b[f] == e[f] for f in fields if f != h.against)), None)
        if base is not None:
            name = str(e["dataset"]).split(":")[0]
            graph = f"{name} {field_of(e.latest, 'edges')}" if name == "rmat" else name
            label = (e["model"], f"on {graph}" if several else None)
            parts.append(" ".join(str(v) for v in (*label, ratio_text(base, e)) if v is not None))
    if not parts:
        return None
    where = ", ".join(f"{k} {'/'.join(v) if isinstance(v, tuple) else v}" for k, v in h.where)
    return f"{h.baseline}'s epoch / {h.subject}'s" + (f" ({where})" if where else "") + ": " + "; ".join(parts)


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
