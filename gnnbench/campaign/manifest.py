"""The index of what is published, stated once: ``results/README.md`` and README's figures table, both generated.

Note [results index]
    Every table under results/ is listed once, by what makes it: a campaign
    page (Note [campaign declares its tables]), whose headline, commit and
    load come from its committed rows (Note [committed rows]); or a study
    (results/studies/, made by a script of benchmarks/studies/), whose
    commit and load come from its own JSON or text. A campaign page whose
    rows were never committed (tables measured before the rows were kept)
    shows the commit and load its table states and says that its rows await
    the next quiet re-measurement. README's figures table has one line per
    campaign that publishes, drawn from the same entries, and one per study
    whose script states a headline in its JSON (its repeats, written with
    ``--out``, on the same line), so a figure in README is never typed by
    hand. ``gnnbench campaign index`` rewrites both;
    a test keeps them current.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Listed", "published", "studies", "others", "index_markdown", "readme_block", "write_index",
           "README_START", "README_END"]

README_START = "<!-- figures: generated from the results index by `gnnbench campaign index`; do not edit -->"
README_END = "<!-- end of figures -->"
_LOAD = re.compile(r"load average at start ([\d.]+), at end ([\d.]+)", re.IGNORECASE)
#: how a script names what it writes: ``ROOT / "results" / "studies" / "X"``, ``"results/studies/X"`` or
#: ``results/studies/X.md`` in its text
_WRITES = re.compile(r'"results" / (?:"studies" / )?"([\w.-]+)"|results/(?:studies/)?([\w.-]+?)\.md'
                     r'|"results/(?:studies/)?([\w.-]+)"')
_COMMIT = re.compile(r"[Mm]easured at commits? ([0-9a-f]{7}(?:-dirty)?)")


@dataclass(frozen=True)
class Listed:
    """One table in the index."""

    path: str                 # relative to the repository, e.g. results/scaling.md
    title: str
    maker: str                # `campaigns/NAME.toml` or `benchmarks/studies/X.py`
    commit: str
    load: str
    headline: str | None = None
    rows: str | None = None   # the committed rows file, or None
    campaign: str | None = None


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def _json_of(md: Path) -> dict[str, Any]:
    try:
        data = json.loads(md.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _stated_commit(md: Path) -> str:
    data = _json_of(md)
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    measured = meta.get("measured_at")
    if isinstance(measured, list) and measured:
        short = dict.fromkeys(str(c)[:7] + ("-dirty" if str(c).endswith("-dirty") else "") for c in measured)
        return ", ".join(short)
    for commit in (meta.get("git_commit"), data.get("git_commit")):
        if isinstance(commit, str) and commit:
            return commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")
    found = _COMMIT.findall(md.read_text(encoding="utf-8"))
    return ", ".join(dict.fromkeys(found)) or "not recorded"


def _stated_load(md: Path) -> str:
    data = _json_of(md)
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    for pair in (data.get("load"), data.get("load_average"),
                 [meta.get("load_average_start"), meta.get("load_average_end")]):
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair):
            return f"{pair[0]:.1f} -> {pair[1]:.1f}"
    found = _LOAD.search(md.read_text(encoding="utf-8"))
    return f"{float(found[1]):.1f} -> {float(found[2]):.1f}" if found else "not recorded"


def _published_medians(md: Path) -> list[dict[str, Any]]:
    """The pooled rows a table measured before rows were committed kept in its JSON (``runs``): one row per
    configuration with its medians, no processes, so a headline from them is a ratio of medians without an
    interval. The allocator the campaign asked for, kept as ``requested_allocator``, reads as the sweep's."""
    data = _json_of(md)
    runs = data.get("runs", data.get("rows"))
    if not isinstance(runs, list):
        return []
    out = []
    for run in (r for r in runs if isinstance(r, dict)):
        row = {k: v for k, v in run.items() if k not in ("epoch_times", "process_epoch_times")}
        if run.get("requested_allocator"):
            row["extra"] = {"sweep": {"spec": {"allocator": run["requested_allocator"]}}}
        out.append(row)
    return out


