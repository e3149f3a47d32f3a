"""A run's result as typed data, declared once: :class:`RunResult`.

Every column of the ``runs`` table is one field of :class:`RunResult`, and the
field carries its column metadata once (:func:`column`, or its role's
:func:`identity`, :func:`measured`, :func:`outcome`): description and roles;
its SQL type is its annotation's (:func:`sql_type`). What other modules list is derived from it:

* :data:`RUN_COLUMNS` is the store's ``RUN_FIELDS`` (the table, the CSV
  columns, ``docs/results-schema.md``, the frame's columns);
* :data:`IDENTITY_FIELDS`: what a run of a configuration stores whatever its
  outcome, computed without running it (``gnnbench.run.record.identity_columns``);
* :data:`PROVENANCE_FIELDS`: what makes two runs the same experiment (the
  sweep's provenance key, Note [provenance] in :mod:`gnnbench.run.sweep`);
* :data:`COMPARABLE_FIELDS`: what must agree for two epoch times to be set
  side by side (Note [comparable runs] in :mod:`gnnbench.results.compare`), in
  the order the comparison's footnote names them;
* the columns of each timed phase, which :data:`gnnbench.core.phases.PHASES`
  names (Note [phases by name]): the class is checked against it when it is
  built, and a phase whose columns it does not declare gets them appended
  (:func:`_with_phase_columns`); :meth:`RunResult.phase` rebuilds a phase's
  :class:`~gnnbench.core.measurement.Measurement`.

Adding a column is one declaration here, appended after the last one (and an
upgrade step in ``gnnbench.results.store``, Note [schema versions]); a new
timed phase is its declaration in :mod:`gnnbench.core.phases` alone (and the
same upgrade step).

The ``machine_state`` column is :class:`MachineState`: the machine's state
around the timed epochs (Note [machine state] in
:mod:`gnnbench.run.machine_state`).

The ``extra`` column is :class:`Extra`: typed records for what the harness
and the runner add (:class:`FallbackUse`, :class:`Tuning`,
:class:`ModeledInference`, :class:`SpmmFigures`, compile time, huge pages, held memory), a system's
own ``system_report`` (the one open mapping), and ``other`` for keys this
version does not declare (a sweep's details, keys of a later version), kept
as they came.

:meth:`RunResult.to_row` and :meth:`RunResult.from_row` convert to and from
the stored dict; ``from_row(to_row(r)) == r`` for every status.

Note [JSON columns checked when read]
    A JSON column is text anyone with ``sqlite3`` can edit, and its readers
    (``compare --metric time-to-accuracy``, the benchmarks' ``--render-only``)
    trust the types its declaration gives. So the store checks every JSON
    value it reads against its annotation here, nested keys included
    (:func:`json_problem`): ``extra``'s typed records (:class:`TimeToAccuracy`
    holds numbers in ``seconds``), :class:`Hyperparameters` (``system_options``
    is an object of text, ``target_accuracy`` a number). A value that is not
    is one line naming the run, the column and the key (exit status 2), never
    a traceback in a reader. A record with other keys than this version
    declares (an older or later row) is kept as it came, as :func:`_record`
    keeps it, and is read as such; keys no declaration names are not checked.
"""
from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, NamedTuple

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from gnnbench.core.phases import PHASES, phase

__all__ = ["RunResult", "Extra", "MachineState", "FallbackUse", "Tuning", "ModeledInference", "SpmmFigures",
           "SpmmKernelFigures", "TimeToAccuracy", "ThreadPools", "Hyperparameters", "Profile", "OperatorTime",
           "json_problem", "Field", "column", "identity", "measured", "outcome",
           "sql_type",
           "IDENTITY", "PROVENANCE", "MEASURED", "OUTCOME", "RUN_COLUMNS", "IDENTITY_FIELDS",
           "PROVENANCE_FIELDS", "COMPARABLE_FIELDS"]

#: A column a run of a configuration stores whatever its outcome, known before it runs.
IDENTITY = "identity"
#: A column of the provenance key: runs that agree on all of them are the same experiment.
PROVENANCE = "provenance"
#: A figure the run measured (null for a run that did not finish).
MEASURED = "measured"
#: What became of the run: its status, error, stderr, row id, time and verification.
OUTCOME = "outcome"


class Field(NamedTuple):
    """One column. ``sqltype`` is INTEGER, REAL, TEXT or JSON (TEXT holding JSON,
    decoded back to Python objects when read); ``shape``, for JSON, what the
    decoded value must be (its annotation, ``list[float]``), checked when read."""

    name: str
    sqltype: str
    description: str
    shape: str = ""


def column(roles: tuple[str, ...], description: str, *, comparable: int | None = None) -> Any:
    """A field of :class:`RunResult` with its column metadata (null by default); its SQL type follows from
    its annotation (:func:`sql_type`).

    Args:
        roles (tuple): of :data:`IDENTITY`, :data:`PROVENANCE`, :data:`MEASURED`, :data:`OUTCOME`.
        description (str): the column's line in ``docs/results-schema.md``.
        comparable (int, optional): its place in :data:`COMPARABLE_FIELDS` (default: not one of them).
    """
    unknown = set(roles) - {IDENTITY, PROVENANCE, MEASURED, OUTCOME}
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; choose among identity, provenance, measured, outcome")
    return field(default=None, metadata={"roles": frozenset(roles), "description": description,
                                         "comparable": comparable})


