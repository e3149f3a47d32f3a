"""Dataset names: ``cora``, ``reddit``, ``sbm:nodes=2000,seed=1``, ``rmat:like=reddit`` ... and how to load them.

A name is ``kind`` or ``kind:key=value,key=value``. Omitted parameters take
their defaults, and the canonical name lists every parameter sorted by key, so
``sbm`` and ``sbm:seed=0`` both become
``sbm:classes=4,degree=12,features=32,nodes=2500,p_in=0.8,seed=0``: one name,
one dataset, one cache folder. ``Dataset.name`` is always the canonical name.

:func:`validate` is the one check a command runs before any worker starts:
the name, the parameters' consistency, the raw files and the memory a
generator or converter needs.

Note [rmat presets]
    ``rmat:like=NAME`` takes ``nodes``, ``edges``, ``features`` and ``classes``
    from the published sizes of real dataset ``NAME``
    (:data:`~.sources.SOURCES`), so a machine without the data measures at
    the same scale: ``rmat:like=reddit`` is 232,965 nodes, 114,615,892
    directed edges, 602 features, 41 classes. ``scale=S`` multiplies nodes and
    edges by ``S`` (edges rounded to even), for machines too small for the
    full size. Parameters given explicitly win over the preset. ``like`` and
    ``scale`` are resolved away: the canonical name lists the numbers.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gnnbench.errors import UserError

from . import hetero as typed
from . import synthetic
from .cache import Converted, cache_path, load_cached, read_manifest, store_cached
from .dataset import Dataset, DatasetInfo, check_index_dtype
from .karate import load_karate
from .planetoid import PLANETOID_NAMES, load_planetoid
from .sources import SOURCES, data_root, find_raw_folder

__all__ = ["Param", "load_dataset", "list_datasets", "canonical_name", "parse_name", "validate",
           "memory_estimate", "typed_schema", "typed_listing"]


@dataclass(frozen=True)
class Param:
    """A generator parameter: its type, default and allowed range (inclusive)."""

    type: type
    default: Any
    low: float | None = None
    high: float | None = None

    def parse(self, kind: str, key: str, text: str) -> Any:
        value = None
        if text.isascii():  # int("２５００") is 2500: only ASCII digits are accepted
            try:
                value = self.type(text)
            except ValueError:
                pass
        too_low = value is not None and self.low is not None and value < self.low
        too_high = value is not None and self.high is not None and value > self.high
        if value is None or value != value or too_low or too_high:  # value != value: NaN
            raise UserError(f"parameter '{key}' of dataset '{kind}' must be {self.describe()} (got '{text}')")
        return value

    def describe(self) -> str:
        what = "an integer" if self.type is int else "a number"
        if self.low is not None and self.high is not None:
            return f"{what} in [{self.low}, {self.high}]"
        return f"{what} >= {self.low}" if self.low is not None else what

    @staticmethod
    def format(value: Any) -> str:
        return repr(float(value)) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class _Family:
    kind: str
    description: str
    params: dict[str, Param]
    build: Callable[..., Dataset | Converted]  # (canonical name, data_dir, index_dtype, **params)
    needs_data_dir: bool = False
    cache_version: int | None = None  # None: not cached (cheap to load)
    #: a typed dataset's (feature widths, relations, target, classes) from its name and files alone:
    #: (data_dir, **params) -> tuple; None for a homogeneous dataset
    schema: Callable[..., tuple] | None = None
    #: (data_dir, **params) -> its folder, naming the first missing file of its layout (typed real datasets)
    find: Callable[..., Any] | None = None
    #: (data_dir) -> each typed dataset it names, with node types and relations, for `gnnbench datasets`
    listing: Callable[..., list] | None = None


# node pairs are encoded as dst * N + src in int64 (symmetric_graph), so N^2 must fit
_MAX_NODES = 2**31 - 1
#: sbm needs this many nodes per class, so that every class has training, validation and test nodes
SBM_MIN_NODES_PER_CLASS = 10
#: Bytes per directed edge at the generator's peak (measured: R-MAT keeps samples, keys and their
#: sorted copy; the CSR and the cache writer add the transpose ids) and per feature entry.
_BYTES_PER_EDGE = {"rmat": 48, "sbm": 48, "convert": 24}
_BYTES_PER_FEATURE = 8


def _planetoid(kind: str) -> Callable[..., Dataset]:
    return lambda name, data_dir, index_dtype: load_planetoid(kind, data_dir, index_dtype)


def _ogb(kind: str) -> Callable[..., Converted]:
    def build(name: str, data_dir: Any, index_dtype: Any) -> Converted:
        from .ogb import load_ogb

        return load_ogb(kind, data_dir)
    return build


def _amazon(kind: str) -> Callable[..., Converted]:
    def build(name: str, data_dir: Any, index_dtype: Any) -> Converted:
        from .amazon import load_amazon

        return load_amazon(kind, data_dir)
    return build


def _reddit(name: str, data_dir: Any, index_dtype: Any) -> Converted:
    from .reddit import load_reddit

    return load_reddit(data_dir)


def _lazy(module: str, function: str) -> Callable[..., Any]:
    """``module.function``, imported on first call: a typed real dataset's loader imports pandas or OGB, which
    listing the dataset names must not pay for."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(f".{module}", __package__), function)(*args, **kwargs)
    return call


