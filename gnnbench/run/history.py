"""History: a campaign run once per commit of a git range, each commit in its own clean worktree.

:func:`run_history` walks ``A..B`` of a repository that holds kernel systems
(an out-of-tree systems folder, ``docs/out-of-tree.md``), oldest first. Each
commit is checked out with ``git worktree add --detach`` into a temporary
folder, its systems are put first on ``GNNBENCH_SYSTEMS_PATH`` and their glue
is generated there, and the campaign is swept in a worker process of its own
(a fresh interpreter: no module of another commit's kernels is loaded). Every
row goes into one store.

Note [history rows]
    Each row stored by a history walk has ``extra.history``: the ``commit``
    (full hash) of the systems repository, its ``index`` in the walk (0 is
    the oldest commit of the range), its ``subject`` and ``repo``, and
    ``dependencies_differ`` (below). ``compare --by build`` labels builds by
    that commit and orders them by it (Note [build order] in
    :mod:`gnnbench.results.by_build`). A commit is skipped when every
    configuration of its campaign is already stored *for that commit* with
    the same provenance (Note [provenance] in :mod:`gnnbench.run.sweep`; the
    campaign's ``history`` scopes what counts as stored), so a rerun of a
    longer range measures only the new commits.

Note [failing commits]
    A commit whose systems cannot be built (a spec that does not parse, glue
    that cannot be generated, an unknown system) or whose worker dies stores
    one ``failed`` row per configuration of its campaign, the reason in
    ``error`` and ``extra.history.broken = true``, and the walk goes on. A
    rerun does not try a broken commit again unless asked (``retry_failed``,
    ``gnnbench history --retry-failed``: the cause may have been the
    environment). A *campaign* that does not
    parse at some commit is different: it is bad input, not a measurement,
    so every commit's campaign is read before anything runs and the first
    that fails is one line naming the commit (exit status 2), with nothing
    written.

Note [history environments]
    Each commit runs in this process's Python environment. Where a commit's
    dependency files (:data:`DEPENDENCY_FILES`) differ from those of the
    repository's checked-out ``HEAD`` the walk says so, in the report and in
    ``extra.history.dependencies_differ`` (the file names), instead of
    silently measuring against other libraries; building one environment
    per set of dependencies, as asv does, is left to a later step.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gnnbench.errors import UserError

__all__ = ["Commit", "CommitOutcome", "HistoryReport", "DEPENDENCY_FILES", "resolve_range", "run_history",
           "check_clean", "campaign_at"]

#: files whose change means a commit's dependencies differ (Note [history environments])
DEPENDENCY_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "constraints.txt",
                    "environment.yml")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclass
class CommitOutcome:
    """What the walk did at one commit: ``measured``, ``stored`` (nothing left to run) or ``failed``."""

    commit: Commit
    status: str
    ran: int = 0
    already_stored: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    dependencies_differ: tuple[str, ...] = ()

    def describe(self) -> str:
        head = f"{self.commit.short} {self.commit.subject}"
        if self.status == "failed":
            text = f"{head}: failed: {self.error}"
        elif self.status == "stored":
            text = f"{head}: already stored ({self.already_stored} runs)"
        else:
            parts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
            text = f"{head}: ran {self.ran}" + (f" ({parts})" if parts else "") + (
                f", {self.already_stored} already stored" if self.already_stored else "")
        if self.dependencies_differ:
            text += (f"; its {', '.join(self.dependencies_differ)} differ from HEAD's: measured in this "
                     f"environment")
        return text


@dataclass
class HistoryReport:
    repo: str
    range: str
    results: str
    outcomes: list[CommitOutcome] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "range": self.range, "results": self.results,
                "commits": [{"commit": o.commit.sha, "subject": o.commit.subject, "status": o.status,
                             "ran": o.ran, "already_stored": o.already_stored, "counts": o.counts,
                             "error": o.error, "dependencies_differ": list(o.dependencies_differ)}
                            for o in self.outcomes]}


def _git(repo: Path, *args: str, what: str | None = None) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60,
                              check=False)
    except FileNotFoundError:
        raise UserError("gnnbench history needs git on PATH") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise UserError(f"{what}: {first}" if what else first)
    return proc.stdout


def repo_root(path: str | os.PathLike) -> Path:
    """The top of the git repository holding ``path``."""
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"--repo {p}: no such folder")
    return Path(_git(p, "rev-parse", "--show-toplevel",
                     what=f"--repo {p} is not inside a git repository").strip())


def resolve_range(repo: Path, spec: str) -> list[Commit]:
    """The commits of ``A..B`` (git's meaning: reachable from B, not from A), oldest first, first parents only."""
    if ".." not in spec or spec.startswith("-") or "..." in spec:
        raise UserError(f"expected a git range A..B (e.g. HEAD~3..HEAD), got {spec!r}")
    out = _git(repo, "rev-list", "--reverse", "--first-parent", "--format=%H %s", "--no-commit-header", spec,
               "--", what=f"{spec!r} is not a git range of {repo}")
    commits = [Commit(*(line.split(" ", 1) + [""])[:2]) for line in out.splitlines() if line.strip()]
    if not commits:
        raise UserError(f"the range {spec!r} selects no commits of {repo} (is A an ancestor of B, and A != B?)")
    return commits


def check_clean(repo: Path) -> None:
    """Refuse a repository with uncommitted changes to tracked files: what runs is a commit, not the tree."""
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=no").strip()
    if dirty:
        first = dirty.splitlines()[0].strip()
        raise UserError(f"{repo} has uncommitted changes ({first}, ...): history measures commits, not the "
                        f"working tree; commit or stash them, or pass --allow-dirty")


def _relative(repo: Path, campaign: str | os.PathLike) -> str | None:
    """``campaign`` as a path inside ``repo`` (read at each commit), or None for a file outside it."""
    p = Path(campaign)
    full = (p if p.is_absolute() else Path.cwd() / p).resolve()
    try:
        return full.relative_to(repo.resolve()).as_posix()
    except ValueError:
        return None


def campaign_at(repo: Path, commit: Commit, campaign: str | os.PathLike):
    """The campaign as the commit has it (Note [failing commits]): a :class:`UserError` naming the commit."""
    from gnnbench.run.sweep import campaign_from_mapping, campaign_toml, load_campaign

    rel = _relative(repo, campaign)
    if rel is None:
        return load_campaign(campaign)
    try:
        raw = subprocess.run(["git", "-C", str(repo), "show", f"{commit.sha}:{rel}"], capture_output=True,
                             timeout=60, check=True).stdout
    except subprocess.CalledProcessError:
        raise UserError(f"the campaign {rel} does not exist at commit {commit.short}") from None
    where = f"{rel} at commit {commit.short}"
    data = campaign_toml(raw, where)
    data.setdefault("name", Path(rel).stem)
    return campaign_from_mapping(data, where)


def _dependencies_differ(repo: Path, commit: Commit) -> tuple[str, ...]:
    def blobs(rev: str) -> dict[str, str]:
        out = _git(repo, "ls-tree", rev, "--", *DEPENDENCY_FILES)
        return {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines() if "\t" in line}

    mine, head = blobs(commit.sha), blobs("HEAD")
    return tuple(sorted(name for name in set(mine) | set(head) if mine.get(name) != head.get(name)))


def _stored_broken(store_path: Path, sha: str) -> bool:
    from gnnbench.results.store import ResultsStore

    with ResultsStore(store_path, create=False) as store:
        return any(((r.get("extra") or {}).get("history") or {}).get("commit") == sha
                   and ((r.get("extra") or {}).get("history") or {}).get("broken") for r in store.rows(status="failed"))


def _check_systems_dir(tree: Path, systems_dir: str) -> Path:
    """``tree/systems_dir``, refused unless inside ``tree``: glue is regenerated there, and only there."""
    folder = (tree / systems_dir).resolve()
    if Path(systems_dir).is_absolute() or not folder.is_relative_to(tree.resolve()):
        raise UserError(f"--systems-dir {systems_dir} is outside the repository {tree}: give a folder inside it, "
                        f"relative to its top")
    return folder


def run_history(range_spec: str, campaign: str | os.PathLike, *, repo: str | os.PathLike = ".",
                results: str | os.PathLike | None = None, allow_dirty: bool = False, systems_dir: str = ".",
                retry_failed: bool = False, on_commit: Callable[[int, int, CommitOutcome], None] | None = None) -> HistoryReport:
    """Run ``campaign`` at each commit of ``range_spec`` and store every row in one store.

    Args:
        range_spec (str): ``A..B``, as ``git rev-list`` reads it (A excluded).
        campaign (str or Path): a TOML campaign (as ``gnnbench sweep --campaign``); a file inside ``repo``
            is read as each commit has it.
        repo (str or Path): the repository of kernel systems (default: the current folder).
        results (str or Path, optional): the store (default: ``$GNNBENCH_RESULTS`` or
            ``results/gnnbench.sqlite``).
        allow_dirty (bool): walk even with uncommitted changes (default: False).
        systems_dir (str): the folder inside the repository that holds ``NAME/NAME.gnn`` (default: its top).
        retry_failed (bool): try again commits an earlier walk stored as failing (default: False).
        on_commit (callable, optional): called with (index, total, outcome) after each commit.

    Raises:
        UserError: not a git range, a dirty tree, a campaign that does not parse at some commit, a store
            that cannot be opened; all before anything is written (Note [failing commits]).
    """
    from gnnbench.results.store import ResultsStore, default_results_path

    root = repo_root(repo)
    _check_systems_dir(root, systems_dir)
    if not allow_dirty:
        check_clean(root)
    commits = resolve_range(root, range_spec)
    campaigns = [campaign_at(root, c, campaign) for c in commits]  # every one parses, or nothing runs
    store_path = Path(results) if results is not None else default_results_path()
    with ResultsStore(store_path):  # created, upgraded and write-tested first (Note [store first])
        pass
    report = HistoryReport(str(root), range_spec, str(store_path))
    for index, (commit, plan) in enumerate(zip(commits, campaigns)):
        differ = _dependencies_differ(root, commit)
        stamp = {"commit": commit.sha, "index": index, "subject": commit.subject, "repo": str(root),
                 "dependencies_differ": list(differ)}
        if not retry_failed and _stored_broken(store_path, commit.sha):
            outcome = CommitOutcome(commit, "failed", error="stored as failing by an earlier walk",
                                    dependencies_differ=differ)
        else:
            outcome = _measure(root, commit, plan, stamp, store_path, systems_dir, campaign)
            outcome.dependencies_differ = differ
        report.outcomes.append(outcome)
        if on_commit is not None:
            on_commit(index, len(commits), outcome)
    return report


def _measure(root: Path, commit: Commit, campaign, stamp: dict, store_path: Path, systems_dir: str,
             campaign_path) -> CommitOutcome:
    folder = Path(tempfile.mkdtemp(prefix=f"gnnbench-history-{commit.short}-"))
    tree = folder / "tree"
    try:
        _git(root, "worktree", "add", "--detach", "--quiet", str(tree), commit.sha,
             what=f"cannot check out {commit.short}")
        rel = _relative(root, campaign_path)
        job = {"tree": str(tree), "repo": str(root), "systems_dir": systems_dir, "store": str(store_path.resolve()),
               "campaign": str(tree / rel) if rel else str(Path(campaign_path).resolve()), "history": stamp}
        (folder / "job.json").write_text(json.dumps(job))
        proc = subprocess.run([sys.executable, "-m", "gnnbench.run.history", str(folder / "job.json")],
                              capture_output=True, text=True, cwd=str(tree), check=False)
        summary = folder / "summary.json"
        if proc.returncode != 0 or not summary.exists():
            tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            error = f"the history worker of {commit.short} died: {tail}"
            _store_broken(campaign, stamp, store_path, error)
            return CommitOutcome(commit, "failed", error=error)
        data = json.loads(summary.read_text())
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], capture_output=True, check=False)
        subprocess.run(["git", "-C", str(root), "worktree", "prune"], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
    if data.get("error"):
        return CommitOutcome(commit, "failed", error=data["error"])
    status = "measured" if data["ran"] else "stored"
    return CommitOutcome(commit, status, ran=data["ran"], already_stored=data["already_stored"],
                         counts=data["counts"])


def _store_broken(campaign, stamp: dict, store_path: Path, error: str) -> None:
    """One ``failed`` row per configuration of ``campaign`` (Note [failing commits])."""
    from gnnbench.results.store import ResultsStore
    from gnnbench.run.runner import failure_row

    rows = []
    for matrix in campaign.matrices:
        for config in matrix.configs:
            row = failure_row(config, "failed", error)
            row["extra"] = {**(row.get("extra") or {}), "history": {**stamp, "broken": True}}
            rows.append(row)
    with ResultsStore(store_path) as store:
        store.insert_many(rows)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
        return True
    except (ValueError, OSError):
        return False


def _work(job_path: Path) -> None:
    """The worker: one commit's campaign, swept in this fresh process (Note [history rows])."""
    from gnnbench.dsl.spec import SpecError
    from gnnbench.run.sweep import load_campaign, run_sweep

    job = json.loads(job_path.read_text())
    systems = _check_systems_dir(Path(job["tree"]), job["systems_dir"])  # this commit's tree may link out
    # the repository's own checkout may be on the path (the author's everyday setting): its systems would
    # shadow the commit's under the same names, so every entry inside the repository is dropped
    repo = Path(job["repo"]).resolve()
    others = [p for p in os.environ.get("GNNBENCH_SYSTEMS_PATH", "").split(os.pathsep)
              if p and not _inside(Path(p), repo)]
    os.environ["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join([str(systems), *others])
    summary = job_path.parent / "summary.json"
    stamp = job["history"]
    campaign = load_campaign(job["campaign"])
    campaign = replace(campaign, results=job["store"], history=tuple(stamp.items()))
    try:
        from gnnbench.dsl.gen import regenerate

        specs = sorted(systems.glob("*/*.gnn"))
        if specs:  # a system folder committed as a link out of the tree is refused (Note [writes refuse links])
            regenerate(specs, within=systems)
        report = run_sweep(campaign, job["store"])
    except (UserError, SpecError) as err:
        error = f"at commit {stamp['commit'][:7]}: {str(err).splitlines()[0]}"
        _store_broken(campaign, stamp, Path(job["store"]), error)
        summary.write_text(json.dumps({"error": error}))
        return
    ran = len(report.rows)
    summary.write_text(json.dumps({"ran": ran, "already_stored": report.already_stored,
                                   "counts": report.counts(), "error": None}))


if __name__ == "__main__":
    _work(Path(sys.argv[1]))
