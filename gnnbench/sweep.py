"""Sweeps: every configuration of a matrix, each in its own process, resumable, failures recorded.

A :class:`Campaign` holds one or more :class:`Matrix` blocks (systems x models
x datasets x frameworks x seeds x rounds, plus shared settings), built from
``gnnbench sweep`` flags or a TOML file (:func:`load_campaign`). :func:`plan`
expands it into :class:`Task` objects in interleaved order and marks the ones
already stored; :func:`run_sweep` runs the rest through an executor
(:mod:`gnnbench.executors`) and stores each row as it arrives, so an
interrupted sweep loses at most the runs in flight.

Note [sweep order]
    Tasks run round by round: a round is one (repetition, seed); inside it,
    dataset by dataset, model by model, framework by framework, with the
    systems innermost. Consecutive runs therefore cycle through the systems,
    and slow drift of the machine (heat, other tenants) is shared by all of
    them instead of penalising whichever system ran last (asv interleaves
    rounds the same way). Dimensions keep the order in which the campaign
    first names their values.

Note [provenance]
    Two runs are the same configuration when the fields in
    :data:`PROVENANCE_FIELDS` agree: system, system_hash (spec + glue +
    kernels), model, dataset (canonical name), framework, device, seed,
    threads, allocator (as resolved on this machine), hyperparameters (resolved from the model's defaults, with warmup,
    dtypes and system options), epochs and git_commit. :func:`provenance`
    hashes exactly those fields of a row, and :func:`identity` computes them
    for a task before it runs. The sweep stamps them on every row it stores,
    so the row of a crashed run has the provenance a successful run of the
    same configuration would have had.

Note [resuming]
    A rerun skips a task whose provenance is already stored. With ``rounds``
    above 1 a provenance occurs several times; its i-th occurrence (from 0) is
    skipped when more than i rows are stored. Rows with status ``skipped``
    (system unavailable) never count: availability is checked afresh on each
    run, and a skip with the same reason is not stored twice. With
    ``retry_failed`` only ``ok`` rows count; with ``repeat`` nothing is
    skipped. The store is asked again just before each task starts, so a
    configuration another sweep finished meanwhile on the same file is not
    run twice (two sweeps that start one configuration at the same moment
    both run it, and both rows are kept).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .allocator import ALLOCATORS, resolve_allocator
from .errors import UserError
from .harness import TaskSpec

__all__ = [
    "Matrix", "Campaign", "Task", "Plan", "SweepEvent", "SweepReport", "PROVENANCE_FIELDS",
    "provenance", "identity", "load_campaign", "campaign_from_mapping", "parse_memory",
    "split_datasets", "plan", "run_sweep",
]

PROVENANCE_FIELDS = ("system", "system_hash", "model", "dataset", "framework", "device", "seed", "threads",
                     "allocator", "hyperparameters", "epochs", "git_commit")
_FAILED = ("failed", "timeout", "oom", "crashed")


@dataclass(frozen=True)
class Matrix:
    """One block of a campaign: the cross product of its lists, with shared settings.

    Args:
        systems, models, datasets (tuple of str): the dimensions (datasets as
            ``gnnbench datasets`` names them, e.g. ``sbm:nodes=2000``).
        frameworks (tuple of str): (default: ``("torch",)``).
        seeds (tuple of int): one round per seed (default: ``(0,)``).
        rounds (int): repetitions of every seed (default: 1).
        timeout_s (float or None): per-run time limit in seconds (default: 1800).
        memory_limit_bytes (int or None): per-run address-space limit (default: none).
        The other fields are those of :class:`~gnnbench.harness.TaskSpec`.
    """

    systems: tuple[str, ...]
    models: tuple[str, ...]
    datasets: tuple[str, ...]
    frameworks: tuple[str, ...] = ("torch",)
    seeds: tuple[int, ...] = (0,)
    rounds: int = 1
    device: str = "cpu"
    epochs: int | None = None
    warmup: int = 5
    hidden: int | None = None
    heads: int | None = None
    lr: float | None = None
    threads: int | None = None
    allocator: str = "auto"
    dtype: str = "float32"
    index_dtype: str = "int64"
    selection: str = "best_val"
    options: tuple[tuple[str, str], ...] = ()
    data_dir: str | None = None
    timeout_s: float | None = 1800.0
    memory_limit_bytes: int | None = None
    mode: str = "train"  # wt-19: Note [inference mode] in gnnbench.harness
    tune: bool = True  # wt-19: Note [tune on first use] in gnnbench.harness


@dataclass(frozen=True)
class Campaign:
    """A named sweep: its matrices and how to run them (see ``campaigns/`` for TOML examples)."""

    matrices: tuple[Matrix, ...]
    name: str = "sweep"
    results: str | None = None
    executor: str = "local"
    ray_address: str | None = None
    repeat: bool = False
    retry_failed: bool = False


@dataclass(frozen=True, eq=False)
class Task:
    """One configuration to run: the spec, its limits and its provenance (Note [provenance])."""

    spec: TaskSpec
    label: str                     # the dataset as the campaign wrote it, for display
    round: int                     # repetition index, from 0
    timeout_s: float | None
    memory_limit_bytes: int | None
    identity: dict[str, Any]
    key: str
    occurrence: int = 0            # how many earlier tasks share the key (Note [resuming])
    unavailable: str | None = None

    def describe(self) -> str:
        s = self.spec
        text = f"{s.system} {s.model} {self.label} {s.framework} seed={s.seed}"
        return text + (f" round={self.round}" if self.round else "")


@dataclass
class Plan:
    """The tasks of a campaign split by what a run will do with them."""

    tasks: list[Task]
    todo: list[Task] = field(default_factory=list)          # to run
    stored: list[Task] = field(default_factory=list)        # already stored (Note [resuming])
    unavailable: list[Task] = field(default_factory=list)   # to store as `skipped`
    known_skips: list[Task] = field(default_factory=list)   # unavailable, and already stored as such


@dataclass(frozen=True)
class SweepEvent:
    """What a progress display needs: ``kind`` is ``start``, ``finish`` or ``meanwhile``
    (stored by another sweep since planning). ``eta_s`` is None until a run has finished."""

    kind: str
    task: Task
    row: dict[str, Any] | None
    done: int
    total: int
    elapsed_s: float
    eta_s: float | None


@dataclass
class SweepReport:
    """The outcome of :func:`run_sweep` (rows as stored, with their ids)."""

    campaign: str
    planned: int
    already_stored: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    known_skips: int = 0
    meanwhile: int = 0
    elapsed_s: float = 0.0
    dry_run: bool = False
    todo: list[Task] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.get("status") for r in self.rows))

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") in _FAILED]

    def as_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "planned": self.planned, "already_stored": self.already_stored,
                "known_skips": self.known_skips, "stored_meanwhile": self.meanwhile, "dry_run": self.dry_run,
                "elapsed_s": self.elapsed_s, "counts": self.counts(),
                "to_run": [t.describe() for t in self.todo] if self.dry_run else None,
                "runs": [{k: r.get(k) for k in ("id", "status", "error", "system", "model", "dataset", "framework",
                                                "seed", "epoch_time_median_s")} for r in self.rows]}


# ---------------------------------------------------------------- provenance

def provenance(row: Mapping[str, Any]) -> str:
    """The provenance key of a row or identity: a hash of its :data:`PROVENANCE_FIELDS`."""
    data = {name: row.get(name) for name in PROVENANCE_FIELDS}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def identity(spec: TaskSpec, _hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """The provenance fields a run of ``spec`` will store, computed without running it.

    Raises:
        UserError: unknown system or model, or epochs not above warmup.
    """
    from .environment import git_commit
    from .harness import resolve_hyperparameters, stored_hyperparameters
    from .registry import system_hash

    _, hyper = resolve_hyperparameters(spec)
    hashes = {} if _hashes is None else _hashes
    if spec.system not in hashes:
        hashes[spec.system] = system_hash(spec.system)
    hyperparameters = stored_hyperparameters(spec, hyper)
    return {"system": spec.system, "system_hash": hashes[spec.system], "model": spec.model,
            "dataset": spec.dataset, "framework": spec.framework, "device": spec.device, "seed": spec.seed,
            "threads": spec.threads, "allocator": resolve_allocator(spec.allocator).name,
            "hyperparameters": json.loads(json.dumps(hyperparameters)),
            "epochs": hyper.epochs, "warmup": spec.warmup, "git_commit": git_commit()}


# ---------------------------------------------------------------- campaigns

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory(text: str | int | None) -> int | None:
    """``"4G"`` -> 4 GiB in bytes. Units K, M, G, T are binary (``4G`` = ``4GiB`` = ``4GB``);
    a bare number is bytes; ``None``, ``""``, ``"none"`` and 0 mean no limit."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text > 0 else None
    if text is None or str(text).strip().lower() in ("", "none", "0"):
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", str(text).upper())
    if not match:
        raise UserError(f"memory limit must look like 4G, 512M or a byte count (got {text!r})")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def split_datasets(values: Iterable[str]) -> tuple[str, ...]:
    """Split comma lists of dataset names whose own parameters contain commas.

    A piece with ``=`` but no ``:`` continues the previous name:
    ``"sbm:nodes=200,classes=2,karate"`` -> ``("sbm:nodes=200,classes=2", "karate")``.
    """
    out: list[str] = []
    for value in values:
        for piece in (p.strip() for p in value.split(",")):
            if not piece:
                continue
            if "=" in piece and ":" not in piece and out and ":" in out[-1]:
                out[-1] += "," + piece
            else:
                out.append(piece)
    return tuple(out)


