"""The run configuration: one :class:`RunConfig`, validated once, from which every surface derives.

``gnnbench run`` flags, ``gnnbench sweep`` flags, campaign-file keys and the
worker's input are all this one pydantic dataclass. Each field carries its
own help text, flag name, campaign key and (for sweeps) list key in its
metadata (:func:`_field`), so adding a setting is a one-place change: add a
field here (and read it where it is used).

Note [one run configuration]
    Values arrive as text (flags), TOML values (campaigns) or JSON (the
    worker); pydantic converts and checks them the same way each time:
    ranges, finiteness (``--lr nan`` is refused), choices, ASCII-only
    numbers, and the dataset name made canonical by the dataset registry.
    A failure becomes one :class:`~gnnbench.errors.UserError` line naming
    the flag (``--lr``) or the campaign key (``'lr'``) and the value given
    (:func:`make_config`). Checks that need the machine (system installed,
    raw data present, allocator found, system options) are
    :func:`gnnbench.run.preflight.check`'s, still before any worker starts.

Note [identity fields]
    Fields with ``identity=False`` in their metadata (``timeout``,
    ``memory_limit``) are limits of a run, not what it measures: they are
    passed to the worker but are not part of a row's provenance.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass

from gnnbench.errors import UserError

__all__ = ["RunConfig", "SELECTIONS", "MODES", "DTYPES", "INDEX_DTYPES", "BATCHINGS", "ACCURACY_METHODS", "SAMPLED_ONLY", "make_config", "config_fields", "ConfigField",
           "check_fields", "parse_memory", "parse_options", "parse_relation_fanouts", "parse_widths", "add_config_flags",
           "config_values_from_flags", "MAX_WIDTH"]

SELECTIONS = ("best_val", "last")
MODES = ("train", "inference")  # Note [inference mode] in gnnbench.run.harness
DTYPES = ("float32", "float64")
INDEX_DTYPES = ("int32", "int64")
BATCHINGS = ("full", "sampled")  # Note [sampled batching] in gnnbench.run.sampled
ACCURACY_METHODS = ("full-neighbour", "fixed-fanout")  # Note [sampled evaluation] in gnnbench.run.sampled
#: the fields only a sampled run reads: a full-graph run's identity and description leave them out
SAMPLED_ONLY = ("fanouts", "relation_fanouts", "batch_size", "sampler", "accuracy_method")
_MAX_SEED = 2**32 - 1  # NumPy's SeedSequence takes 32-bit words
#: the widest feature width a run (``--hidden``) or a tuning (``tune --widths``) takes: 2^16, past any GNN layer
#: published, and already 256 KiB a row in float32
MAX_WIDTH = 65536


def _models() -> tuple[str, ...]:
    from gnnbench.models import MODELS

    return tuple(MODELS)


def _frameworks() -> tuple[str, ...]:
    from gnnbench.frameworks import FRAMEWORKS

    return tuple(FRAMEWORKS)


def _samplers() -> tuple[str, ...]:
    from gnnbench.sampling import SAMPLERS

    return tuple(SAMPLERS)


def _allocators() -> tuple[str, ...]:
    from gnnbench.run.allocator import ALLOCATORS

    return tuple(ALLOCATORS)


def _field(default: Any = dataclasses.MISSING, *, help: str, flag: str | None = None, short: str | None = None,
           choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None, metavar: str | None = None,
           key: str | None = None, sweep: str | None = None, identity: bool = True,
           sweep_default: Any = None, **constraints: Any) -> Any:
    """A config field with its command-line and campaign metadata.

    Args:
        help: one line for ``--help`` (the default is appended).
        flag: the long flag (default: ``--`` + name with ``-`` for ``_``); ``short`` e.g. ``-o``.
        choices: allowed values, or a function returning them (for registries).
        key: the campaign-file key (default: the field name).
        sweep: the plural campaign key / sweep flag taking a list (``systems``), if sweepable.
        identity: False for run limits that are not part of provenance (Note [identity fields]).
        sweep_default: the default inside sweeps when it differs from ``run``'s.
    """
    extra = {"help": help, "flag": flag, "short": short, "choices": choices, "metavar": metavar, "key": key,
             "sweep": sweep, "identity": identity, "sweep_default": sweep_default}
    if default is dataclasses.MISSING:
        return Field(json_schema_extra={"gnnbench": extra}, **constraints)
    return Field(default, json_schema_extra={"gnnbench": extra}, **constraints)


@dataclass(frozen=True, config=ConfigDict(extra="forbid", validate_default=False))
class RunConfig:
    """Everything that identifies one run, plus its limits (``None`` fields take the model's defaults).

    Positional order (system, model, dataset, ...) is kept for callers that
    build one directly: ``RunConfig("reference", "gcn", "karate", epochs=4)``.
    """

    system: str = _field(help="kernel system or native baseline (see `gnnbench systems`)", sweep="systems",
                         min_length=1, max_length=200)
    model: str = _field(help="model to train", choices=_models, sweep="models")
    dataset: str = _field("sbm", help="dataset name, e.g. karate or sbm:nodes=2000 (see `gnnbench datasets`)",
                          sweep="datasets", min_length=1, max_length=1000)
    framework: str = _field("torch", help="framework that runs the model", choices=_frameworks, sweep="frameworks")
    device: str = _field("cpu", help="device: cpu, cuda or cuda:N", pattern=r"^(cpu|cuda(:[0-9]{1,3})?)$")
    data_dir: str | None = _field(None, help="folder of raw dataset files (Planetoid, OGB, Reddit, IGBH)", metavar="DIR",
                                  max_length=4096)
    epochs: int | None = _field(None, help="training epochs, warm-ups included (default: the model's)",
                                gt=0, le=1_000_000)
    warmup: int = _field(5, help="untimed first epochs", ge=0, le=1_000_000)
    hidden: int | None = _field(None, help="hidden width (default: the model's)", gt=0, le=MAX_WIDTH)
    heads: int | None = _field(None, help="attention heads for GAT (default: the model's)", gt=0, le=1024)
    layers: int | None = _field(None, help="the model's layers (convolutions) (default: the model's; rgat's is "
                                "MLPerf's 3)", gt=0, le=64)
    normalisation: str | None = _field(None, help="GCN's normalisation: node (D^-1/2 scales around an unweighted "
                                       "spmm) or edge (per-edge weights) (default: the model's, node; Note [GCN as "
                                       "node scales])", choices=("node", "edge"), sweep="normalisations")
    bases: int | None = _field(None, help="R-GCN's basis decomposition: the number of bases shared by the "
                               "relations' weights (default: none, one weight per relation)", gt=0, le=65536)
    lr: float | None = _field(None, help="learning rate, a finite number > 0 (default: the model's)", gt=0,
                              allow_inf_nan=False)
    seed: int = _field(0, help="random seed", sweep="seeds", ge=0, le=_MAX_SEED)
    threads: int | None = _field(None, help="threads for the framework and kernels, at most the CPUs this process may run "
                                 "on (default: one per --cpus CPU when pinned, else the libraries' own)", gt=0, le=4096)
    cpus: str | None = _field(None, help="pin the run's process to these CPUs, a list as taskset -c takes it: 1, 0-3 "
                              "or 0,2 (default: not pinned; Note [pinned runs])", metavar="LIST", min_length=1,
                              max_length=200)
    dtype: str = _field("float32", help="floating-point type", choices=DTYPES)
    index_dtype: str = _field("int64", help="graph index type", choices=INDEX_DTYPES)
    selection: str = _field("best_val", help="report accuracy at the best-validation epoch or the last one",
                            choices=SELECTIONS)
    system_options: tuple[tuple[str, str], ...] = _field(
        (), help="system option KEY=VALUE, passed to its configure hook (repeatable)", flag="--option",
        short="-o", metavar="KEY=VALUE", key="options")
    allocator: str = _field("auto", help="memory allocator of the run's process: auto (tcmalloc, else jemalloc, if "
                            "installed; else the C library's), system, tcmalloc, jemalloc or jemalloc-thp "
                            "(jemalloc on transparent huge pages)", choices=_allocators)
    mode: str = _field("train", help="train: epochs with backward and optimizer; inference: timed forward passes "
                       "without autograd (Note [inference mode])", choices=MODES, sweep="modes")
    tune: bool = _field(True, help="do not tune on first use: measure what the tuning cache holds, the default "
                        "variant when it is empty (default: tune on first use, Note [tune on first use])",
                        flag="--no-tune")
    check: bool = _field(True, help="do not check the first forward of every operator against reference on sampled "
                         "rows of the run's graph before the epochs (default: check, Note [run-time check])",
                         flag="--no-check", identity=False)
    fallback: str | None = _field(None, help="borrow the operators the system lacks from SYSTEM, e.g. reference (the "
                                  "row records which, and their share of kernel time)", metavar="SYSTEM",
                                  min_length=1, max_length=200)
    batching: str = _field("full", help="full: one pass over the whole graph per epoch; sampled: mini-batches of "
                           "seed nodes over sampled neighbourhoods (Note [sampled batching])", choices=BATCHINGS,
                           sweep="batchings")
    fanouts: tuple[int, ...] = _field((25, 10), help="neighbours sampled per layer, outermost first, -1 for all, "
                                      "in every relation of a typed graph (--batching sampled) (default: 25,10)",
                                      metavar="F,F", sweep="fanout_sets")
    relation_fanouts: tuple[tuple[str, tuple[int, ...]], ...] = _field(
        (), help="one relation's fanouts in place of --fanouts, as MLPerf's sampler takes a fanout per edge type: "
        "RELATION=F,F, the relation named as `gnnbench datasets` lists it (cites or paper-cites->paper) (repeatable; "
        "--batching sampled on a typed graph; Note [fan-out per relation])", flag="--relation-fanout",
        metavar="RELATION=F,F")
    batch_size: int = _field(1024, help="seed nodes per mini-batch (--batching sampled)", sweep="batch_sizes",
                             gt=0, le=1 << 31)
    sampler: str = _field("gnnbench", help="the neighbour sampler of --batching sampled: gnnbench's own, PyG's or "
                          "DGL's", choices=_samplers, sweep="samplers")
    accuracy_method: str = _field("full-neighbour", help="how --batching sampled scores the trained model: "
                                  "full-neighbour (every node over all its neighbours) or fixed-fanout (every node "
                                  "in mini-batches sampled with --fanouts, as in training; Note [sampled "
                                  "evaluation])", choices=ACCURACY_METHODS, sweep="accuracy_methods")
    timeout: float | None = _field(None, help="seconds before a run is stopped, > 0, or 'none'", metavar="S",
                                   identity=False, sweep_default=1800.0, gt=0, allow_inf_nan=False)
    memory_limit: int | None = _field(None, help="address-space limit of the run's process, e.g. 4G, or 'none'",
                                      metavar="SIZE", identity=False, gt=0)
    target_accuracy: float | None = _field(
        None, help="train until validation accuracy reaches A, 0 < A <= 1, and store the time to it (Note [time to "
        "accuracy]); --max-epochs bounds the run", metavar="A", gt=0, le=1, allow_inf_nan=False,
        sweep="target_accuracies")
    max_epochs: int | None = _field(None, help="with --target-accuracy: the most epochs to train, warm-ups included "
                                    "(default: --epochs, else the model's)", gt=0, le=1_000_000)
    eval_every: float | None = _field(None, help="with --target-accuracy: epochs between evaluations of the "
                                      "validation accuracy, a whole number for full-graph runs, a fraction of an "
                                      "epoch allowed for sampled ones (default: 1)", metavar="EPOCHS", gt=0,
                                      le=1_000_000, allow_inf_nan=False)
    profile: bool = _field(False, help="after the timed epochs, profile a few more and store where each goes: the top "
                           "operators by self CPU time per phase, the system's kernels named (Note [profiled epochs] "
                           "in gnnbench/run/profile.py; the timed figures are not profiled)", identity=False)

    # ---- conversions and checks pydantic's constraints cannot express

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value: Any, info) -> Any:
        if isinstance(value, bool) and info.field_name not in ("system_options", "tune", "check", "profile"):
            raise ValueError(f"must not be true/false (got {value})")
        if isinstance(value, str) and info.field_name in _NUMERIC and not value.isascii():
            raise ValueError(f"must be written with ASCII digits (got {value!r})")
        return value

    @field_validator("fanouts", mode="before")
    @classmethod
    def _fanout_text(cls, value: Any) -> Any:
        from gnnbench.sampling.neighbor import check_fanouts

        if isinstance(value, str):
            numbers = _integers(value)
            if numbers is None:
                raise ValueError(f"must be integers separated by commas, e.g. 25,10 (got {value!r})")
            value = numbers
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"must be a list of integers, e.g. 25,10 (got {value!r})")
        return check_fanouts(value)

    @field_validator("relation_fanouts", mode="before")
    @classmethod
    def _relation_fanout_text(cls, value: Any) -> Any:
        return parse_relation_fanouts(value)

    @field_validator("model", "framework", "dtype", "index_dtype", "selection", "allocator", "mode", "normalisation",
                     "batching", "sampler", "accuracy_method")
    @classmethod
    def _one_of_the_choices(cls, value: str, info) -> str:
        choices = config_fields()[info.field_name].choices
        if value is None and not config_fields()[info.field_name].required:  # None: the model's default
            return value
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)} (got {value!r})")
        return value

    @field_validator("dataset")
    @classmethod
    def _canonical_dataset(cls, value: str) -> str:
        from gnnbench.datasets.registry import canonical_name

        # names and parameters only; files and memory need the machine (gnnbench.run.preflight)
        return canonical_name(value)  # a UserError names the dataset parameter

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_text(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip().lower() in ("none", "off") else value

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _memory_text(cls, value: Any) -> Any:
        try:
            return parse_memory(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else value
        except UserError as err:
            raise ValueError(str(err).replace("memory limit ", "")) from None

    @field_validator("system_options", mode="before")
    @classmethod
    def _options(cls, value: Any) -> Any:
        return parse_options(value)

    @field_validator("cpus")
    @classmethod
    def _cpu_list(cls, value: str | None) -> str | None:
        from gnnbench.run.pinning import canonical_cpus

        return None if value is None else canonical_cpus(value)

    @model_validator(mode="after")
    def _profile_of_a_full_graph_torch_run(self) -> "RunConfig":
        """Note [profiled epochs]: only full-graph PyTorch runs can be profiled; say why before anything runs."""
        if self.profile and self.framework != "torch":
            raise ValueError(f"--profile reads torch.profiler's per-operator self times; {self.framework}'s "
                             "profiler writes a trace for TensorBoard instead: use --framework torch or drop --profile")
        if self.profile and self.batching != "full":
            raise ValueError("--profile profiles full-graph epochs; drop --profile or use --batching full")
        return self

    @model_validator(mode="after")
    def _threads_of_pinned_run(self) -> "RunConfig":
        """Note [pinned runs]: a pinned run's threads default to its CPUs, and never exceed them."""
        if self.cpus is None:
            return self
        from gnnbench.run.machine_state import parse_cpulist

        pinned = len(parse_cpulist(self.cpus))
        if self.threads is None:
            object.__setattr__(self, "threads", pinned)  # frozen: this is its construction
        elif self.threads > pinned:
            raise ValueError(f"--threads {self.threads} with --cpus {self.cpus}: {self.threads} threads on {pinned} "
                             f"CPU{'s' if pinned > 1 else ''} would only take turns; pin as many CPUs as threads")
        return self

    # ---- the older RunConfig interface

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunConfig":
        return cls(**data)

    def replace(self, **changes: Any) -> "RunConfig":
        return dataclasses.replace(self, **changes)


_NUMERIC = ("epochs", "warmup", "hidden", "heads", "layers", "lr", "seed", "threads", "timeout", "batch_size",
            "target_accuracy", "max_epochs", "eval_every")


@dataclasses.dataclass(frozen=True)
class ConfigField:
    """One :class:`RunConfig` field as the CLI and campaigns see it."""

    name: str
    default: Any
    required: bool
    help: str
    flag: str
    short: str | None
    choices: tuple[str, ...] | None
    metavar: str | None
    key: str
    sweep: str | None
    identity: bool
    sweep_default: Any

    def campaign_default(self) -> Any:
        return self.sweep_default if self.sweep_default is not None else self.default


_FIELDS: dict[str, ConfigField] | None = None


def config_fields() -> dict[str, ConfigField]:
    """Field name -> :class:`ConfigField`, in declaration order."""
    global _FIELDS
    if _FIELDS is None:
        out = {}
        for name, info in RunConfig.__pydantic_fields__.items():
            meta = dict(info.json_schema_extra["gnnbench"])
            choices = meta["choices"]
            out[name] = ConfigField(
                name=name, default=None if info.is_required() else info.default, required=info.is_required(),
                help=meta["help"], flag=meta["flag"] or "--" + name.replace("_", "-"), short=meta["short"],
                choices=tuple(choices()) if callable(choices) else choices, metavar=meta["metavar"],
                key=meta["key"] or name, sweep=meta["sweep"], identity=meta["identity"],
                sweep_default=meta["sweep_default"])
        _FIELDS = out
    return _FIELDS


def make_config(values: Mapping[str, Any], name_of: Callable[[str], str] | None = None) -> RunConfig:
    """A validated :class:`RunConfig` from field values (Note [one run configuration]).

    Args:
        values: field name -> value (text, TOML or JSON values).
        name_of: how the user wrote a field (``--lr`` or ``campaign.toml: 'lr'``); default the flag.

    Raises:
        UserError: one line naming the first bad field and the value given.
    """
    name_of = name_of or (lambda field: config_fields()[field].flag)
    try:
        return RunConfig(**values)
    except ValidationError as err:
        raise UserError(_one_line(err, values, name_of)) from None


def _one_line(err: ValidationError, values: Mapping[str, Any], name_of: Callable[[str], str]) -> str:
    first = err.errors(include_url=False)[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    fields = config_fields()
    if first["type"] == "missing_argument" or first["type"] == "missing":
        return f"{name_of(field)} is required"
    if first["type"] == "unexpected_keyword_argument":
        return f"unknown setting '{field}'; allowed: {', '.join(f.key for f in fields.values())}"
    message = re.sub(r"^(Value error, |Assertion failed, )", "", first["msg"])
    if not first["loc"]:  # a check of several fields together: its message names them
        return message
    message = re.sub(r"^(Input|String|Value) should (be|have|match)", r"must \2", message)
    message = message.replace("a valid integer, unable to parse string as an integer", "an integer")
    message = message.replace("a valid number, unable to parse string as a number", "a number")
    if field in fields and fields[field].choices and "must be one of" not in message:
        message = f"must be one of {', '.join(fields[field].choices)}"
    given = values.get(field, first.get("input"))
    shown = given if isinstance(given, str) else repr(given)
    if "(got " in message:
        return f"{name_of(field)} {message}"
    return f"{name_of(field)} {message} (got {shown!r})" if isinstance(given, str) else \
        f"{name_of(field)} {message} (got {shown})"


def check_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """Some :class:`RunConfig` fields checked on their own, as ``run`` checks them (``verify``'s ``--framework``,
    ``--device`` and ``--threads`` are a run's): field name -> the value as a run would hold it.

    Raises:
        UserError: one line naming the first bad flag and the value given.
    """
    config = make_config({"system": "reference", "model": _models()[0], **values})
    return {name: getattr(config, name) for name in values}


# ---------------------------------------------------------------- value parsers

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_memory(text: str | int | None) -> int | None:
    """``"4G"`` -> 4 GiB in bytes. Units K, M, G, T are binary (``4G`` = ``4GiB`` = ``4GB``);
    a bare number is bytes; ``None``, ``""``, ``"none"`` and 0 mean no limit."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text > 0 else None
    if text is None or str(text).strip().lower() in ("", "none", "0"):
        return None
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*", str(text).upper())
    if not match:
        raise UserError(f"memory limit must look like 4G, 512M, a byte count or none (got {text!r})")
    value = float(match.group(1)) * _UNITS[match.group(2)]
    if not math.isfinite(value) or value >= 1 << 62:
        raise UserError(f"memory limit {text!r} is beyond any machine; give e.g. 4G")
    return int(value)


def parse_widths(text: str, flag: str = "--widths") -> tuple[int, ...]:
    """``"16,32"`` -> ``(16, 32)``: feature widths in ``[1, MAX_WIDTH]``, as ``--hidden`` takes them.

    Raises:
        UserError: one line naming ``flag`` and the value given.
    """
    pieces = [p.strip() for p in str(text).split(",")]
    if not all(p.isascii() and p.isdigit() for p in pieces):
        raise UserError(f"{flag} expects integers separated by commas (got {text!r})")
    widths = tuple(int(p) for p in pieces)
    wrong = [w for w in widths if not 1 <= w <= MAX_WIDTH]
    if wrong:
        raise UserError(f"{flag} {wrong[0]} is outside [1, {MAX_WIDTH}], the widths a run's --hidden takes")
    return widths


def _integers(text: str) -> list[int] | None:
    """``"5,-1"`` -> ``[5, -1]``: ASCII integers separated by commas (fanouts as text); None if any piece is not."""
    pieces = [p.strip() for p in text.split(",")]
    return [int(p) for p in pieces] if all(p.isascii() and re.fullmatch(r"-?[0-9]+", p) for p in pieces) else None


def parse_relation_fanouts(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Per-relation fanouts from ``["cites=5,5", ...]``, ``{"cites": [5, 5]}`` or ``[("cites", (5, 5)), ...]``: each
    relation once, its fanouts as ``--fanouts`` takes them. Whether the relation exists is the dataset's to say
    (:func:`gnnbench.sampling.hetero.fanouts_per_relation`)."""
    from gnnbench.sampling.neighbor import check_fanouts

    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else [value] if isinstance(value, str) else value
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        if isinstance(item, str):
            name, sep, text = item.partition("=")
            if not sep or not text.strip():
                raise ValueError(f"expects RELATION=F,F, e.g. cites=5,10 (got {item!r})")
            fanouts: Any = _integers(text)
            if fanouts is None:
                raise ValueError(f"expects integers separated by commas after '{name.strip()}=' (got {item!r})")
        else:
            name, fanouts = item
        name = str(name).strip()
        if not name or not name.isprintable() or len(name) > 200:
            raise ValueError(f"expects a relation's name before '=' (got {name!r})")
        if name in out:
            raise ValueError(f"gives relation '{name}' twice")
        out[name] = check_fanouts(fanouts if isinstance(fanouts, (list, tuple)) else [fanouts])
    return tuple(out.items())


def parse_options(value: Any) -> tuple[tuple[str, str], ...]:
    """System options from ``["k=v", ...]``, ``{"k": v}`` or ``[("k", "v"), ...]``; keys are identifiers."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, str):
        items = [items]
    out: dict[str, str] = {}
    for item in items:
        if isinstance(item, str):
            key, sep, text = item.partition("=")
            if not sep:
                raise ValueError(f"expects KEY=VALUE (got {item!r})")
        else:
            key, text = item
        if isinstance(text, bool):
            text = "true" if text else "false"
        if not isinstance(key, str) or not key.isidentifier() or not key.isascii():
            raise ValueError(f"expects KEY=VALUE with KEY a name of letters, digits and _ (got {key!r})")
        if not isinstance(text, (str, int, float)):
            raise ValueError(f"value of '{key}' must be text or a number (got {text!r})")
        if key in out:
            raise ValueError(f"gives '{key}' twice")
        out[key] = str(text)
    return tuple(out.items())


# ---------------------------------------------------------------- command-line flags

def add_config_flags(parser, *, sweep: bool = False) -> None:
    """Add one flag per :class:`RunConfig` field (Note [one run configuration]).

    Flags take text and leave the value unset when absent, so that the field's
    default (one place) applies. With ``sweep=True`` sweepable fields become
    comma lists under their plural name (``--systems a,b``) and nothing is required.
    """
    for f in config_fields().values():
        default = f.campaign_default() if sweep else f.default
        shown = "none" if default is None else default
        help_text = f.help + ("" if f.required or "(default" in f.help or default == () else f" (default: {shown})")
        kwargs: dict[str, Any] = {"default": None, "help": help_text.replace("%", "%%")}
        if not f.choices:
            kwargs["metavar"] = f.metavar or f.name.upper()
        names = [f.flag] + ([f.short] if f.short else [])
        if sweep and f.sweep:
            names = ["--" + f.sweep.replace("_", "-")]  # --fanout-sets, as every other flag is spelt
            kwargs.update(action="append", metavar="A,B", help=f"{f.sweep} (comma list; repeatable): "
                          + kwargs["help"])
        elif f.default == ():  # repeatable: -o K=V, --relation-fanout R=F,F
            kwargs["action"] = "append"
        elif isinstance(f.default, bool):  # a switch: its flag (--no-tune) sets the opposite of the default
            kwargs.update(action="store_const", const=not f.default)
            kwargs.pop("metavar", None)
        else:
            if f.choices:
                kwargs["choices"] = f.choices
            if f.required and not sweep:
                kwargs["required"] = True
        kwargs["dest"] = "cfg_" + f.name
        parser.add_argument(*names, **kwargs)


def config_values_from_flags(args) -> dict[str, Any]:
    """The :class:`RunConfig` values given on the command line (field name -> raw value)."""
    return {name: getattr(args, "cfg_" + name) for name in config_fields()
            if getattr(args, "cfg_" + name, None) is not None}