def _real_description(kind: str) -> str:
    s = SOURCES[kind]
    what = f"{s.classes} binary tasks" if s.task == "multilabel" else f"{s.classes} classes"
    return f"{s.nodes:,} nodes, {s.edges:,} edges, {s.features} features, {what}; split: {s.split}"


def _versions() -> dict[str, int]:
    from . import amazon, ogb, reddit

    return {"ogb": ogb.VERSION, "reddit": reddit.VERSION, "amazon": amazon.VERSION}


_V = _versions()

_FAMILIES: dict[str, _Family] = {f.kind: f for f in (
    *(_Family(k, _real_description(k), {}, _planetoid(k), needs_data_dir=True) for k in PLANETOID_NAMES),
    *(_Family(k, _real_description(k), {}, _ogb(k), True, _V["ogb"])
      for k in ("ogbn-arxiv", "ogbn-products", "ogbn-proteins")),
    _Family("reddit", _real_description("reddit"), {}, _reddit, True, _V["reddit"]),
    *(_Family(k, _real_description(k), {}, _amazon(k), True, _V["amazon"])
      for k in ("amazon-computers", "amazon-photo")),
    _Family("karate", "Zachary's karate club (34 nodes, one-hot features, 2 classes)",
            {}, lambda name, data_dir, index_dtype: load_karate()),
    _Family("sbm", "stochastic block model with class-correlated Gaussian features, 20/class train, 500 val, "
            "1000 test",
            {"nodes": Param(int, 2500, 2, _MAX_NODES), "classes": Param(int, 4, 2), "features": Param(int, 32, 1),
             "degree": Param(int, 12, 1), "p_in": Param(float, 0.8, 0.0, 1.0), "seed": Param(int, 0, 0)},
            lambda name, data_dir, index_dtype, **p: synthetic.sbm(name, **p),
            cache_version=synthetic.SBM_VERSION),
    _Family("rmat", "power-law R-MAT graph (a=0.57, b=0.19, c=0.19), exactly `edges` directed edges, "
            "random features, 60/20/20 split; like=NAME[,scale=S] takes a real dataset's sizes",
            {"nodes": Param(int, 131072, 2, _MAX_NODES), "edges": Param(int, 4000000, 2),
             "features": Param(int, 128, 1), "classes": Param(int, 8, 2), "seed": Param(int, 0, 0)},
            lambda name, data_dir, index_dtype, **p: synthetic.rmat(name, **p),
            cache_version=synthetic.RMAT_VERSION),
    _Family("hetero", "typed graph with planted classes on its target type; like=igbh|mag|aifb takes IGBH's, "
            "ogbn-mag's or AIFB's types and relations, scale=S their sizes (Note [hetero presets])",
            {"like": Param(str, "igbh"), "scale": Param(float, 0.0, 0.0, 1.0), "features": Param(int, 0, 0),
             "other_features": Param(int, 0, 0), "classes": Param(int, 0, 0), "seed": Param(int, 0, 0)},
            lambda name, data_dir, index_dtype, **p: typed.hetero(name, index_dtype=index_dtype, **p),
            schema=lambda data_dir, **p: typed.schema(p), listing=lambda data_dir: typed.presets()),
    _Family("ogbn-mag", "typed: 736,389 papers, 1,134,649 authors, 8,740 institutions, 59,965 fields of study; "
            "4 relations and their 3 reverses; 128 features (papers'; the other types their neighbours' mean), "
            "349 classes on papers; split: OGB time split (publisher)",
            {}, _lazy("ogb_mag", "load_mag"), needs_data_dir=True, schema=_lazy("ogb_mag", "schema"),
            find=_lazy("ogb_mag", "find_mag"), listing=_lazy("ogb_mag", "listing")),
    _Family("igbh", "typed: IGBH (MLPerf's GNN dataset), IGB's arrays of size=tiny|small|medium: paper, author, "
            "institute, fos, 4 relations and their 3 reverses, 1024 features, classes=19|2983 on papers; split: "
            "IGB's 60/20/20 by paper id",
            {"size": Param(str, "tiny"), "classes": Param(int, 19)}, _lazy("igbh", "load_igbh"), needs_data_dir=True,
            schema=_lazy("igbh", "schema"), find=_lazy("igbh", "find_igbh"), listing=_lazy("igbh", "listing")),
)}
assert {k: p.default for k, p in _FAMILIES["sbm"].params.items()} == synthetic.SBM_DEFAULTS
assert {k: p.default for k, p in _FAMILIES["rmat"].params.items()} == synthetic.RMAT_DEFAULTS
assert {k: p.default for k, p in _FAMILIES["hetero"].params.items()} == typed.HETERO_DEFAULTS
#: rmat's preset keys (Note [rmat presets]); not generator parameters
_PRESET_KEYS = {"like": "a real dataset's name", "scale": "a number in (0, 1]"}