def identity(description: str, *, provenance: bool = True, comparable: int | None = None) -> Any:
    """An :data:`IDENTITY` column, of the provenance key too unless ``provenance`` is false."""
    return column((IDENTITY, PROVENANCE) if provenance else (IDENTITY,), description, comparable=comparable)


def measured(description: str, *, comparable: int | None = None) -> Any:
    """A :data:`MEASURED` column."""
    return column((MEASURED,), description, comparable=comparable)


def outcome(description: str) -> Any:
    """An :data:`OUTCOME` column."""
    return column((OUTCOME,), description)


#: a column's SQL type by its annotation's type; lists, mappings and records are JSON
_SQL_TYPES = {"float": "REAL", "int": "INTEGER", "str": "TEXT"}


def sql_type(annotation: str) -> str:
    """The SQL type of a column annotated ``annotation`` (``float | None``: ``REAL``): ``INTEGER``, ``REAL``,
    ``TEXT`` or ``JSON`` (TEXT holding JSON, decoded back to Python objects when read)."""
    base = annotation.removesuffix(" | None")
    if base in _SQL_TYPES:
        return _SQL_TYPES[base]
    if base.startswith(("list[", "dict[")) or base in ("Extra", "MachineState", "Hyperparameters"):
        return "JSON"
    raise TypeError(f"a column annotated {annotation!r} has no SQL type: annotate it float, int, str, list[...], "
                    f"dict[...], Extra, MachineState or Hyperparameters, each `| None`")


# ---------------------------------------------------------------- the hyperparameters column

class Hyperparameters(TypedDict, total=False):
    """The ``hyperparameters`` column's keys, each with its type (Note [JSON columns checked when read]); built by
    ``gnnbench.run.resolved.stored_hyperparameters``. Keys of another version are kept, unchecked."""

    hidden: int | None
    layers: int | None
    heads: int | None
    dropout: float | None
    lr: float | None
    weight_decay: float | None
    epochs: int | None
    normalisation: str | None
    warmup: int | None
    dtype: str | None
    index_dtype: str | None
    selection: str | None
    system_options: dict[str, str] | None
    fallback: str | None
    mode: str | None
    cpus: str | None
    tune: bool | None
    target_accuracy: float | None
    eval_every: float | None
    batching: str | None
    fanouts: list[int] | None
    relation_fanouts: dict[str, list[int]] | None
    batch_size: int | None
    sampler: str | None
    accuracy_method: str | None


# ---------------------------------------------------------------- typed records of ``extra``

@dataclass(frozen=True)
class FallbackUse:
    """``extra.fallback``: what a run with ``--fallback`` borrowed (Note [fallback accounting])."""

    system: str
    system_version: str | None
    system_hash: str | None
    operators: list[str]
    kernel_time_s: float | None
    kernel_share: float | None
    prepare_time_s: float | None


@dataclass(frozen=True)
class Tuning:
    """``extra.tuning`` (the tuner's own result, an open mapping) and ``extra.tuned_after_timed_epoch``
    (Note [tune on first use])."""

    choices: Any
    after_timed_epoch: bool = False


@dataclass(frozen=True)
class ModeledInference:
    """``extra.modeled_inference``: an inference pass as modeled by a system that models its aggregation
    (Note [inference mode])."""

    label: str
    pass_time_s: float
    host_measured_s: float
    aggregation_modeled_s: float
    simulation_wall_s: float
    passes_modeled: int


def _key(description: str) -> Any:
    """A field of a record in ``extra`` with its line in the ``extra`` column's description."""
    return field(metadata={"description": description})


def _null_key(description: str) -> Any:
    """A :func:`_key` that is null unless given."""
    return field(default=None, metadata={"description": description})


@dataclass(frozen=True)
class SpmmKernelFigures:
    """One SpMM-type kernel's work in an epoch and what it achieved (Note [spmm figures] in gnnbench/run/bounds.py)."""

    calls: int = _key("its calls in the epoch")
    edges: int = _key("edges its calls gathered along, the sum of `E`")
    rows: int = _key("rows they wrote, the sum of `N`")
    flops: int = _key("the sum of `E F`, `F` the width, heads x features")
    bytes: int = _key("bytes they moved at least, `s (E + N + 1) + v F (E + N)` for `s`-byte indices and "
                      "`v`-byte values, summed")
    median_s: float = _key("its median seconds per epoch, as in `kernel_median_s_by_kernel`")
    GBps: float | None = _key("`bytes / median_s` in GB/s")
    GFLOPs: float | None = _key("`flops / median_s` in GFLOP/s, as DGL's kernel benchmarks count them")
    of_stream: float | None = _key("`GBps` over this machine's STREAM triad bound, null without bounds")
    of_gather: float | None = _key("`GBps` over its random 256-byte gather bound, null without bounds")