_SWEEP_KEYS = ("name", "results", "executor", "ray_address", "repeat", "retry_failed", "matrix")
_MATRIX_KEYS = ("systems", "models", "datasets", "frameworks", "seeds", "rounds", "device", "epochs", "warmup",
                "hidden", "heads", "lr", "threads", "allocator", "dtype", "index_dtype", "selection", "options",
                "data_dir", "timeout", "memory_limit", "mode", "tune")


def _names(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: '{key}' must be a list of names (got {value!r})")
    items = split_datasets(value) if key == "datasets" else tuple(
        p.strip() for v in value for p in v.split(",") if p.strip())
    if not items:
        raise UserError(f"{where}: '{key}' is empty; name at least one")
    return tuple(dict.fromkeys(items))


def _number(value: Any, key: str, where: str, kind: type, minimum: float) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise UserError(f"{where}: '{key}' must be {'an integer' if kind is int else 'a number'} (got {value!r})")
    if value < minimum:
        raise UserError(f"{where}: '{key}' must be at least {minimum:g} (got {value!r})")
    return kind(value)


def _matrix(data: Mapping[str, Any], where: str) -> Matrix:
    unknown = sorted(set(data) - set(_MATRIX_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_MATRIX_KEYS)}")
    missing = [k for k in ("systems", "models", "datasets") if k not in data]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)} (every matrix needs systems, models and datasets)")
    seeds = data.get("seeds", [0])
    if isinstance(seeds, str):
        try:
            seeds = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"{where}: 'seeds' must be integers (got {seeds!r})") from None
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise UserError(f"{where}: 'seeds' must be a non-empty list of integers (got {seeds!r})")
    options = data.get("options", {})
    if not isinstance(options, Mapping):
        raise UserError(f"{where}: 'options' must be a table of key = value (got {options!r})")
    timeout = _number(data.get("timeout", 1800.0), "timeout", where, float, 0)
    choices_of = {"allocator": ALLOCATORS, "dtype": ("float32", "float64"), "index_dtype": ("int64", "int32"),
                  "selection": ("best_val", "last"), "mode": ("train", "inference")}
    for key, choices in choices_of.items():
        if data.get(key, choices[0]) not in choices:
            raise UserError(f"{where}: '{key}' must be one of {', '.join(choices)} (got {data[key]!r})")
    data_dir = data.get("data_dir")
    return Matrix(
        systems=_names(data["systems"], "systems", where), models=_names(data["models"], "models", where),
        datasets=_names(data["datasets"], "datasets", where),
        frameworks=_names(data.get("frameworks", ["torch"]), "frameworks", where),
        seeds=tuple(dict.fromkeys(seeds)), rounds=_number(data.get("rounds", 1), "rounds", where, int, 1),
        device=str(data.get("device", "cpu")), epochs=_number(data.get("epochs"), "epochs", where, int, 1),
        warmup=_number(data.get("warmup", 5), "warmup", where, int, 0),
        hidden=_number(data.get("hidden"), "hidden", where, int, 1),
        heads=_number(data.get("heads"), "heads", where, int, 1), lr=_number(data.get("lr"), "lr", where, float, 0),
        threads=_number(data.get("threads"), "threads", where, int, 1), allocator=data.get("allocator", "auto"),
        dtype=data.get("dtype", "float32"),
        index_dtype=data.get("index_dtype", "int64"), selection=data.get("selection", "best_val"),
        options=tuple((str(k), str(v)) for k, v in options.items()),
        data_dir=str(Path(data_dir).resolve()) if data_dir else None,
        timeout_s=timeout or None, memory_limit_bytes=parse_memory(data.get("memory_limit")),
        mode=data.get("mode", "train"), tune=_flag(data.get("tune", True), "tune", where),
    )