def published(root: Path) -> list[Listed]:
    """Every declared campaign page, in campaign order."""
    from gnnbench.campaign.publish import campaign_names, headline_text, load, page_rows, rows_path
    from gnnbench.campaign.render import commits_of, rows_load
    from gnnbench.results.rows_file import read_rows

    out = []
    for name in campaign_names(root):
        pages = load(name, root)[1].pages
        committed = rows_path(name, root)
        rows = read_rows(committed) if pages and committed.exists() else None
        for page in pages:
            md = root / f"{page.out}.md"
            if rows is not None:
                mine = page_rows(page, rows)
                load_pair = rows_load(mine)
                commit = ", ".join(commits_of(mine)) or "not recorded"
                load_text = "not recorded" if load_pair is None else f"{load_pair[0]:.1f} -> {load_pair[1]:.1f}"
                listed = Listed(f"{page.out}.md", page.title, f"campaigns/{name}.toml", commit, load_text,
                                headline_text(page, rows), str(committed.relative_to(root)), name)
            elif md.exists():
                listed = Listed(f"{page.out}.md", page.title, f"campaigns/{name}.toml", _stated_commit(md),
                                _stated_load(md), headline_text(page, _published_medians(md)), None, name)
            else:
                continue  # declared, never measured: nothing is published yet
            out.append(listed)
    return out


def _makers(folder: Path, root: Path) -> dict[str, str]:
    """Which script writes which table: the names its code gives under results/ (``"studies" / "X"`` or
    ``"results/studies/X"``); a shell script's, which has no such code, by ``results/studies/X.md`` in its
    text. A Python script's docstring that links a page (a Note's ``results/studies/X.md``) does not make it."""
    makers: dict[str, str] = {}
    for script in sorted(folder.glob("*.py")) + sorted(folder.glob("*.sh")):
        text = script.read_text(encoding="utf-8")
        for code, linked, quoted in re.findall(_WRITES, text):
            if linked and script.suffix == ".py":
                continue
            makers.setdefault(code or linked or quoted, str(script.relative_to(root)))
    return makers


def studies(root: Path) -> list[Listed]:
    """Every table under results/studies/, with the study that makes it (``one-off`` when none does)."""
    makers = _makers(root / "benchmarks" / "studies", root)
    return [Listed(str(md.relative_to(root)), _title(md), _maker(makers, md.stem, "one-off (no script remakes it)"),
                   _stated_commit(md), _stated_load(md), _stated_headline(md))
            for md in sorted((root / "results" / "studies").glob("*.md"))]


def _stated_headline(md: Path) -> str | None:
    """A study's headline, which its script computes from its figures and keeps in its JSON (``headline``)."""
    headline = _json_of(md).get("headline")
    return headline if isinstance(headline, str) and headline else None


def _maker(makers: dict[str, str], stem: str, missing: str) -> str:
    """The script that writes ``stem``, or writes it under another ``--out`` (``sampler_2threads``: sampler's)."""
    if stem in makers:
        return makers[stem]
    prefixed = [k for k in makers if stem.startswith(k + "_")]
    return f"{makers[max(prefixed, key=len)]} --out" if prefixed else missing


def others(root: Path, declared: set[str]) -> list[Listed]:
    """The tables at results/ that no campaign page declares: made by a script left in benchmarks/, or not."""
    makers = _makers(root / "benchmarks", root)
    return [Listed(str(md.relative_to(root)), _title(md), _maker(makers, md.stem, "no maker"), _stated_commit(md),
                   _stated_load(md))
            for md in sorted((root / "results").glob("*.md"))
            if md.name != "README.md" and str(md.relative_to(root)) not in declared]


def _cell(text: str | None) -> str:
    return (text or "-").replace("|", "\\|")