@dataclass(frozen=True)
class SpmmFigures:
    """``extra.spmm_figures``: the run's SpMM-type kernels as GB/s, GFLOP/s and fractions of this machine's
    bounds (Note [spmm figures], Note [bounds in a run] in gnnbench/run/bounds.py)."""

    kernels: dict[str, SpmmKernelFigures] = _key("kernel name -> its figures")
    bounds: dict[str, Any] | None = _key("the bounds the fractions divide by, as `gnnbench bounds --json` prints "
                                         "them, null when none were cached for the machine and thread count")
    note: str | None = _key("why the fractions are null, when they are")

    def top(self) -> tuple[str, SpmmKernelFigures] | None:
        """The kernel that took the most time per epoch (then moved the most bytes) and its figures, or None."""
        return max(self.kernels.items(), key=lambda kv: (kv[1].median_s, kv[1].bytes, kv[0]), default=None)

    @classmethod
    def from_dict(cls, value: Any) -> "SpmmFigures | Any":
        """The record a stored ``extra.spmm_figures`` holds; any other shape kept as it came."""
        value = _record(cls, value)
        if not isinstance(value, cls):
            return value
        return replace(value, kernels={k: _record(SpmmKernelFigures, v) for k, v in (value.kernels or {}).items()})


@dataclass(frozen=True)
class TimeToAccuracy:
    """``extra.time_to_accuracy``: a run trained to a target validation accuracy (Note [time to accuracy] in
    gnnbench/run/target.py); the figures are up to the evaluation that reached it, null when none did."""

    target: float = _key("the validation accuracy to reach, in (0, 1]")
    reached: bool = _key("whether an evaluation reached it within `max_epochs`")
    epochs: float | None = _key("epochs trained when it was reached, warm-ups included (a fraction for sampled runs)")
    seconds: float | None = _key("time to the target: `train_s + eval_s + prepare_s + tune_s`")
    train_s: float | None = _key("training epochs until then, warm-ups included")
    eval_s: float | None = _key("evaluations until then, timed apart from the epochs")
    prepare_s: float | None = _key("the system's preparation, as `prepare_time_s`")
    tune_s: float | None = _key("first-use tuning, as `tune_time_s`")
    max_epochs: int = _key("the most epochs the run could train")
    eval_every: float = _key("epochs between evaluations")
    curve: list[list[float]] = _key("`[epochs trained, validation accuracy]` at every evaluation")


@dataclass(frozen=True)
class ThreadPools:
    """``extra.thread_pools``: what the run's thread pools ran under (Note [thread pools] in
    gnnbench/run/thread_pools.py)."""

    threads: int | None = _key("`--threads`, the size every pool was given; null: the libraries' own sizes")
    numba_layer: str | None = _key("numba's threading layer (`workqueue`, `omp`, `tbb`), null when no numba "
                                   "parallel section ran")
    numba_threads: int | None = _key("numba's threads at the end of the run, null as `numba_layer`")
    omp_wait_policy: str | None = _key("`OMP_WAIT_POLICY` the process started with (how OpenMP workers wait), "
                                       "null when unset")
    torch_threads: int | None = _key("torch's intra-op threads, null when torch was not loaded")
    torch_interop_threads: int | None = _key("torch's inter-op threads, null as `torch_threads`")


@dataclass(frozen=True)
class OperatorTime:
    """One operator of a profiled phase (Note [profiled epochs] in gnnbench/run/profile.py)."""

    name: str = _key("the profiler's name (`aten::addmm`, `_BridgeBackward`), a kernel system's kernel as "
                     "`system::kernel`")
    self_s: float = _key("its self CPU seconds per profiled epoch, its children's left out")
    calls: float = _key("its calls per profiled epoch")
    kernel: bool = _key("whether it is one of the system's own kernels (a lent kernel is not)")


@dataclass(frozen=True)
class Profile:
    """``extra.profile``: where a run's epoch goes, operator by operator (Note [profiled epochs] in
    gnnbench/run/profile.py)."""

    tool: str = _key("the profiler, `torch.profiler`")
    epochs: int = _key("the epochs profiled, extra epochs run after the timed ones (and one untimed warm-up "
                       "of their optimizer): the timed figures, memory and accuracy are not profiled")
    top: int = _key("the most operators kept per phase")
    phases: dict[str, list[OperatorTime]] = _key("phase (`forward`, `backward`, `optimizer`; an inference run's "
                                                  "`forward` only) -> its costliest operators by self CPU time, "
                                                  "costliest first")
    totals: dict[str, float] = _key("phase -> self CPU seconds per profiled epoch of all its operators, kept or not")

    @classmethod
    def from_dict(cls, value: Any) -> "Profile | Any":
        """The record a stored ``extra.profile`` holds; any other shape kept as it came."""
        value = _record(cls, value)
        if not isinstance(value, cls) or not isinstance(value.phases, Mapping):
            return value
        return replace(value, phases={phase: [_record(OperatorTime, op) for op in ops]
                                      for phase, ops in value.phases.items()})


def _keys_text(cls) -> str:
    """``[`a`: its description; `b`: ...]`` of a record's fields, for the ``extra`` column's description."""
    return "[" + "; ".join(f"`{f.name}`: {f.metadata['description']}" for f in fields(cls)) + "]"


def _record(cls, value: Any) -> Any:
    """``value`` as a ``cls`` when it has exactly its keys; any other shape (older rows) kept as it came."""
    if isinstance(value, Mapping) and set(value) == {f.name for f in fields(cls)}:
        return cls(**value)
    return value


def _plain(value: Any) -> Any:
    return asdict(value) if is_dataclass(value) else value


#: keys of ``extra`` kept (null) whenever ``memory_method`` is set: measured together after the epochs
_WITH_MEMORY = ("huge_page_bytes", "held_bytes")