def _choices() -> str:
    return ", ".join(k + (":..." if f.params else "") for k, f in _FAMILIES.items())


def _preset(name: str, like: str | None, scale_text: str | None) -> dict[str, Any]:
    """The sizes ``rmat:like=...,scale=...`` stands for (Note [rmat presets])."""
    if like is None:
        if scale_text is not None:
            raise UserError(f"rmat scale= needs like=NAME (got '{name}'); e.g. rmat:like=reddit,scale=0.25")
        return {}
    source = SOURCES.get(like.lower())
    if source is not None and _FAMILIES[source.name].schema is not None:
        raise UserError(f"rmat like='{like}' is a typed dataset, which an R-MAT graph has no types for; use "
                        f"hetero:like=mag for ogbn-mag's shape")
    if source is None:
        homogeneous = [k for k in SOURCES if _FAMILIES[k].schema is None]
        raise UserError(f"rmat like='{like}' names no real dataset; choose one of: {', '.join(homogeneous)}")
    scale = 1.0
    if scale_text is not None:
        scale = Param(float, 1.0, 0.0, 1.0).parse("rmat", "scale", scale_text)
        if scale <= 0:
            raise UserError(f"parameter 'scale' of dataset 'rmat' must be a number in (0, 1] (got '{scale_text}')")
    nodes = max(2, round(source.nodes * scale))
    edges = max(2, 2 * round(source.edges * scale / 2))
    return {"nodes": nodes, "edges": edges, "features": source.features, "classes": source.classes}


def parse_name(name: str) -> tuple[str, dict[str, Any]]:
    """``"sbm:nodes=100"`` -> ``("sbm", {every parameter, defaults filled in})``.

    Raises:
        UserError: unknown kind, unknown or repeated key, a bad value, or
            parameters that contradict each other (:func:`_check_values`).
    """
    if not name.isascii():
        bad = next(c for c in name if not c.isascii())
        raise UserError(f"dataset name '{name}' must be ASCII (got {bad!r} at position {name.index(bad)}); "
                        f"write digits and letters as plain ASCII, e.g. sbm:nodes=2500")
    kind, _, rest = name.strip().partition(":")
    kind = kind.strip().lower().replace("_", "-")
    family = _FAMILIES.get(kind)
    if family is None:
        raise UserError(f"unknown dataset '{name}'; choose one of: {_choices()}")
    values = {k: p.default for k, p in family.params.items()}
    given: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, text = (s.strip() for s in item.partition("="))
        if not family.params:
            raise UserError(f"dataset '{kind}' takes no parameters (got '{item}'); use plain '{kind}'")
        if not eq:
            raise UserError(f"dataset parameter '{item}' of '{kind}' must be written key=value, "
                            f"e.g. {kind}:seed=1")
        allowed = set(family.params) | (set(_PRESET_KEYS) if kind == "rmat" else set())
        if key not in allowed:
            raise UserError(f"unknown parameter '{key}' for dataset '{kind}'; allowed keys: "
                            f"{', '.join(sorted(allowed))}")
        if key in given:
            raise UserError(f"parameter '{key}' is given twice in dataset name '{name}'")
        given[key] = text
    if kind == "rmat":
        values.update(_preset(name, given.pop("like", None), given.pop("scale", None)))
    for key, text in given.items():
        values[key] = family.params[key].parse(kind, key, text)
    _check_values(kind, values)
    return kind, values


