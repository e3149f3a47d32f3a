"""What the benchmark scripts share: running a campaign, formatting cells, provenance, writing results.

Published tables are campaign pages, rendered by ``gnnbench campaign run|render NAME``
(:mod:`gnnbench.campaign`); what stays here serves the scripts that remain: the studies
(benchmarks/studies/, each a question a campaign cannot express, the A/A study among them) and the
run-check benchmark. A study that trains runs its campaign through :func:`run_campaign` (the sweep:
its own process per run, interleaved, resumable, every row stored with its provenance in
:data:`RESULTS_DB`); one that times kernels outside the training loop uses
:func:`provenance` and :func:`write_results` so its JSON carries the machine, commit and
versions like a stored row.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from gnnbench.run.environment import cpu_model  # noqa: F401  (re-exported for the scripts)
from gnnbench.core.measurement import NOISE_THRESHOLD, Measurement
from gnnbench.core.phases import PHASES
from gnnbench.results.tables import Table  # noqa: F401  (re-exported: every benchmark table renders through it)
# Note [measured under load] and the load a table's rows recorded live with the one table renderer
from gnnbench.campaign.render import load_note, other_cpu, rows_load  # noqa: F401  (re-exported for the studies)

__all__ = ["ROOT", "CAMPAIGNS", "RESULTS_DB", "NOISE_NOTE", "ms", "mib", "epoch_ms", "ok", "versions", "out_path",
           "provenance", "write_results", "campaign", "run_campaign", "run_beside_load", "cpu_model", "Table", "load_note", "other_cpu", "run_script",
           "print_plan", "measure_or_render"]

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = ROOT / "campaigns"
#: where the benchmark campaigns store their runs (ignored by git, like every results/*.sqlite)
RESULTS_DB = ROOT / "results" / "benchmarks.sqlite"
NOISE_NOTE = f"`(! XX%)` flags IQR/median above {NOISE_THRESHOLD:.0%}"


class Parser(argparse.ArgumentParser):
    """argparse whose bad flags raise :class:`~gnnbench.errors.UserError`: the script prints one line, exits 2."""

    def error(self, message: str):
        from gnnbench.errors import UserError

        raise UserError(message)


def count(text: str) -> int:
    """An argparse type for counts (``--rounds``, ``--epochs``): a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1 (got {text!r})")
    return value


def out_path(text: str) -> str:
    """An argparse type for ``--out`` (a results path without suffix): the place must take files, checked before
    anything is measured (:mod:`gnnbench.paths`), so that no run ends by failing to write what it measured.

    Folders that do not exist yet are fine (:func:`write_results` creates them); the nearest one that does is
    probed."""
    from gnnbench.errors import UserError
    from gnnbench.paths import check_output_dir, check_path_length

    folder = Path(text).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        check_path_length(Path(text + ".json"), "--out")
        check_output_dir(folder, "results in")
    except UserError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def run_script(name: str, parser: argparse.ArgumentParser, run, argv: list[str] | None) -> int:
    """``run(parser.parse_args(argv))``; a bad flag or input (:class:`~gnnbench.errors.UserError`) prints one
    line naming the script and exits with status 2."""
    from gnnbench.errors import UserError

    try:
        return run(parser.parse_args(argv))
    except UserError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 2


def print_plan(name: str, the_campaign, results: str | Path) -> int:
    """``--dry-run``: the runs ``the_campaign`` would make (none is made), and how many are already stored."""
    from gnnbench.run.sweep import run_sweep

    report = run_sweep(the_campaign, results, dry_run=True)
    for task in report.todo:
        print(task.describe())
    print(f"{name}: would run {len(report.todo)} of {report.planned} runs ({report.already_stored} already stored)")
    return 0