@dataclass(frozen=True)
class Extra:
    """The ``extra`` column: each key the platform writes, typed, in the order it is written."""

    compile_time_s: float | None = None          # Note [compile time apart]
    # Note [run-time check]: status, operators, rows, seconds; a sampled run's adds batches, layers, share
    # (Note [run-time check on blocks])
    run_check: dict[str, Any] | None = None
    tuning: Tuning | None = None                 # Note [tune on first use]
    huge_page_bytes: int | None = None           # Note [huge pages outside the epochs]
    held_bytes: int | None = None                # Note [peak memory]
    final_accuracy: dict[str, float] | None = None  # Note [model selection]
    metric: str | None = None
    selected_epoch: int | None = None
    system_report: Mapping[str, Any] | None = None  # the system's own, open mapping
    modeled_inference: ModeledInference | None = None
    memory_method: str | None = None
    kernel_median_s_by_kernel: dict[str, float] | None = None
    spmm_figures: SpmmFigures | None = None      # Note [spmm figures]
    fallback: FallbackUse | None = None
    bad_input: bool | None = None                # Note [bad input in a worker]
    stderr_path: str | None = None
    # sampled runs (Note [sampled batching])
    sampler: str | None = None
    sampled_edges_per_epoch: int | None = None
    block_prepare_share: float | None = None
    sampler_edges_per_s: float | None = None
    blocks_note: str | None = None
    time_to_accuracy: TimeToAccuracy | None = None  # Note [time to accuracy]
    thread_pools: ThreadPools | None = None      # Note [thread pools]
    process_start: str | None = None             # Note [cheap processes]: fresh or fork
    warm_parent: str | None = None               # the parent a forked process came from
    profile: Profile | None = None               # Note [profiled epochs]
    other: dict[str, Any] = field(default_factory=dict)  # keys this version does not declare, as they came

    def as_dict(self) -> dict[str, Any]:
        """The stored object: declared keys that are set, in declaration order, then :attr:`other`."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "other":
                out.update(value)
            elif f.name == "tuning":
                if value is not None:
                    out["tuning"] = value.choices
                    if value.after_timed_epoch:
                        out["tuned_after_timed_epoch"] = True
            elif value is not None or (f.name in _WITH_MEMORY and self.memory_method is not None):
                out[f.name] = _plain(value)
        return out

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Extra":
        """The typed ``extra`` of a row as stored or as a frame's record holds it; empty when it has none."""
        data = row.get("extra")
        return cls.from_dict(data) if isinstance(data, Mapping) else cls()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Extra | None":
        if data is None:
            return None
        known = {f.name for f in fields(cls)} - {"tuning", "other"}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        if "tuning" in data:
            values["tuning"] = Tuning(data["tuning"], bool(data.get("tuned_after_timed_epoch")))
        elif "tuned_after_timed_epoch" in data:
            values["tuning"] = Tuning(None, bool(data["tuned_after_timed_epoch"]))
        if "fallback" in values:
            values["fallback"] = _record(FallbackUse, values["fallback"])
        if "modeled_inference" in values:
            values["modeled_inference"] = _record(ModeledInference, values["modeled_inference"])
        if "time_to_accuracy" in values:
            values["time_to_accuracy"] = _record(TimeToAccuracy, values["time_to_accuracy"])
        if "spmm_figures" in values:
            values["spmm_figures"] = SpmmFigures.from_dict(values["spmm_figures"])
        if "thread_pools" in values:
            values["thread_pools"] = _record(ThreadPools, values["thread_pools"])
        if "profile" in values:
            values["profile"] = Profile.from_dict(values["profile"])
        other = {k: v for k, v in data.items() if k not in known and k not in ("tuning", "tuned_after_timed_epoch")}
        return cls(**values, other=other)


# ---------------------------------------------------------------- the machine's state

@dataclass(frozen=True)
class MachineState:
    """The ``machine_state`` column: the machine while the timed epochs ran (Note [machine state] in
    gnnbench/run/machine_state.py). Every key may be null; one that could not be read says why in
    ``unreadable``."""

    load_before: list[float] | None = _null_key("the 1, 5 and 15-minute load averages when the timed epochs began")
    load_after: list[float] | None = _null_key("the same when they ended")
    window_s: float | None = _null_key("wall seconds from the first timed epoch's start to the last one's end")
    other_cpu_share: float | None = _null_key(
        "CPU time other processes took in that window over the capacity of the CPUs the worker may use, in [0, "
        "1]: busy jiffies of those CPUs in `/proc/stat` (steal time counted as taken) less the worker's own CPU "
        "time, all its threads (above `OTHER_CPU_LIMIT` in gnnbench/core/stability.py the figures are flagged)")
    steal_share: float | None = _null_key(
        "of that capacity, the share the hypervisor stole (part of `other_cpu_share`)")
    other_cpu_seconds: float | None = _null_key("the CPU seconds other processes took in the window")
    runnable_threads: int | None = _null_key(
        "runnable threads of other processes (`procs_running` of `/proc/stat`, machine-wide, less the worker's "
        "own running threads), the larger of the counts at the window's start and end")
    cpus_allowed: str | None = _null_key("the CPUs the worker may run on (`os.sched_getaffinity`), as a list `0-3,6`")
    cpu_quota: float | None = _null_key("the cgroup's CPU quota in CPUs (v2 `cpu.max`, v1 `cpu.cfs_quota_us` over "
                                   "`cpu.cfs_period_us`), null when there is none")
    cpu_freq_mhz: float | None = _null_key("the allowed CPUs' mean current frequency in MHz at the window's end "
                                      "(`scaling_cur_freq`, else `/proc/cpuinfo`)")
    governor: str | None = _null_key("their cpufreq governor(s) (`scaling_governor`), comma-separated when they differ")
    randomize_va_space: int | None = _null_key(
        "the kernel's address-space randomisation (`/proc/sys/kernel/randomize_va_space`, as pyperf's `system "
        "show` reads it): 0 none, 1 conservative (stack, mmap, vDSO), 2 full (the brk heap too) (Note [ASLR state] "
        "in gnnbench/run/machine_state.py)")
    aslr_personality_off: bool | None = _null_key(
        "whether the worker ran with the `ADDR_NO_RANDOMIZE` personality (`setarch -R`), which turns randomisation "
        "off for it and what it starts whatever the kernel's setting (`/proc/self/personality`)")
    unreadable: dict[str, str] | None = _null_key("key -> why it could not be read, for each key left null for that "
                                             "reason")

    @classmethod
    def from_dict(cls, value: Any) -> "MachineState | Any":
        """The record a stored ``machine_state`` holds; any other shape (a later version's) kept as it came."""
        return _record(cls, value)