def _check_values(kind: str, v: dict[str, Any]) -> None:
    """Refuse parameter combinations a generator cannot honour, before it runs."""
    if kind == "sbm":
        need = SBM_MIN_NODES_PER_CLASS * v["classes"]
        if v["nodes"] < need:
            raise UserError(f"sbm needs at least {SBM_MIN_NODES_PER_CLASS} nodes per class, so that each class has "
                            f"training, validation and test nodes (got nodes={v['nodes']} for classes={v['classes']}"
                            f"); use nodes>={need} or fewer classes")
        if v["degree"] >= v["nodes"]:
            raise UserError(f"sbm degree must be below nodes (got degree={v['degree']}, nodes={v['nodes']})")
    elif kind == "hetero":
        typed.check_hetero(v)
    elif kind == "igbh":
        from .igbh import check_igbh

        check_igbh(v)
    elif kind == "rmat":
        edges, nodes = v["edges"], v["nodes"]
        if edges % 2:
            raise UserError(f"rmat edges counts both directions of each undirected edge, so it must be even "
                            f"(got {edges}); use {edges - 1} or {edges + 1}")
        if edges // 2 > nodes * (nodes - 1) // 4:
            raise UserError(f"rmat edges={edges} is too dense for nodes={nodes}: R-MAT can place at most about "
                            f"{nodes * (nodes - 1) // 2} directed edges there; raise nodes or lower edges")


def typed_schema(name: str, data_dir: str | os.PathLike | None = None) -> tuple | None:
    """``(feature widths, relations, target type, classes)`` of a typed dataset, None for a homogeneous one;
    from the name (and a real dataset's small files or array headers), nothing generated or loaded."""
    kind, values = parse_name(name)
    family = _FAMILIES[kind]
    return family.schema(data_dir, **values) if family.schema is not None else None