def measure_or_render(the_campaign, results: str | Path, render_only: bool, latest_key) -> tuple[list[dict], tuple]:
    """The campaign's rows and the load they ran under, ``(start, end)``.

    Runs (or resumes) ``the_campaign``; under ``render_only`` runs nothing and returns, of the stored rows,
    the latest for each ``latest_key(row)`` that is not None (whatever commit it was measured at), with the load
    recorded by the processes of those rows' commits (:func:`rows_load`), ``(None, None)`` for rows from before
    they recorded it."""
    from gnnbench.errors import UserError
    from gnnbench.results.frame import frame_records

    if not render_only:
        start = os.getloadavg()[0]
        rows = frame_records(run_campaign(the_campaign, results))
        return rows, (start, os.getloadavg()[0])
    latest = latest_rows(stored_rows(results), latest_key)
    if not latest:
        raise UserError(f"no stored runs of campaign {the_campaign.name} in {results} to render")
    from gnnbench.results.frame import load_results

    commits = {r.get("git_commit") for r in latest}
    runs = [r for r in frame_records(load_results(results))  # every process of the commits rendered
            if latest_key(r) is not None and r.get("git_commit") in commits]
    return latest, rows_load(runs) or (None, None)


def latest_rows(rows: Iterable[Mapping[str, Any]], key) -> list:
    """The latest row (by timestamp, then id) for each ``key(row)`` that is not None: a store keeps every
    campaign it ever ran, and a table shows the newest measurement of each configuration."""
    latest: dict[Any, Any] = {}
    for r in sorted(rows, key=lambda r: (str(r.get("timestamp")), r.get("id") or 0)):
        k = key(r)
        if k is not None:
            latest[k] = r
    return list(latest.values())


def ms(seconds: float | None, digits: int = 1) -> str:
    """Seconds as milliseconds with ``digits`` decimals; ``-`` for None."""
    return "-" if seconds is None else f"{seconds * 1e3:.{digits}f}"


def mib(nbytes: float | None) -> str:
    """Bytes as MiB with one decimal; ``-`` for None."""
    return "-" if nbytes is None else f"{nbytes / 2**20:.1f}"


def ok(row: Mapping[str, Any] | None) -> bool:
    return bool(row) and row.get("status") == "ok"


def epoch_ms(row: Mapping[str, Any] | None, digits: int = 1) -> str:
    """The median epoch time in ms with its noise mark (:class:`~gnnbench.core.measurement.Measurement`);
    the status for a failed run, ``-`` for none."""
    if row is None:
        return "-"
    if not ok(row):
        return str(row.get("status"))
    lists = row.get("process_epoch_times")
    if isinstance(lists, list) and len(lists) > 1:  # Note [rounds pool]: the figure over processes
        p = processes_of(lists)
        unsteady = [r for r in p.instability() if not r.endswith("needed")]
        return f"{ms(p.median, digits)}" + (f" (! {unsteady[0]})" if unsteady else "")
    m = Measurement.from_row(row)
    return "-" if m.empty else f"{ms(m.median, digits)} {m.warning}".rstrip()


def measured_note(load: tuple[float, float] | None, commits: Iterable[str] | None) -> str:
    """Where a table's rows come from: the load they ran under (or that they were rendered from stored
    rows, whose load was not kept) and the commits they were measured at (the rows' ``git_commit``)."""
    short = (c[:7] + ("-dirty" if c.endswith("-dirty") else "") for c in commits or ())
    unique = list(dict.fromkeys(short))  # a dirty tree stays visible
    named = ("commits " if len(unique) > 1 else "commit ") + (", ".join(unique) or "unknown")
    if load is None:
        return f"Load not recorded: rendered from stored rows (`--render-only`) measured at {named}."
    return f"{load_note(*load)} Measured at {named}."


def versions(*packages: str) -> dict[str, str]:
    """Installed versions of ``packages`` (distribution names; ``not installed`` when missing)."""
    out = {}
    for package in packages:
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out


def provenance(**settings: Any) -> dict[str, Any]:
    """What a stored row records about where it ran: time, commit, machine (CPU, libraries), plus ``settings``."""
    from gnnbench.run.environment import git_commit, machine_info
    from gnnbench.results.store import utc_now

    return {"timestamp": utc_now(), "git_commit": git_commit(), "machine": machine_info(), **settings}