# ---------------------------------------------------------------- the run

def _with_phase_columns(cls):
    """``cls`` with every timed phase's columns (Note [phases by name] in gnnbench/core/phases.py): a phase none of
    whose columns ``cls`` declares gets them appended, a median and a list of samples, described from its
    declaration; one whose columns ``cls`` declares in part is an error."""
    annotations = cls.__dict__["__annotations__"]
    for p in PHASES:
        names = {p.median: "float | None", p.samples: "list[float] | None"}
        if p.iqr:
            names[p.iqr] = "float | None"
        declared = [name for name in names if name in annotations]
        if declared and len(declared) != len(names):
            raise TypeError(f"phase {p.name!r} has columns {sorted(names)}, but {cls.__name__} declares only "
                            f"{sorted(declared)}: declare all of them, or none to have them generated")
        if declared:
            continue
        spread = {p.iqr: "Interquartile range"} if p.iqr else {}
        for name, what in {p.median: "Median", **spread}.items():
            annotations[name] = names[name]
            setattr(cls, name, measured(f"{what} of the seconds per epoch of phase `{p.name}`: {p.description}; "
                                        f"null for runs that do not time it."))
        annotations[p.samples] = names[p.samples]
        setattr(cls, p.samples, measured(f"List of floats: seconds of phase `{p.name}` in every timed epoch."))
    return cls