def typed_listing(kind: str, data_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The typed datasets family ``kind`` names (the presets of ``hetero``, each IGBH size, ogbn-mag), each with
    its node types (count where known, feature width), relations, target and classes; [] for a homogeneous
    family. A real dataset's counts come from its files when present, else from what its publisher states."""
    family = _FAMILIES[kind]
    return family.listing(data_dir) if family.listing is not None else []


def canonical_name(name: str) -> str:
    """The name with every parameter, sorted by key: ``load_dataset(canonical_name(n)).name`` equals it."""
    kind, values = parse_name(name)
    if not values:
        return kind
    return kind + ":" + ",".join(f"{k}={Param.format(values[k])}" for k in sorted(values))


def memory_estimate(name: str) -> int:
    """Bytes a first load of ``name`` needs at its peak (generation or conversion); 0 once cached."""
    kind, v = parse_name(name)
    family = _FAMILIES[kind]
    canonical = canonical_name(name)
    if family.cache_version is not None and read_manifest(canonical) is not None:
        return 0
    if kind in ("rmat", "sbm"):
        edges = v["edges"] if kind == "rmat" else v["nodes"] * v["degree"]
        return _BYTES_PER_EDGE[kind] * edges + _BYTES_PER_FEATURE * v["nodes"] * v["features"]
    if kind == "ogbn-mag":  # Note [reading ogbn-mag through OGB]: its edges as int64, its features as float64
        s = SOURCES[kind]   # (pandas) and float32 on every type; an upper bound, not measured on the full files
        return _BYTES_PER_EDGE["convert"] * s.edges + 3 * 4 * s.nodes * s.features
    if kind in SOURCES:
        s = SOURCES[kind]
        return _BYTES_PER_EDGE["convert"] * s.edges + _BYTES_PER_FEATURE * s.nodes * max(s.features, s.classes)
    return 0


def _available_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def validate(name: str, data_dir: str | os.PathLike | None = None) -> str:
    """Check everything about dataset ``name`` that can fail before a worker starts; return its canonical name.

    Checks the name and parameters (:func:`parse_name`), that a real
    dataset's raw files or converted cache are present (without downloading),
    and that generating or converting it fits in the memory available now.

    Args:
        name: a dataset name as a user wrote it.
        data_dir: the raw data root (default: ``$GNNBENCH_DATA_DIR``, else the download cache).

    Raises:
        UserError: one line saying what is wrong and how to fix it.
    """
    canonical = canonical_name(name)
    kind = canonical.split(":", 1)[0]
    if data_dir is not None and not os.path.isdir(os.path.expanduser(str(data_dir))):
        raise UserError(f"data folder {data_dir} (from --data-dir) does not exist; pass an existing folder")
    family = _FAMILIES[kind]
    if kind in PLANETOID_NAMES:
        from .planetoid import find_planetoid_dir

        root, named_by = data_root(data_dir)
        offline = os.environ.get("GNNBENCH_OFFLINE", "") not in ("", "0")
        if named_by != "the download cache" or offline:
            find_planetoid_dir(kind, data_dir)
        # else the worker downloads the files on first use
    elif family.find is not None:  # a typed real dataset: the first missing file of its layout, by name
        family.find(data_dir, **parse_name(canonical)[1])
    elif family.needs_data_dir and read_manifest(canonical) is None:
        find_raw_folder(SOURCES[kind], data_dir)
    _check_memory(canonical)
    return canonical


def _check_memory(canonical: str) -> None:
    """Refuse to generate or convert ``canonical`` when its estimated peak exceeds the available memory."""
    kind = canonical.split(":", 1)[0]
    need, have = memory_estimate(canonical), _available_memory()
    if need > have:
        hint = ("lower nodes/edges, or use rmat:like=NAME,scale=S" if kind in ("rmat", "sbm")
                else "free memory or use a machine with more")
        raise UserError(f"dataset '{canonical}' needs about {need / 2**30:.1f} GiB to "
                        f"{'generate' if kind in ('rmat', 'sbm') else 'convert'}, but only {have / 2**30:.1f} GiB "
                        f"is available; {hint}")


def load_dataset(name: str, data_dir: str | os.PathLike | None = None, index_dtype: Any = np.int64) -> Dataset:
    """Load (or generate, or convert) a dataset by name.

    Generated and converted datasets are written once to gnnbench's cache
    (:mod:`gnnbench.datasets.cache`) and memory-mapped from it afterwards;
    raw files are read from ``data_dir``, ``$GNNBENCH_DATA_DIR`` or the
    download cache (Note [raw data folders]).

    Args:
        name: a name from :func:`list_datasets`, e.g. ``cora``, ``reddit``,
            ``sbm[:key=value,...]`` or ``rmat:like=reddit``.
        data_dir: folder holding raw files, for datasets that need them.
            (default: ``$GNNBENCH_DATA_DIR``)
        index_dtype: int32 or int64 for the graph's indices. (default: int64)

    Raises:
        UserError: unknown name or parameter, missing or corrupt raw files.
    """
    index_dtype = check_index_dtype(index_dtype)
    kind, values = parse_name(name)
    family = _FAMILIES[kind]
    canonical = canonical_name(name)
    if family.cache_version is None:
        return family.build(canonical, data_dir, index_dtype, **values)
    start = time.perf_counter()
    dataset = load_cached(canonical, family.cache_version)
    provenance: dict[str, Any] = {"cache": str(cache_path(canonical)), "built": dataset is None}
    if dataset is None:
        _check_memory(canonical)
        built = family.build(canonical, data_dir, np.int64, **values)
        if not isinstance(built, Converted):
            built = Converted(built, {}, time.perf_counter() - start)
        path = store_cached(built.dataset, family.cache_version, converter=kind, sources=built.sources,
                            convert_seconds=built.seconds)
        dataset = built.dataset
        del built
        provenance["build_seconds"] = time.perf_counter() - start
        if path is not None:  # train on the memory-mapped copy; the converter's arrays are freed
            start = time.perf_counter()
            dataset = load_cached(canonical, family.cache_version) or dataset
    provenance["load_seconds"] = time.perf_counter() - start
    dataset = dataclasses.replace(dataset, provenance=provenance)
    return dataset.with_index_dtype(index_dtype)


def list_datasets() -> list[DatasetInfo]:
    """Every dataset family with its description, parameter defaults and whether it needs raw files."""
    return [DatasetInfo(f.kind, f.description, {k: p.default for k, p in f.params.items()}, f.needs_data_dir)
            for f in _FAMILIES.values()]


def cache_folder(name: str) -> str:
    """Where ``name``'s converted or generated copy lives (whether or not it exists yet)."""
    return str(cache_path(canonical_name(name)))