def write_results(out: str | Path, payload: Mapping[str, Any], markdown: str) -> None:
    """Writes ``out.json`` (``payload``) and ``out.md`` (``markdown``) and prints the markdown."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown)
    print(markdown)


#: the load generator of the loaded conditions: a memory-bound loop (copies between two 64 MiB arrays), in its own
#: process, until it is killed
LOAD_LOOP = ("import numpy as np\na = np.ones(2**23)\nb = np.empty_like(a)\n"
             "while True:\n    np.copyto(b, a)\n    np.copyto(a, b)\n")


def load_generator(avoid: str | None = None):
    """Starts the load generator and returns its process (kill it when done): one core kept busy *beside*
    the runs, so it is pinned to an allowed CPU outside ``avoid`` (a campaign's ``cpus``), the last such one,
    since CPU 0 takes most interrupts; unpinned where affinity cannot be set or no other CPU is allowed."""
    import subprocess

    from gnnbench.run.machine_state import parse_cpulist

    proc = subprocess.Popen([sys.executable, "-c", LOAD_LOOP], stdin=subprocess.DEVNULL)
    try:
        free = sorted(os.sched_getaffinity(0) - parse_cpulist(avoid or ""))
        if free:
            os.sched_setaffinity(proc.pid, {free[-1]})
    except (AttributeError, OSError):  # not Linux, or not allowed: it still keeps a core busy
        pass
    return proc


def run_beside_load(the_campaign, store: Path, loaded: bool, avoid: str | None = None) -> tuple[float, float]:
    """Run ``the_campaign`` into ``store``, beside :func:`load_generator` (kept off ``avoid``'s CPUs) when
    ``loaded``; the load average before and after, which the table states."""
    generator = load_generator(avoid=avoid) if loaded else None
    try:
        start = os.getloadavg()[0]
        run_campaign(the_campaign, store)
        return start, os.getloadavg()[0]
    finally:
        if generator is not None:
            generator.kill()
            generator.wait()


def put_on_systems_path(folder: Path) -> None:
    """Let this process (and the workers it starts) find the systems in ``folder`` (Note [external systems]).

    Idempotent: a script's ``main`` may run more than once in one process (its tests).
    """
    from gnnbench.places import systems_path_folders

    folders = [folder.resolve(), *systems_path_folders()]
    os.environ["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join(str(f) for f in dict.fromkeys(folders))


def campaign(name: str, **overrides: Any):
    """The campaign ``campaigns/{name}.toml`` with top-level keys replaced by the non-None ``overrides``."""
    from gnnbench.run.sweep import campaign_from_mapping

    path = CAMPAIGNS / f"{name}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data.update({k: v for k, v in overrides.items() if v is not None})
    return campaign_from_mapping(data, where=str(path.relative_to(ROOT)))


def run_campaign(the_campaign, results: str | Path | None = None):
    """Runs (or resumes) ``the_campaign`` and returns its rows, one per configuration, as a results frame.

    Progress goes to stderr (:func:`gnnbench.progress.progress`): a bar on a
    terminal, one line per run otherwise. Rows already stored with the same
    provenance are reused, not rerun (Note [resuming] in :mod:`gnnbench.run.sweep`).
    """
    from gnnbench.progress import progress
    from gnnbench.results.store import ResultsStore
    from gnnbench.run.sweep import plan, run_sweep

    path = Path(results or RESULTS_DB)
    with progress(None, the_campaign.name, plain_steps=True) as bar:
        def on_event(event) -> None:
            bar.total = event.total
            if event.kind == "finish":
                row = event.row
                detail = (f"{epoch_ms(row)} ms/epoch" if ok(row) else f"{row.get('status')}: {row.get('error')}")
                bar.advance(description=f"{event.task.describe()}: {detail}")
            elif event.kind == "start":
                bar.describe(event.task.describe())

        run_sweep(the_campaign, path, on_event=on_event)
    with ResultsStore(path) as db:
        keys = [task.key for task in plan(the_campaign, db).tasks]
    frame = _pooled(path)
    frame = frame[frame["provenance"].isin(keys)]
    order = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return frame.sort_values("provenance", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _pooled(results: str | Path):
    """A results database as a frame, one row per configuration, its rounds pooled (:func:`pool_rounds`)."""
    from gnnbench.results.frame import frame_records, load_results
    from gnnbench.run.sweep import provenance as key_of

    frame = load_results(results)
    # the key the sweep itself matches stored rows by (Note [provenance] in gnnbench/run/sweep.py)
    frame["provenance"] = [key_of(r) for r in frame_records(frame)]
    return pool_rounds(frame)


def stored_rows(results: str | Path) -> list[dict]:
    """Every configuration a results database holds, its rounds pooled: what a ``--render-only``
    renders, whatever commit the rows were measured at."""
    from gnnbench.results.frame import frame_records

    return frame_records(_pooled(results))


#: per-epoch samples that rounds of one configuration pool, and the statistic each one's median feeds: every
#: loop's phases (Note [phases by name] in gnnbench/core/phases.py); a row without a phase's samples keeps None
_POOLED = {p.samples: p.median for p in PHASES}
#: one figure per run, summarised over rounds by their median
_PER_RUN = ("prepare_time_s", "tune_time_s", "peak_memory_bytes", "modeled_time_s")
#: the same, kept in a run's ``extra``
_PER_RUN_EXTRA = ("held_bytes",)


def pool_rounds(frame):
    """One row per configuration (``provenance``): the rounds' successful runs pooled into one measurement.

    Note [rounds pool]
        The machine's speed swings within seconds (Note [machine noise] in
        benchmarks/studies/probe_noise.py), so a campaign repeats its configurations
        in interleaved rounds, each its own process. Which stored runs are one
        configuration's rounds, and which of them are pooled (the successful
        ones, oldest first; a configuration with no successful round keeps its
        latest row), is :func:`gnnbench.results.configurations.configurations`'
        (Note [configurations]), keyed here by the sweep's provenance, which
        names the system and its build. A configuration's row
        then holds the statistics ``compare`` uses (Note [between-process
        statistics] in gnnbench/core/statistics.py): each phase's median is
        the median of the per-process medians and its IQR the median of the
        per-process IQRs; ``process_epoch_times`` keeps each process's epochs,
        from which :func:`epoch_ms` flags a figure unstable, and the flat
        ``*_times`` lists keep every epoch of every round. Per-run figures
        (prepare, tuning, peak memory and what the loop held,
        ``extra.held_bytes``) are the median over rounds. ``rounds`` counts
        the processes pooled.
    """
    import numpy as np
    import pandas as pd

    from gnnbench.results.configurations import configurations

    configs, _ = configurations(frame.assign(_row=range(len(frame))), ["provenance"])
    pooled = []
    for config in configs:
        runs = frame.iloc[[run["_row"] for run in config.rows]]  # its successful runs, or its latest one
        good = runs[runs["status"] == "ok"]
        row = runs.iloc[-1].copy()
        row["rounds"] = len(good)
        row["process_epoch_times"] = [list(lst) for lst in good["epoch_times"] if isinstance(lst, list) and lst] \
            if len(good) else None
        if len(good) > 1:
            for samples, median in _POOLED.items():
                if samples not in good:  # a frame of rows from before the phase existed
                    continue
                lists = [lst for lst in good[samples] if isinstance(lst, list) and lst]
                row[samples] = [v for lst in lists for v in lst] or None
                if lists:
                    row[median] = processes_of(lists).median
            epochs = [lst for lst in good["epoch_times"] if isinstance(lst, list) and lst]
            row["epoch_time_iqr_s"] = processes_of(epochs).iqr if epochs else None
            for name in _PER_RUN:
                values = good[name].dropna()
                row[name] = float(values.median()) if len(values) else None
            if "extra" in good:
                extra = dict(row["extra"]) if isinstance(row["extra"], dict) else {}
                for name in _PER_RUN_EXTRA:
                    values = [e[name] for e in good["extra"] if isinstance(e, dict) and e.get(name) is not None]
                    extra[name] = float(np.median(values)) if values else None
                row["extra"] = extra
        pooled.append(row)
    columns = [*frame.columns, "rounds", "process_epoch_times"]
    return pd.DataFrame(pooled, columns=columns) if pooled else frame.assign(rounds=0, process_epoch_times=None)


def processes_of(lists):
    """The per-process samples ``lists`` (seconds) as :class:`~gnnbench.core.statistics.Processes`."""
    from gnnbench.core.statistics import Processes

    return Processes(tuple(Measurement(tuple(float(v) for v in lst)) for lst in lists))


if __name__ == "__main__":
    sys.exit("benchmarks/_common.py is a helper module; run one of the bench_*.py scripts")