@dataclass(frozen=True)
@_with_phase_columns
class RunResult:
    """One run, whatever its outcome: the stored row as typed data (see the module's docstring)."""

    id: int | None = outcome("Row id, assigned on insert; increases with insertion order.")
    timestamp: str | None = outcome(
        "When the run started, UTC ISO 8601 (`2024-05-01T12:00:00+00:00`); set once, by "
        "`gnnbench.run.record.run_record`.")
    status: str | None = outcome("Outcome: `ok`, `failed`, `skipped`, `timeout`, `oom` or `crashed`.")
    error: str | None = outcome(
        "One-line reason when the status is not `ok` (a signal is named, e.g. `worker killed by SIGKILL`); "
        "null when ok.")
    system: str | None = identity("Kernel system name (`reference`, ...).")
    system_version: str | None = identity("The system's declared version.", provenance=False)
    system_hash: str | None = identity(
        "Hash of spec + generated glue + kernels; rows of one system with different hashes are not "
        "comparable.")
    verified: str | None = outcome("Correctness against `reference`: `passed`, `failed` or `unverified`.")
    model: str | None = identity("Model name (`gcn`, `gat`, `gin`, `sage`).")
    hyperparameters: Hyperparameters | None = identity(
        "Object: the model's resolved hyperparameters (hidden, layers, heads, lr, epochs, ...) with warmup, "
        "dtype, index_dtype, selection and system_options; the same shape for every outcome; `fallback` (a "
        "system name) only for a run with `--fallback`; `cpus` (a CPU list) only for a run pinned with `--cpus` "
        "(Note [pinned runs]); `normalisation` (`node` or `edge`, Note [GCN as node "
        "scales] in models/gcn.py) only for GCN rows, so a GCN row stored without it ran the edge form; "
        "`batching` with `fanouts`, `batch_size` and `sampler` only for sampled runs, and `relation_fanouts` "
        "(relation -> its fanouts, Note [fan-out per relation]) only for one with `--relation-fanout`.")
    dataset: str | None = identity(
        "Canonical dataset name, every parameter spelled out (`sbm:classes=4,degree=12,...`), whatever the "
        "outcome.")
    dataset_nodes: int | None = measured("Number of nodes.", comparable=4)
    dataset_edges: int | None = measured("Number of edges (after preprocessing, e.g. self loops).", comparable=5)
    dataset_features: int | None = measured("Input feature width.")
    framework: str | None = identity("Framework that ran the model (`torch`, ...).")
    framework_version: str | None = measured("Framework version string.")
    device: str | None = identity("Device (`cpu`, `cuda:0`, ...).", comparable=0)
    seed: int | None = identity("Random seed.")
    threads: int | None = identity("Intra-op threads the run was pinned to.", comparable=2)
    epochs: int | None = identity("Epochs trained, warm-ups included (`len(epoch_times)` are timed).")
    warmup: int | None = identity("Untimed warmup epochs.", provenance=False)
    epoch_time_median_s: float | None = measured("Median epoch time in seconds.")
    epoch_time_iqr_s: float | None = measured(
        "Interquartile range of the epoch times in seconds.")
    forward_median_s: float | None = measured(
        "Median forward-pass time per epoch in seconds.")
    backward_median_s: float | None = measured(
        "Median backward-pass time per epoch in seconds.")
    optimizer_median_s: float | None = measured(
        "Median optimizer-step time per epoch in seconds.")
    prepare_time_s: float | None = measured(
        "Time of the system's one-off `prepare` step in seconds, less any JIT compilation in it "
        "(`extra.compile_time_s`).")
    tune_time_s: float | None = measured(
        "Seconds spent autotuning the system's kernels for this run before training, apart from "
        "`prepare_time_s` and from epochs; null when the run did not tune.")
    peak_memory_bytes: int | None = measured(
        "Peak memory of the timed loop above its start, in bytes: the host's resident set on the CPU, the "
        "framework's CUDA allocator on a GPU (extra.memory_method names which; Note [peak memory]).")
    train_accuracy: float | None = measured(
        "Training accuracy, a fraction in [0, 1], of the epoch the selection rule picks: the best-validation "
        "epoch by default (`hyperparameters.selection` = `best_val`), else the last; the last epoch's are in "
        "`extra.final_accuracy`.")
    val_accuracy: float | None = measured("Validation accuracy of the selected epoch (see `train_accuracy`).")
    test_accuracy: float | None = measured("Test accuracy of the selected epoch (see `train_accuracy`).")
    first_loss: float | None = measured("Training loss of epoch 0 (the first epoch, a warm-up when `warmup` > 0).")
    final_loss: float | None = measured("Training loss of the last epoch.")
    epoch_times: list[float] | None = measured(
        "List of floats: every timed epoch in seconds (raw samples).")
    forward_times: list[float] | None = measured(
        "List of floats: forward time of every timed epoch in seconds.")
    backward_times: list[float] | None = measured(
        "List of floats: backward time of every timed epoch in seconds.")
    optimizer_times: list[float] | None = measured(
        "List of floats: optimizer time of every timed epoch in seconds.")
    cpu_model: str | None = measured("CPU model name.", comparable=1)
    machine: dict[str, Any] | None = measured("Object: hostname, platform, cpu count, GPU, library versions.")
    git_commit: str | None = identity("The last gnnbench commit that changed the code the run executed, `-dirty` when "
                                      "that code was modified (Note [code commit] in gnnbench/run/environment.py).")
    extra: Extra | None = measured(
        "Object of system-specific figures (tuned parameters, counters). A run with `--fallback` adds "
        "`fallback`: the lender's `system`, `system_version` and `system_hash`, the `operators` it ran (e.g. "
        "`[\"edge_softmax\", \"sddmm(op=add)\"]`), `kernel_time_s` (its median kernel seconds per epoch), "
        "`kernel_share` (its share of all kernel time) and `prepare_time_s`. See Note [fallback accounting]. "
        "A `failed` run whose worker refused its input (a dataset that could not be downloaded) has "
        "`bad_input: true`; see Note [bad input in a worker]. A run whose `prepare` JIT-compiled kernels "
        "(numba, on a cold cache) has `compile_time_s`, apart from `prepare_time_s`; see Note [compile time "
        "apart]. A run of a kernel system has `run_check`: the run-time check of its first forward, every "
        "layer's calls, forward and backward, against `reference` on sampled rows (`status` `passed`, `failed`, "
        "`skipped` or `off` under `--no-check`, `operators`, `layers` (per layer, the `operators` checked), "
        "`rows_sampled`, `seconds`, timed apart from the epochs); a run it fails is stored as `failed` with the "
        "operator and layer named in `error`; see Note [run-time check]. The same check runs again after the "
        "timed epochs and any tuning, as `closing` (the same keys, and `when`); a run it fails is stored as "
        "`failed` with its timed figures kept, `figures` saying they are a failed run's, never published nor "
        "pooled; see Note [closing check]. A sampled run's check is on the "
        "blocks of two batches of its first epoch: it has `batches` (their indices), `layers` (per layer, "
        "outermost first, the `operators` checked on its block and `rows_sampled` per batch) and `share` (of the "
        "run's wall time), and a failed one names the `operator`, `layer` and `batch`; its `closing` check is on "
        "the last batch of the last epoch (`epoch`, `batches`); see Note [run-time check on "
        "blocks] in gnnbench/check/block_check.py. A row stored by `gnnbench "
        "history` has `history`: the systems repository's `commit`, its `index` in the range, `subject`, `repo` "
        "and `dependencies_differ`; see Note [failing commits] in gnnbench/run/history.py. A sampled run has "
        "`sampler`, `sampled_edges_per_epoch`, `sampler_edges_per_s` and `block_prepare_share`; see Note "
        "[sampled batching]. A successful run has `huge_page_bytes`: how much of its process's anonymous memory was on "
        "transparent huge pages after the epochs (`AnonHugePages`; null off Linux), which moves epoch times "
        "by 10 %; see Note [allocator]. It also has `held_bytes`: how much of `peak_memory_bytes` was still "
        "resident after the epochs (one-time start-up of the libraries, optimizer state; null where not "
        "measured), nearly all of the peak on a small graph; see Note [peak memory]. A kernel system's run "
        "whose kernels were timed has `spmm_figures` when SpMM-type kernels ran (Note [spmm work] in "
        "gnnbench/runtime/kernel_clock.py), " + _keys_text(SpmmFigures) + ", each kernel's figures "
        + _keys_text(SpmmKernelFigures) + "; see Note [spmm figures] and Note [bounds in a run] in gnnbench/run/bounds.py. "
        "A run with `--target-accuracy` has `time_to_accuracy`, " + _keys_text(TimeToAccuracy) + "; see Note [time "
        "to accuracy] in gnnbench/run/target.py. A successful run has `thread_pools`, what its thread pools ran "
        "under, " + _keys_text(ThreadPools) + "; see Note [thread pools] in gnnbench/run/thread_pools.py. A run in "
        "a process of its own has `process_start`: `fresh` for a new Python process, `fork` for one forked from a warm parent that had "
        "imported the framework, the system and the dataset; a forked one has `warm_parent`, the same for every "
        "fork of one parent (forks of one parent share its memory layout); see Note [cheap processes] in "
        "gnnbench/run/warm.py. A run "
        "with `--profile` has `profile`, where its epoch goes, " + _keys_text(Profile) + ", each operator "
        + _keys_text(OperatorTime) + "; see Note [profiled epochs] in gnnbench/run/profile.py.")
    stderr: str | None = outcome(
        "Last 20000 characters of the run's stderr, kept for runs that did not succeed (not for bad input, "
        "whose `error` line says it all); the whole of it is in the file `extra.stderr_path`.")
    # added in schema 3 (appended, so an upgraded table has the columns of a new one)
    kernel_median_s: float | None = measured(
        "Median seconds per epoch spent inside the system's own kernels (forward, backward and optimizer "
        "phases; a fallback's are in `extra.fallback`); null for native baselines and non-CPU devices. See "
        "Note [kernel time].")
    kernel_times: list[float] | None = measured(
        "List of floats: kernel seconds of every timed epoch (null when not measured).")
    allocator: str | None = identity(
        "Memory allocator the run's process used: `tcmalloc`, `jemalloc`, `jemalloc-thp` (jemalloc on "
        "transparent huge pages) or `system` (the C library's malloc); null for runs stored before schema 3. "
        "See Note [allocator].", comparable=3)
    # added in schema 5: sampled mini-batch runs (Note [sampled batching]); null for full-graph runs
    sample_median_s: float | None = measured(
        "Median seconds per epoch drawing the mini-batches' neighbourhoods (`--batching sampled`; null for "
        "full-graph runs). See Note [sampled batching].")
    gather_median_s: float | None = measured(
        "Median seconds per epoch gathering the input features `x[input_nodes]` and the seeds' labels into "
        "framework tensors (sampled runs).")
    block_prepare_median_s: float | None = measured(
        "Median seconds per epoch of per-block system preparation (the system's `prepare` hook on each block, "
        "both orientations; a native baseline's own block construction) (sampled runs).")
    sample_times: list[float] | None = measured(
        "List of floats: sampling seconds of every timed epoch (sampled runs).")
    gather_times: list[float] | None = measured(
        "List of floats: gather seconds of every timed epoch (sampled runs).")
    block_prepare_times: list[float] | None = measured(
        "List of floats: per-block preparation seconds of every timed epoch (sampled runs).")
    seeds_per_s: float | None = measured("Seed (training) nodes per second of epoch time, median epoch (sampled runs).")
    edges_per_s: float | None = measured(
        "Sampled edges (all blocks, before self loops) per second of epoch time, median epoch (sampled runs).")
    accuracy_method: str | None = measured(
        "How a sampled run's accuracies were computed (`--accuracy-method`): `full-neighbour` (layer-wise "
        "full-neighbour inference after sampled training) or `fixed-fanout` (every node in mini-batches sampled "
        "with the training fanouts); see Note [sampled evaluation] in gnnbench/run/sampled.py. Null for "
        "full-graph runs (one full-graph pass) and for rows before schema 5, all of them full-graph.")
    # added in schema 6 (Note [machine state] in gnnbench/run/machine_state.py)
    machine_state: MachineState | None = measured(
        "Object: the machine while the timed epochs ran, so an unsteady figure can be traced to its cause; "
        "null for rows before schema 6 and for runs that did not finish. Keys (each may be null): "
        + _keys_text(MachineState) + ". See Note [machine state] in gnnbench/run/machine_state.py.")

    def to_row(self) -> dict[str, Any]:
        """The stored dict: every column (``id`` only once assigned), ``extra`` as its JSON object or null."""
        row: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "id" and value is None:
                continue
            if f.name == "extra":
                value = (value.as_dict() or None) if value is not None else None
            row[f.name] = _plain(value)
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "RunResult":
        """The result a stored dict (``ResultsStore.rows()``, :meth:`to_row`) holds.

        Raises:
            ValueError: a key that is no column.
        """
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(row) - set(names))
        if unknown:
            raise ValueError(f"unknown run field(s) {unknown}; valid fields are {names}")
        values = {k: v for k, v in row.items()}
        if "extra" in values:
            values["extra"] = Extra.from_dict(values["extra"])
        if values.get("machine_state") is not None:
            values["machine_state"] = MachineState.from_dict(values["machine_state"])
        return cls(**values)

    def phase(self, name: str):
        """The :class:`~gnnbench.core.measurement.Measurement` of timed phase ``name`` (empty when not timed).

        Raises:
            KeyError: ``name`` is no timed phase (Note [phases by name]).
        """
        from gnnbench.core.measurement import Measurement

        return Measurement(tuple(getattr(self, phase(name).samples) or ()))