def index_markdown(root: Path) -> str:
    """The text of results/README.md (Note [results index])."""
    pages = published(root)
    lines = ["# Published results", "",
             "Generated by `gnnbench campaign index` (Note [results index] in gnnbench/campaign/manifest.py); do "
             "not edit. Load is the 1-minute load average before the first and after the last run.", "",
             "## Campaign tables", "",
             "Each comes from a campaign file through one command, `gnnbench campaign run NAME` (measure, commit "
             "the rows, render) or `gnnbench campaign render NAME` (re-render from the committed rows). A table "
             "without committed rows was measured before rows were kept; its next quiet re-measurement commits "
             "them; its headline is then a ratio of the medians the table kept (no interval).", "",
             "| table | campaign | headline | rows | commit | load |", "| --- | --- | --- | --- | --- | --- |"]
    for p in pages:
        rows = f"[{Path(p.rows).name}]({Path(p.rows).relative_to('results')})" if p.rows else "not committed"
        lines.append(f"| [{_cell(p.title)}]({Path(p.path).relative_to('results')}) | `{p.maker}` | "
                     f"{_cell(p.headline)} | {rows} | {p.commit} | {p.load} |")
    lines += ["", "## Studies", "",
              "Each answers a question of its own that a campaign cannot express; its script is in "
              "benchmarks/studies/.", "", "| table | made by | commit | load |", "| --- | --- | --- | --- |"]
    lines += [f"| [{_cell(s.title)}]({Path(s.path).relative_to('results')}) | `{s.maker}` | {s.commit} | {s.load} |"
              for s in studies(root)]
    rest = others(root, {p.path for p in pages})
    if rest:
        lines += ["", "## Other tables", "", "| table | made by | commit | load |", "| --- | --- | --- | --- |"]
        lines += [f"| [{_cell(o.title)}]({Path(o.path).relative_to('results')}) | `{o.maker}` | {o.commit} | "
                  f"{o.load} |" for o in rest]
    return "\n".join(lines) + "\n"


def readme_block(root: Path) -> str:
    """README's figures table: one line per campaign that publishes, from the same entries as the index."""
    by_campaign: dict[str, list[Listed]] = {}
    for p in published(root):
        by_campaign.setdefault(p.campaign or p.maker, []).append(p)
    lines = [README_START, "", "| campaign | what it measures | headline |", "| --- | --- | --- |"]
    for name, pages in by_campaign.items():
        first = pages[0]
        headline = next((p.headline for p in pages if p.headline), None) or (
            "no one ratio: see the table" if any(p.rows for p in pages) else "rows not committed yet: see the table")
        lines.append(f"| `{name}` | [{_cell(first.title)}]({first.path}) | {_cell(headline)} |")
    by_study: dict[str, list[Listed]] = {}
    for s in studies(root):
        if s.headline:  # a study that states a headline (its JSON's) is a figure README shows
            script = s.maker.split()[0]
            by_study.setdefault(script if script.startswith("benchmarks/") else s.path, []).append(s)
    for script, pages in by_study.items():
        first, *repeats = pages
        headline = "; ".join([first.headline or ""] + [f"{Path(p.path).stem}: {p.headline}" for p in repeats])
        lines.append(f"| `{script}` | [{_cell(first.title)}]({first.path}) | {_cell(headline)} |")
    return "\n".join(lines + ["", README_END])


def write_index(root: Path) -> list[Path]:
    """Rewrites results/README.md and README's figures block where they changed; the paths written."""
    written = []
    index = root / "results" / "README.md"
    text = index_markdown(root)
    if not index.exists() or index.read_text(encoding="utf-8") != text:
        index.write_text(text, encoding="utf-8")
        written.append(index)
    readme = root / "README.md"
    if readme.exists():
        old = readme.read_text(encoding="utf-8")
        if README_START in old and README_END in old:
            head, rest = old.split(README_START, 1)
            new = head + readme_block(root) + rest.split(README_END, 1)[1]
            if new != old:
                readme.write_text(new, encoding="utf-8")
                written.append(readme)
    return written
