"""Sweeps: every configuration of a matrix, each in its own process, resumable, failures recorded.

A :class:`Campaign` holds one or more :class:`Matrix` blocks (systems x models
x datasets x frameworks x seeds x rounds, plus shared settings), built from
``gnnbench sweep`` flags or a TOML file (:func:`load_campaign`). :func:`plan`
expands it into :class:`Task` objects in interleaved order and marks the ones
already stored; :func:`run_sweep` runs the rest through an executor
(:mod:`gnnbench.run.executors`) and stores each row as it arrives, so an
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
    dtypes and system options), epochs and git_commit (the code's, Note [code commit] in
    :mod:`gnnbench.run.environment`). :func:`provenance`
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
    ``retry_failed`` only ``ok`` rows count; with ``rerun`` nothing is
    skipped. Just before each task starts the sweep claims it in the store
    (Note [claims] in :mod:`gnnbench.results.store`) and asks the store again, so a
    configuration another sweep on the same file is running or has finished
    is not run twice: two identical sweeps started together split the work.

Note [a killed sweep's configurations]
    A configuration claimed by another sweep is left to it only while that
    sweep lives. A claim whose owner is a process of this host that is gone
    (SIGKILLed, or its pid now another process's) is taken over at once
    (Note [claim owners] in :mod:`gnnbench.run.claimant`). One whose owner is
    alive is watched: after its own tasks, a (local, sequential) sweep looks
    at the claims it left every ``_WATCH_POLL_S`` seconds, and runs a
    configuration as soon as its holder dies without storing it; one the
    holder stored counts as run meanwhile. So when one of two sweeps on a
    store is killed, the survivor runs what the killed one held, and a rerun
    started at once does too. A claim of another host, or of this process,
    cannot be watched and is left to expire.

Note [campaign keys]
    The keys of a campaign file and the ``gnnbench sweep`` flags are
    derived from :class:`~gnnbench.run.config.RunConfig`'s fields: a sweepable
    field takes a list under its plural name (``systems``, ``seeds``), any
    other field one value under its key (``lr``, ``options``); ``rounds``
    (processes per configuration; ``repeat`` is the same integer, Note
    [repetitions] in :mod:`gnnbench.run.repeat`) is the sweep's own. Every
    configuration of a matrix is built and validated when the campaign is
    read, before anything runs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gnnbench.run.claimant import claim_owner, owner_is_another_live_process, owner_is_gone
from gnnbench.run.config import SAMPLED_ONLY, RunConfig, config_fields, make_config, parse_memory
from gnnbench.run.repeat import process_count
from gnnbench.errors import UserError
from gnnbench.results.row import PROVENANCE_FIELDS

__all__ = [
    "Matrix", "Campaign", "Task", "Plan", "SweepEvent", "SweepReport", "PROVENANCE_FIELDS",
    "provenance", "identity", "load_campaign", "campaign_from_mapping", "parse_memory", "matrix_keys",
    "split_datasets", "plan", "run_sweep", "with_rounds",
]

_FAILED = ("failed", "timeout", "oom", "crashed")
#: the interleaving order of sweep axes, outermost first (Note [sweep order]); other sweepable fields
#: go before ``system``, which is innermost
_AXIS_ORDER = ("seed", "dataset", "model", "framework")


@dataclass(frozen=True)
class Matrix:
    """One block of a campaign: the cross product of its axes, with shared settings.

    Built by :func:`campaign_from_mapping` (Note [campaign keys]); ``Matrix.of(systems=..., models=...,
    datasets=..., epochs=6)`` builds one from campaign keys in Python.

    Args:
        axes: (field name, values) per sweepable field, values in the order the campaign names them.
        settings: (field name, value) of every other field given (validated).
        rounds (int): processes per configuration, one per round (default: 1; Note [repetitions]).
        labels: (canonical dataset name, as the campaign wrote it), for display.
        configs: every configuration of the block, validated.
    """

    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    settings: tuple[tuple[str, Any], ...]
    rounds: int = 1
    labels: tuple[tuple[str, str], ...] = ()
    configs: tuple[RunConfig, ...] = ()

    @classmethod
    def of(cls, **keys: Any) -> "Matrix":
        return _matrix(keys, "matrix")

    def axis(self, name: str) -> tuple[Any, ...]:
        return dict(self.axes).get(name, ())

    @property
    def timeout_s(self) -> float | None:
        return self.configs[0].timeout if self.configs else None

    @property
    def memory_limit_bytes(self) -> int | None:
        return self.configs[0].memory_limit if self.configs else None


@dataclass(frozen=True)
class Campaign:
    """A named sweep: its matrices and how to run them (see ``campaigns/`` for TOML examples)."""

    matrices: tuple[Matrix, ...]
    name: str = "sweep"
    results: str | None = None
    executor: str = "local"
    ray_address: str | None = None
    rerun: bool = False
    retry_failed: bool = False
    #: set by ``gnnbench history`` (Note [history rows] in :mod:`gnnbench.run.history`): stamped on every row
    #: as ``extra.history``; only rows of the same ``commit`` count as stored
    history: tuple[tuple[str, Any], ...] = ()
    #: ``decide = true``: each configuration in paired rounds against ``baseline`` until decided or out of
    #: ``budget`` (seconds, each), at ``threshold``, its processes started ``warm`` or ``fresh`` (Note [deciding
    #: campaigns] in :mod:`gnnbench.run.ab`)
    baseline: str | None = None
    decide: bool = False
    budget: float | None = None
    threshold: float | None = None
    processes: str = "warm"


@dataclass(frozen=True, eq=False)
class Task:
    """One configuration to run: the config (limits included), its provenance (Note [provenance])."""

    config: RunConfig
    label: str                     # the dataset as the campaign wrote it, for display
    round: int                     # repetition index, from 0
    identity: dict[str, Any]
    key: str
    occurrence: int = 0            # how many earlier tasks share the key (Note [resuming])
    unavailable: str | None = None

    @property
    def timeout_s(self) -> float | None:
        return self.config.timeout

    @property
    def memory_limit_bytes(self) -> int | None:
        return self.config.memory_limit

    @property
    def claim_key(self) -> str:
        return f"{self.key}#{self.occurrence}"

    def describe(self) -> str:
        """``system model dataset framework seed=S``, then every other swept axis off its default
        (``mode=inference``, ``normalisation=edge``), the round and the fallback."""
        config = self.config
        text = f"{config.system} {config.model} {self.label} {config.framework} seed={config.seed}"
        unread = SAMPLED_ONLY if config.batching == "full" else ()  # a full-graph run's fanouts mean nothing
        for name, f in config_fields().items():
            value = getattr(config, name, None)
            if f.sweep and name not in _DESCRIBED + unread and value is not None and value != f.default:
                text += f" {f.key}={value}"
        return (text + (f" round={self.round}" if self.round else "")
                + (f" fallback={config.fallback}" if config.fallback else ""))


#: fields that :meth:`Task.describe` always names, in its own words
_DESCRIBED = ("system", "model", "dataset", "framework", "seed")


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
    """What a progress display needs: ``kind`` is ``start``, ``finish``, ``meanwhile``
    (stored by another sweep since planning) or ``claimed`` (being run by another sweep). ``eta_s`` is None until a run has finished."""

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
    unavailable: list[Task] = field(default_factory=list)  # a dry run's tasks that would be skipped, and why
    claimed_elsewhere: int = 0     # being run by another sweep on the same store (Note [claims])
    unsaved: list[tuple[str, str]] = field(default_factory=list)  # (JSON file, store error) of rows not stored

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.get("status") for r in self.rows))

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") in _FAILED]

    def as_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "planned": self.planned, "already_stored": self.already_stored,
                "known_skips": self.known_skips, "stored_meanwhile": self.meanwhile,
                "claimed_by_another_sweep": self.claimed_elsewhere, "unsaved": [p for p, _ in self.unsaved],
                "dry_run": self.dry_run,
                "elapsed_s": self.elapsed_s, "counts": self.counts(),
                "to_run": [t.describe() for t in self.todo] if self.dry_run else None,
                "would_skip": [{"run": t.describe(), "reason": t.unavailable} for t in self.unavailable]
                if self.dry_run else None,
                "runs": [{k: r.get(k) for k in ("id", "status", "error", "system", "model", "dataset", "framework",
                                                "seed", "epoch_time_median_s")} for r in self.rows]}


# ---------------------------------------------------------------- provenance

def provenance(row: Mapping[str, Any]) -> str:
    """The provenance key of a row or identity: a hash of its :data:`PROVENANCE_FIELDS`."""
    data = {name: row.get(name) for name in PROVENANCE_FIELDS}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def identity(config: RunConfig, _hashes: dict[str, str] | None = None) -> dict[str, Any]:
    """The provenance fields a run of ``config`` will store, computed without running it.

    Raises:
        UserError: unknown system or model, or epochs not above warmup.
    """
    from gnnbench.run.preflight import check_names
    from gnnbench.run.record import identity_columns

    return identity_columns(config, _hashes, resolved=check_names(config))


# ---------------------------------------------------------------- campaigns

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


_SWEEP_KEYS = ("name", "results", "executor", "ray_address", "rerun", "retry_failed", "matrix", "baseline", "decide",
               "budget", "threshold", "processes")
#: tables a campaign file may hold for ``gnnbench campaign`` (how its processes start, what it publishes:
#: :mod:`gnnbench.campaign.declaration`); a sweep of the same file reads past them
_CAMPAIGN_TABLES = ("setup", "publish")


def matrix_keys() -> tuple[str, ...]:
    """The keys a campaign matrix takes, derived from the run configuration (Note [campaign keys])."""
    return (*(f.sweep or f.key for f in config_fields().values()), "rounds")


def _listed(value: Any, key: str, where: str, field: str) -> tuple[Any, ...]:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if field == "fanouts":  # a list of lists: each item is one set of fanouts, "25,10" or [25, 10]
        if not isinstance(value, (list, tuple)) or isinstance(value, str) or all(isinstance(v, int) for v in value):
            value = [value]
        return tuple(dict.fromkeys(tuple(v) if isinstance(v, list) else v for v in value))
    if not isinstance(value, (list, tuple)) or any(isinstance(v, (bool, dict, list)) for v in value):
        raise UserError(f"{where}: '{key}' must be a list (got {value!r})")
    if field == "dataset":
        items: tuple[Any, ...] = split_datasets(str(v) for v in value)
    else:
        items = tuple(p.strip() if isinstance(p, str) else p for v in value
                      for p in (v.split(",") if isinstance(v, str) else [v]) if not isinstance(p, str) or p.strip())
    if not items:
        raise UserError(f"{where}: '{key}' is empty; name at least one")
    return tuple(dict.fromkeys(items))


def _matrix(data: Mapping[str, Any], where: str, flags: bool = False) -> Matrix:
    """One validated block (Note [campaign keys]); ``flags`` names settings as flags (``--lr``)."""
    fields = config_fields()
    by_key = {f.sweep or f.key: f for f in fields.values()}
    data = _unaliased(data, where, flags)
    allowed = matrix_keys()
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    required = [f.sweep or f.key for f in fields.values() if f.required] + ["datasets"]
    missing = [k for k in required if k not in data]
    if missing:
        if flags:
            raise UserError(f"give {', '.join('--' + k.replace('_', '-') for k in missing)} (or --campaign FILE)")
        raise UserError(f"{where}: missing {', '.join(missing)} (every matrix needs {', '.join(required)})")

    def name_of(field: str) -> str:
        f = fields[field]
        key = f.sweep or f.key
        return ("--" + key.replace("_", "-") if f.sweep else f.flag) if flags else f"{where}: '{key}'"

    rounds = _count(data.get("rounds", 1), "rounds", where, flags)
    axes, settings = [], []
    for key, f in by_key.items():
        if f.sweep:
            values = _listed(data[key], key, where, f.name) if key in data else (
                () if f.required or key == "datasets" else (f.default,))
            axes.append((f.name, values))
        elif key in data:
            value = data[key]
            if f.name == "data_dir" and isinstance(value, str) and value:
                value = str(Path(value).expanduser().resolve())
            settings.append((f.name, value))
        elif f.sweep_default is not None:
            settings.append((f.name, f.sweep_default))
    base = dict(settings)
    configs, labels = [], {}
    for combo in itertools.product(*(values for _, values in axes)):
        values = {**base, **{name: value for (name, _), value in zip(axes, combo)}}
        config = make_config(values, name_of)
        if config.fallback and _lends_to_none(config):  # Note [fallback in sweeps]
            config = config.replace(fallback=None)
        labels.setdefault(config.dataset, str(values["dataset"]))
        configs.append(config)
    settings = tuple((name, getattr(configs[0], name)) for name, _ in settings)
    axes = tuple((name, tuple(dict.fromkeys(getattr(c, name) for c in configs))) for name, _ in axes)
    return Matrix(axes=axes, settings=settings, rounds=rounds, labels=tuple(labels.items()), configs=tuple(configs))


def _lends_to_none(config: RunConfig) -> bool:
    """Whether ``config``'s fallback lends to no kernel system (Note [fallback in sweeps]).

    Note [fallback in sweeps]
        A matrix's ``fallback`` applies to its kernel systems other than the lender.
    """
    from gnnbench.runtime.registry import system_info

    return config.system == config.fallback or system_info(config.system).kind != "kernel"


def _count(value: Any, key: str, where: str, flags: bool) -> int:
    """A campaign's ``rounds`` (or ``repeat``): a TOML integer, as every count of a campaign is; text is a flag's
    way to give it (``--rounds 5``), so ``rounds = "5"`` in a file is refused, not read as a number."""
    from gnnbench.run.repeat import MAX_PROCESSES

    if not flags and isinstance(value, str):
        raise UserError(f"{where}: '{key}' must be an integer in [1, {MAX_PROCESSES}], written without quotes "
                        f"(got {value!r})")
    return process_count(value, name_of_key(key, where, flags))


def name_of_key(key: str, where: str, flags: bool) -> str:
    return "--" + key.replace("_", "-") if flags else f"{where}: '{key}'"


def _unaliased(data: Mapping[str, Any], where: str, flags: bool) -> dict[str, Any]:
    """``data`` with ``repeat = N`` written as ``rounds = N`` (Note [repetitions]). ``repeat`` once meant
    what ``rerun`` means now: a true/false value gets one line saying so."""
    out = dict(data)
    if "repeat" not in out:
        return out
    value = out.pop("repeat")
    if isinstance(value, bool):
        raise UserError(f"{where}: 'repeat' is now the number of processes per configuration, as 'rounds' is "
                        f"(got {str(value).lower()}); write 'rerun = true' to run stored configurations again")
    if "rounds" in out:
        both = "give --rounds or --repeat" if flags else f"{where}: give 'rounds' or 'repeat'"
        raise UserError(f"{both}, not both (they are the same count)")
    out["rounds"] = _count(value, "repeat", where, flags)
    return out


def campaign_from_mapping(data: Mapping[str, Any], where: str = "campaign", flags: bool = False) -> Campaign:
    """A :class:`Campaign` from a parsed TOML document or the equivalent dict.

    Top-level matrix keys are defaults; each ``[[matrix]]`` table overrides
    them for one block. Without ``[[matrix]]`` the top level is the one block.
    """
    allowed = matrix_keys()
    data = _unaliased(data, where, flags)
    unknown = sorted(set(data) - set(_SWEEP_KEYS) - set(_CAMPAIGN_TABLES) - set(allowed))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(_SWEEP_KEYS + allowed)}")
    defaults = {k: v for k, v in data.items() if k in allowed}
    blocks = data.get("matrix")
    if blocks is None:
        matrices = (_matrix(defaults, where, flags),)
    elif not isinstance(blocks, list) or not blocks or not all(isinstance(b, Mapping) for b in blocks):
        raise UserError(f"{where}: 'matrix' must be [[matrix]] tables (got {blocks!r})")
    else:
        matrices = tuple(_matrix({**defaults, **_unaliased(b, f"{where} [[matrix]] #{i + 1}", flags)},
                                 f"{where} [[matrix]] #{i + 1}") for i, b in enumerate(blocks))
    executor = data.get("executor", "local")
    if executor not in ("local", "ray"):
        raise UserError(f"{where}: 'executor' must be local or ray (got {executor!r})")
    for key in ("rerun", "retry_failed"):
        if not isinstance(data.get(key, False), bool):
            raise UserError(f"{where}: '{key}' must be true or false (got {data[key]!r})")
    for key in ("name", "results", "ray_address", "baseline"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise UserError(f"{where}: '{key}' must be text (got {data[key]!r})")
    from gnnbench.run.ab import deciding

    return Campaign(matrices=matrices, name=str(data.get("name", "sweep")), results=data.get("results"),
                    executor=executor, ray_address=data.get("ray_address"), rerun=data.get("rerun", False),
                    retry_failed=data.get("retry_failed", False), **deciding(data, where))


def with_rounds(campaign: Campaign, data: Mapping[str, Any], where: str = "command line",
                flags: bool = True) -> Campaign:
    """``campaign`` with every matrix's ``rounds`` replaced by the count ``data`` gives under ``rounds`` or
    ``repeat``, if any: how many processes run is the invocation's choice (Note [repetitions])."""
    data = _unaliased(data, where, flags)
    if "rounds" not in data:
        return campaign
    rounds = _count(data["rounds"], "rounds", where, flags)
    return replace(campaign, matrices=tuple(replace(m, rounds=rounds) for m in campaign.matrices))