def _meta(name: str) -> Mapping[str, Any]:
    return next(f.metadata for f in fields(RunResult) if f.name == name)


def _with_role(role: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(RunResult) if role in f.metadata["roles"])


#: The ``runs`` table's columns, in table order (the store's ``RUN_FIELDS``).
RUN_COLUMNS: tuple[Field, ...] = tuple(Field(f.name, sql_type(f.type), f.metadata["description"],
                                             f.type.removesuffix(" | None") if sql_type(f.type) == "JSON" else "")
                                       for f in fields(RunResult))
IDENTITY_FIELDS: tuple[str, ...] = _with_role(IDENTITY)
PROVENANCE_FIELDS: tuple[str, ...] = _with_role(PROVENANCE)
COMPARABLE_FIELDS: tuple[str, ...] = tuple(sorted((f.name for f in fields(RunResult)
                                                   if f.metadata["comparable"] is not None),
                                                  key=lambda n: _meta(n)["comparable"]))


# ---------------------------------------------------------------- JSON columns checked when read

_EXPECTED = {"float": "a number", "int": "an integer", "string": "text", "bool": "true or false", "dict": "an object",
             "list": "a list"}


def json_problem(column: str, value: Any) -> str | None:
    """Why ``value``, the decoded JSON of ``column``, is not what the column declares, nested keys included
    (Note [JSON columns checked when read]); None when it is.

    Example: ``json_problem("extra", {"time_to_accuracy": {..., "seconds": "abc"}})`` is
    ``"time_to_accuracy.seconds holds 'abc', not a number"``.
    """
    if value is None:
        return None
    hint = _without_none(_column_hints()[column])
    if hint is Extra:
        return _extra_problem(value)
    return _problem(value, hint, "")