def _flag(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{where}: '{key}' must be true or false (got {value!r})")
    return value


def campaign_from_mapping(data: Mapping[str, Any], where: str = "campaign") -> Campaign:
    """A :class:`Campaign` from a parsed TOML document or the equivalent dict.

    Top-level matrix keys are defaults; each ``[[matrix]]`` table overrides
    them for one block. Without ``[[matrix]]`` the top level is the one block.
    """
    unknown = sorted(set(data) - set(_SWEEP_KEYS) - set(_MATRIX_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(_SWEEP_KEYS + _MATRIX_KEYS)}")
    defaults = {k: v for k, v in data.items() if k in _MATRIX_KEYS}
    blocks = data.get("matrix")
    if blocks is None:
        matrices = (_matrix(defaults, where),)
    elif not isinstance(blocks, list) or not blocks or not all(isinstance(b, Mapping) for b in blocks):
        raise UserError(f"{where}: 'matrix' must be [[matrix]] tables (got {blocks!r})")
    else:
        matrices = tuple(_matrix({**defaults, **b}, f"{where} [[matrix]] #{i + 1}") for i, b in enumerate(blocks))
    executor = data.get("executor", "local")
    if executor not in ("local", "ray"):
        raise UserError(f"{where}: 'executor' must be local or ray (got {executor!r})")
    for key in ("repeat", "retry_failed"):
        if not isinstance(data.get(key, False), bool):
            raise UserError(f"{where}: '{key}' must be true or false (got {data[key]!r})")
    return Campaign(matrices=matrices, name=str(data.get("name", "sweep")), results=data.get("results"),
                    executor=executor, ray_address=data.get("ray_address"), repeat=data.get("repeat", False),
                    retry_failed=data.get("retry_failed", False))


def load_campaign(path: str | os.PathLike) -> Campaign:
    """Read a TOML campaign (see ``campaigns/cpu_small.toml``); its name defaults to the file's stem."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise UserError("reading a TOML campaign needs Python 3.11 or `pip install tomli`") from None
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no campaign file at {path}") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML ({err})") from None
    data.setdefault("name", path.stem)
    return campaign_from_mapping(data, str(path))


# ---------------------------------------------------------------- planning

def _check_names(matrix: Matrix) -> None:
    """Fail fast, before any run, on names that can never work (typos), not on unavailable ones."""
    from .datasets.planetoid import find_planetoid_dir
    from .datasets.registry import parse_name
    from .frameworks import FRAMEWORKS
    from .registry import system_info

    for name in matrix.systems:
        system_info(name)
    for name in matrix.frameworks:
        if name not in FRAMEWORKS:
            raise UserError(f"unknown framework '{name}'; choose one of: {', '.join(FRAMEWORKS)}")
    for name in matrix.datasets:
        kind, _ = parse_name(name)
        if kind in ("cora", "citeseer"):
            find_planetoid_dir(kind, matrix.data_dir)


def _expand(campaign: Campaign) -> list[Task]:
    """Every task of every matrix, deduplicated, in the order of Note [sweep order]."""
    from .datasets.registry import canonical_name
    from .frameworks import framework_available
    from .registry import system_info

    rank: dict[str, dict[Any, int]] = {d: {} for d in ("dataset", "model", "framework", "system")}
    position = lambda dim, value: rank[dim].setdefault(value, len(rank[dim]))  # noqa: E731
    hashes: dict[str, str] = {}
    reasons: dict[tuple[str, str, str], str | None] = {}
    entries, seen = [], set()
    for m in campaign.matrices:
        _check_names(m)
        for rep, (seed_index, seed), label, model, framework, system in itertools.product(
                range(m.rounds), enumerate(m.seeds), m.datasets, m.models, m.frameworks, m.systems):
            spec = TaskSpec(system=system, model=model, dataset=canonical_name(label), framework=framework,
                            device=m.device, data_dir=m.data_dir, epochs=m.epochs, warmup=m.warmup, hidden=m.hidden,
                            heads=m.heads, lr=m.lr, seed=seed, threads=m.threads, allocator=m.allocator, dtype=m.dtype,
                            index_dtype=m.index_dtype, selection=m.selection, system_options=m.options,
                            mode=m.mode, tune=m.tune)
            if (spec, rep) in seen:  # two blocks, or two spellings of one dataset, name the same run
                continue
            seen.add((spec, rep))
            where = (system, framework, m.device)
            if where not in reasons:
                reasons[where] = framework_available(framework) or system_info(system).unavailable_reason(
                    framework, m.device)
            ident = identity(spec, hashes)
            order = (rep, seed_index, position("dataset", spec.dataset), position("model", model),
                     position("framework", framework), position("system", system))
            entries.append((order, Task(spec, label, rep, m.timeout_s, m.memory_limit_bytes, ident,
                                        provenance(ident), unavailable=reasons[where])))
    entries.sort(key=lambda e: e[0])
    occurrences: Counter = Counter()
    tasks = []
    for _, task in entries:
        tasks.append(replace(task, occurrence=occurrences[task.key]))
        occurrences[task.key] += 1
    return tasks


def _counts_status(campaign: Campaign) -> Callable[[str | None], bool]:
    return (lambda s: s == "ok") if campaign.retry_failed else (lambda s: s not in (None, "skipped"))


def _stored(store, tasks: list[Task], counts: Callable[[str | None], bool]) -> tuple[Counter, set]:
    """Per provenance key: stored rows that count as done; and (key, error) of stored skips."""
    if not tasks:
        return Counter(), set()
    wanted = {t.key for t in tasks}
    done, skips = Counter(), set()
    rows = store.rows(system=sorted({t.spec.system for t in tasks}), model=sorted({t.spec.model for t in tasks}),
                      dataset=sorted({t.spec.dataset for t in tasks}))
    for row in rows:
        key = provenance(row)
        if key not in wanted:
            continue
        if counts(row.get("status")):
            done[key] += 1
        elif row.get("status") == "skipped":
            skips.add((key, row.get("error")))
    return done, skips


def plan(campaign: Campaign, store) -> Plan:
    """Expand ``campaign`` and split its tasks against what ``store`` holds (Note [resuming])."""
    tasks = _expand(campaign)
    done, skips = _stored(store, tasks, _counts_status(campaign))
    result = Plan(tasks)
    for task in tasks:
        if task.unavailable:
            known = (task.key, _skip_error(task)) in skips
            (result.known_skips if known and not campaign.repeat else result.unavailable).append(task)
        elif not campaign.repeat and done[task.key] > task.occurrence:
            result.stored.append(task)
        else:
            result.todo.append(task)
    return result


# ---------------------------------------------------------------- running

def _skip_error(task: Task) -> str:
    return f"system '{task.spec.system}' is unavailable: {task.unavailable}"


def _stamp(task: Task, row: Mapping[str, Any], campaign: Campaign) -> dict[str, Any]:
    """The row as stored: identity fields filled in (all of them for a failure), sweep details in ``extra``."""
    from .store import utc_now

    out = dict(row)
    ok = out.get("status") == "ok"
    for name, value in task.identity.items():
        if not ok or out.get(name) is None:  # a successful run's own record wins (Note [provenance])
            out[name] = value
    extra = dict(out.get("extra") or {})
    extra["sweep"] = {"campaign": campaign.name, "round": task.round, "provenance": task.key,
                      "timeout_s": task.timeout_s, "memory_limit_bytes": task.memory_limit_bytes,
                      "spec": task.spec.as_dict()}
    out["extra"] = extra
    out.setdefault("timestamp", utc_now())
    return out


def run_sweep(campaign: Campaign, store_path: str | os.PathLike | None = None, executor=None,
              on_event: Callable[[SweepEvent], None] | None = None, dry_run: bool = False,
              clock: Callable[[], float] = time.monotonic) -> SweepReport:
    """Run every task of ``campaign`` not yet stored; store each row as it arrives.

    Args:
        campaign (Campaign): what to run.
        store_path (str or Path, optional): results database (default:
            ``campaign.results``, else :func:`~gnnbench.store.default_results_path`).
        executor (optional): an :class:`~gnnbench.executors.Executor` (default:
            the one ``campaign.executor`` names; it is closed afterwards).
        on_event (callable, optional): receives a :class:`SweepEvent` per start and finish.
        dry_run (bool): plan only; store and run nothing (default: False).
        clock (callable): monotonic seconds, for the time estimate (default: ``time.monotonic``).

    Returns:
        A :class:`SweepReport`; failed runs are in it, never raised.
    """
    from .executors import get_executor
    from .runner import failure_row
    from .store import ResultsStore
    from .verify_status import verification_status

    from .store import default_results_path

    path = store_path or campaign.results or default_results_path()
    if dry_run and not Path(path).exists():
        path = ":memory:"  # a dry run plans against an empty store and creates no file
    with ResultsStore(path) as db:
        the_plan = plan(campaign, db)
        report = SweepReport(campaign.name, len(the_plan.tasks), len(the_plan.stored),
                             known_skips=len(the_plan.known_skips), dry_run=dry_run, todo=the_plan.todo)
        if dry_run:
            return report
        for task in the_plan.unavailable:
            row = _stamp(task, failure_row(task.spec, "skipped", _skip_error(task)), campaign)
            row["id"] = db.insert(row)
            report.rows.append(row)
        owned = executor is None
        executor = get_executor(campaign.executor, address=campaign.ray_address) if owned else executor
        counts = _counts_status(campaign)
        total, started = len(the_plan.todo), clock()
        finished = 0

        def event(kind: str, task: Task, row: dict | None = None) -> None:
            if on_event is None:
                return
            elapsed = clock() - started
            done = finished + report.meanwhile
            eta = elapsed / finished * (total - done) if finished else None
            on_event(SweepEvent(kind, task, row, done, total, elapsed, eta))

        def feed() -> Iterator[Task]:
            for task in the_plan.todo:
                if not campaign.repeat and _stored(db, [task], counts)[0][task.key] > task.occurrence:
                    report.meanwhile += 1  # another sweep on this file ran it (Note [resuming])
                    event("meanwhile", task)
                    continue
                if executor.sequential:
                    event("start", task)
                yield task

        try:
            for task, raw in executor.run(feed()):
                row = _stamp(task, raw, campaign)
                row["verified"] = verification_status(db, row.get("system"), row.get("system_hash"))
                row["id"] = db.insert(row)
                report.rows.append(row)
                finished += 1
                event("finish", task, row)
        finally:
            report.elapsed_s = clock() - started
            if owned:
                executor.close()
    return report