def load_campaign(path: str | os.PathLike) -> Campaign:
    """Read a TOML campaign (see ``campaigns/cpu_small.toml``); its name defaults to the file's stem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"no campaign file at {path}") from None
    except OSError as err:
        raise UserError(f"cannot read campaign file {path}: {err.strerror or err}") from None
    data = campaign_toml(raw, str(path))
    data.setdefault("name", path.stem)
    return campaign_from_mapping(data, str(path))


def campaign_toml(raw: bytes, where: str) -> dict[str, Any]:
    """A campaign file's bytes as TOML data; text that is not UTF-8 or not TOML is one line naming ``where``."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise UserError("reading a TOML campaign needs Python 3.11 or `pip install tomli`") from None

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"{where}: not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start}); save it "
                        f"as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{where}: not valid TOML ({err})") from None


# ---------------------------------------------------------------- planning

def _expand(campaign: Campaign) -> list[Task]:
    """Every task of every matrix, deduplicated, in the order of Note [sweep order]; names checked first."""
    from gnnbench.run.preflight import check_dataset_files, check_limits, check_options, unavailable_reason

    rank: dict[str, dict[Any, int]] = {}
    position = lambda dim, value: rank.setdefault(dim, {}).setdefault(value, len(rank[dim]))  # noqa: E731
    hashes: dict[str, str] = {}
    reasons: dict[tuple[str, str, str], str | None] = {}
    checked: set = set()
    entries, seen = [], set()
    for m in campaign.matrices:
        labels = dict(m.labels)
        order_of = [*(a for a in _AXIS_ORDER if m.axis(a)),
                    *(name for name, _ in m.axes if name not in _AXIS_ORDER and name != "system"), "system"]
        for config in m.configs:
            for name in order_of:
                position(name, getattr(config, name))
        for rep, config in itertools.product(range(m.rounds), m.configs):
            if (config, rep) in seen:  # two blocks, or two spellings of one dataset, name the same run
                continue
            seen.add((config, rep))
            where = (config.system, config.framework, config.device)
            ident = identity(config, hashes)  # unknown system or model, epochs <= warmup: fails here
            if campaign.executor == "local" and (config.cpus, config.threads) not in checked:
                check_limits(config)  # as `run` checks them (Note [limits of a run on this machine])
                checked.add((config.cpus, config.threads))
            if where not in reasons:
                reasons[where] = unavailable_reason(config)
            if (config.dataset, config.data_dir) not in checked:
                check_dataset_files(config)
                checked.add((config.dataset, config.data_dir))
            if reasons[where] is None and (where, config.system_options) not in checked:
                check_options(config)
                checked.add((where, config.system_options))
            order = (rep, *(position(name, getattr(config, name)) for name in order_of))
            entries.append((order, Task(config, labels.get(config.dataset, config.dataset), rep, ident,
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


def _stored(store, tasks: list[Task], counts: Callable[[str | None], bool],
            commit: str | None = None) -> tuple[Counter, set]:
    """Per provenance key: stored rows that count as done; and (key, error) of stored skips.
    With ``commit`` only rows that ``gnnbench history`` stored for that commit count."""
    if not tasks:
        return Counter(), set()
    wanted = {t.key for t in tasks}
    done, skips = Counter(), set()
    rows = store.rows(system=sorted({t.config.system for t in tasks}), model=sorted({t.config.model for t in tasks}),
                      dataset=sorted({t.config.dataset for t in tasks}))
    for row in rows:
        key = provenance(row)
        if key not in wanted or (commit is not None and _history_commit(row) != commit):
            continue
        if counts(row.get("status")):
            done[key] += 1
        elif row.get("status") == "skipped":
            skips.add((key, row.get("error")))
    return done, skips


def _history_commit(row: Mapping[str, Any]) -> str | None:
    history = (row.get("extra") or {}).get("history")
    return history.get("commit") if isinstance(history, dict) else None


def plan(campaign: Campaign, store, tasks: list[Task] | None = None) -> Plan:
    """Expand ``campaign`` (unless ``tasks`` are its expansion) and split its tasks against what
    ``store`` holds (Note [resuming])."""
    tasks = _expand(campaign) if tasks is None else tasks
    done, skips = _stored(store, tasks, _counts_status(campaign), dict(campaign.history).get("commit"))
    result = Plan(tasks)
    for task in tasks:
        if task.unavailable:
            known = (task.key, _skip_error(task)) in skips
            (result.known_skips if known and not campaign.rerun else result.unavailable).append(task)
        elif not campaign.rerun and done[task.key] > task.occurrence:
            result.stored.append(task)
        else:
            result.todo.append(task)
    return result


# ---------------------------------------------------------------- running

def _skip_error(task: Task) -> str:
    return f"system '{task.config.system}' is unavailable: {task.unavailable}"


def _stamp(task: Task, row: Mapping[str, Any], campaign: Campaign) -> dict[str, Any]:
    """The row as stored: identity fields filled in (all of them for a failure), sweep details in ``extra``."""
    out = dict(row)
    ok = out.get("status") == "ok"
    for name, value in task.identity.items():
        if not ok or out.get(name) is None:  # a successful run's own record wins (Note [provenance])
            out[name] = value
    extra = dict(out.get("extra") or {})
    extra["sweep"] = {"campaign": campaign.name, "round": task.round, "provenance": task.key,
                      "timeout_s": task.timeout_s, "memory_limit_bytes": task.memory_limit_bytes,
                      "spec": task.config.as_dict()}  # the stored rows' name of the run's configuration
    if campaign.history:
        extra["history"] = dict(campaign.history)
    out["extra"] = extra
    return out


def run_sweep(campaign: Campaign, store_path: str | os.PathLike | None = None, executor=None,
              on_event: Callable[[SweepEvent], None] | None = None, dry_run: bool = False,
              clock: Callable[[], float] = time.monotonic) -> SweepReport:
    """Run every task of ``campaign`` not yet stored; store each row as it arrives.

    Args:
        campaign (Campaign): what to run.
        store_path (str or Path, optional): results database (default:
            ``campaign.results``, else :func:`~gnnbench.results.store.default_results_path`).
        executor (optional): an :class:`~gnnbench.run.executors.Executor` (default:
            the one ``campaign.executor`` names; it is closed afterwards).
        on_event (callable, optional): receives a :class:`SweepEvent` per start and finish.
        dry_run (bool): plan only; store and run nothing (default: False).
        clock (callable): monotonic seconds, for the time estimate (default: ``time.monotonic``).

    Returns:
        A :class:`SweepReport`; failed runs are in it, never raised.
    """
    from gnnbench.run.executors import get_executor
    from gnnbench.run.runner import failure_row
    from gnnbench.results.store import ResultsStore, default_results_path

    path = store_path or campaign.results or default_results_path()
    if dry_run and not Path(path).exists():
        path = ":memory:"  # a dry run plans against an empty store and creates no file
    tasks = _expand(campaign)  # every name, option and file checked before the store is touched
    with ResultsStore(path) as db:  # opened, upgraded and write-tested before any run (Note [store first])
        the_plan = plan(campaign, db, tasks)
        report = SweepReport(campaign.name, len(the_plan.tasks), len(the_plan.stored),
                             known_skips=len(the_plan.known_skips), dry_run=dry_run, todo=the_plan.todo)
        if dry_run:
            report.unavailable = the_plan.unavailable
            return report
        for task in the_plan.unavailable:
            row = _stamp(task, failure_row(task.config, "skipped", _skip_error(task)), campaign)
            row["id"] = db.insert(row)
            report.rows.append(row)
        owned = executor is None
        executor = get_executor(campaign.executor, address=campaign.ray_address) if owned else executor
        try:
            _SweepRun(campaign, db, report, the_plan.todo, on_event, clock).run(executor)
        finally:
            if owned:
                executor.close()
    return report


class _SweepRun:
    """One sweep through its plan's tasks to run: claims taken and released, rows stored, events sent.

    ``feed`` hands the executor the tasks this sweep holds a claim on, and the
    loop in :meth:`run` stores each row as it arrives; both share the claims
    held and the progress counted here.
    """

    def __init__(self, campaign: Campaign, db: Any, report: SweepReport, todo: list[Task],
                 on_event: Callable[[SweepEvent], None] | None, clock: Callable[[], float]):
        self.campaign, self.db, self.report, self.todo = campaign, db, report, todo
        self.on_event, self.clock = on_event, clock
        self.counts = _counts_status(campaign)
        self.total, self.started = len(todo), clock()
        self.finished = 0
        # host, pid and start time: a dead claimer's claims are taken over (Note [claim owners])
        self.owner = claim_owner()
        self.held: set[str] = set()
        self.sleep = time.sleep

    def event(self, kind: str, task: Task, row: dict | None = None) -> None:
        if self.on_event is None:
            return
        elapsed = self.clock() - self.started
        done = self.finished + self.report.meanwhile + self.report.claimed_elsewhere
        eta = elapsed / self.finished * (self.total - done) if self.finished else None
        self.on_event(SweepEvent(kind, task, row, done, self.total, elapsed, eta))

    def feed(self, sequential: bool) -> Iterator[Task]:
        watched = []  # claimed by another live sweep of this host: run here if it dies first
        for task in self.todo:
            if not self.campaign.rerun and not self._claim(task):
                if sequential and self._watchable(task):
                    watched.append(task)
                continue
            if sequential:
                self.event("start", task)
            yield task
        while watched:  # Note [a killed sweep's configurations]
            self.sleep(_WATCH_POLL_S)
            still = []
            for task in watched:
                if self._claim(task, again=True):
                    self.event("start", task)
                    yield task
                elif self._watchable(task):
                    still.append(task)
            watched = still

    def _watchable(self, task: Task) -> bool:
        holder = self.db.claims().get(task.claim_key)
        return holder is not None and owner_is_another_live_process(holder)

    def _claim(self, task: Task, again: bool = False) -> bool:
        """Whether this sweep now holds ``task``: not claimed by another sweep, nor stored since the plan.
        ``again``: a task this sweep found claimed before (Note [a killed sweep's configurations])."""
        db, report = self.db, self.report
        ttl = (task.timeout_s or _CLAIM_TTL_S) + _CLAIM_MARGIN_S
        if not _claim(db, task.claim_key, self.owner, ttl):  # another sweep runs it (Note [claims])
            if not again:
                report.claimed_elsewhere += 1
                self.event("claimed", task)
            return False
        if again:
            report.claimed_elsewhere -= 1  # its holder is gone, or stored it (counted below)
        self.held.add(task.claim_key)
        if _stored(db, [task], self.counts, dict(self.campaign.history).get("commit"))[0][task.key] > task.occurrence:
            self._release(task.claim_key)
            report.meanwhile += 1  # another sweep on this file ran it (Note [resuming])
            self.event("meanwhile", task)
            return False
        return True

    def _release(self, key: str) -> None:
        self.db.release(key, self.owner)
        self.held.discard(key)

    def run(self, executor) -> None:
        from gnnbench.results.status import verification_status

        try:
            for task, raw in executor.run(self.feed(executor.sequential)):
                row = _stamp(task, raw, self.campaign)
                row["verified"] = verification_status(self.db, row.get("system"), row.get("system_hash"))
                row["id"] = _insert_or_save(self.db, row, self.report)
                if task.claim_key in self.held:
                    self._release(task.claim_key)
                self.report.rows.append(row)
                self.finished += 1
                self.event("finish", task, row)
        finally:
            self.report.elapsed_s = self.clock() - self.started
            for key in self.held:  # interrupted: leave the rest to other sweeps at once
                try:
                    self.db.release(key, self.owner)
                except Exception:  # the store itself may be what failed
                    pass


def _claim(db: Any, key: str, owner: str, ttl: float) -> bool:
    """Claim ``key``, first taking it from a holder whose process is gone (Note [claim owners])."""
    if db.claim(key, owner, ttl):
        return True
    holder = db.claims().get(key)
    if holder is None or not owner_is_gone(holder):
        return False
    db.release(key, holder)  # only that dead holder's claim; a live sweep that raced us keeps its own
    return db.claim(key, owner, ttl)


_CLAIM_TTL_S = 24 * 3600.0   # a claim of a run without a time limit expires after a day
#: how often a sweep looks at the claims of another live sweep (Note [a killed sweep's configurations])
_WATCH_POLL_S = 1.0
_CLAIM_MARGIN_S = 600.0      # beyond the run's time limit: start-up, loading, storing


def _insert_or_save(db, row: dict[str, Any], report: SweepReport) -> int | None:
    """Store a row; if the store refuses it, save it as JSON and note where (Note [store first])."""
    import sqlite3

    from gnnbench.results.store import save_unsaved

    try:
        return db.insert(row)
    except (sqlite3.Error, OSError) as err:
        report.unsaved.append((str(save_unsaved(row, db.path)), str(err).splitlines()[0] if str(err) else ""))
        return None