@functools.cache
def _column_hints() -> dict[str, Any]:
    return typing.get_type_hints(RunResult)


@functools.cache
def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _extra_problem(data: Any) -> str | None:
    if not isinstance(data, Mapping):
        return None  # the store's top-level check names it
    hints = _hints(Extra)
    for f in fields(Extra):
        if f.name in ("tuning", "other") or f.name not in data:
            continue
        problem = _problem(data[f.name], hints[f.name], f.name)
        if problem:
            return problem
    after = data.get("tuned_after_timed_epoch")
    return None if after is None or isinstance(after, bool) else \
        f"tuned_after_timed_epoch holds {_shown(after)}, not true or false"


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
    return hint


def _problem(value: Any, hint: Any, where: str) -> str | None:
    """The first place inside ``value`` that is not of type ``hint`` (records: when they have exactly their keys,
    as :func:`_record` builds them; other shapes are kept as they came, and read as such)."""
    if value is None:
        return None  # every declared key may be null
    hint = _without_none(hint)
    if is_dataclass(hint):
        if isinstance(value, Mapping) and set(value) == {f.name for f in fields(hint)}:
            hints = _hints(hint)
            for f in fields(hint):
                problem = _problem(value[f.name], hints[f.name], f"{where}.{f.name}".lstrip("."))
                if problem:
                    return problem
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if args and _holds_record(hint):  # records inside containers are checked as records, at any depth
        if origin in (dict, Mapping):
            if not isinstance(value, Mapping):
                return f"{where} holds {_shown(value)}, not an object"
            items = [(f"{where}.{key}", item, args[1]) for key, item in value.items()]
        else:  # list[X] or tuple[X, ...]
            if not isinstance(value, (list, tuple)):
                return f"{where} holds {_shown(value)}, not a list"
            items = [(f"{where}[{index}]", item, args[0]) for index, item in enumerate(value)]
        for place, item, item_hint in items:
            problem = _problem(item, item_hint, place.lstrip("."))
            if problem:
                return problem
        return None
    from pydantic import TypeAdapter, ValidationError

    try:
        _adapter(hint).validate_python(value, strict=True)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        path = path.lstrip(".")
        expected = _EXPECTED.get(first["type"].split("_")[0], first["msg"].removeprefix("Input should be "))
        return f"{path or 'the value'} holds {_shown(first['input'])}, not {expected}"
    return None


def _holds_record(hint: Any) -> bool:
    """Whether a dataclass record stands anywhere inside the type ``hint``."""
    hint = _without_none(hint)
    return is_dataclass(hint) or any(_holds_record(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)


@functools.cache
def _adapter(hint: Any):
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _shown(value: Any) -> str:
    from gnnbench.text import printable

    text = repr(value)
    return printable(text if len(text) <= 40 else text[:37] + "...")
