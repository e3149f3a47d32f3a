"""Dataset names: ``cora``, ``karate``, ``sbm:nodes=2000,seed=1``, ... and how to load them.

A name is ``kind`` or ``kind:key=value,key=value``. Omitted parameters take
their defaults, and the canonical name lists every parameter sorted by key, so
``sbm`` and ``sbm:seed=0`` both become
``sbm:classes=4,degree=12,features=32,nodes=2500,p_in=0.8,seed=0``: one name,
one dataset, one cache file. ``Dataset.name`` is always the canonical name.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gnnbench.errors import UserError

from . import synthetic
from .cache import load_cached, store_cached
from .dataset import Dataset, DatasetInfo, check_index_dtype
from .karate import load_karate
from .planetoid import load_planetoid

__all__ = ["Param", "load_dataset", "list_datasets", "canonical_name", "parse_name", "validate"]


@dataclass(frozen=True)
class Param:
    """A generator parameter: its type, default and allowed range (inclusive)."""

    type: type
    default: Any
    low: float | None = None
    high: float | None = None

    def parse(self, kind: str, key: str, text: str) -> Any:
        try:
            value = self.type(text)
        except ValueError:
            value = None
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
    build: Callable[..., Dataset]  # (canonical name, data_dir, index_dtype, **params)
    needs_data_dir: bool = False
    cache_version: int | None = None  # None: not cached (cheap to load)


# node pairs are encoded as dst * N + src in int64 (symmetric_graph), so N^2 must fit
_MAX_NODES = 2**31 - 1


def _planetoid(kind: str) -> Callable[..., Dataset]:
    return lambda name, data_dir, index_dtype: load_planetoid(kind, data_dir, index_dtype)


_FAMILIES: dict[str, _Family] = {f.kind: f for f in (
    _Family("cora", "Cora citation graph, Planetoid split (2708 nodes, 1433 features, 7 classes)",
            {}, _planetoid("cora"), needs_data_dir=True),
    _Family("citeseer", "CiteSeer citation graph, Planetoid split (3327 nodes, 3703 features, 6 classes)",
            {}, _planetoid("citeseer"), needs_data_dir=True),
    _Family("karate", "Zachary's karate club (34 nodes, one-hot features, 2 classes)",
            {}, lambda name, data_dir, index_dtype: load_karate()),
    _Family("sbm", "stochastic block model with class-correlated Gaussian features, 20/class train, 500 val, "
            "1000 test",
            {"nodes": Param(int, 2500, 2, _MAX_NODES), "classes": Param(int, 4, 1), "features": Param(int, 32, 1),
             "degree": Param(int, 12, 1), "p_in": Param(float, 0.8, 0.0, 1.0), "seed": Param(int, 0, 0)},
            lambda name, data_dir, index_dtype, **p: synthetic.sbm(name, **p),
            cache_version=synthetic.SBM_VERSION),
    _Family("rmat", "power-law R-MAT graph (a=0.57, b=0.19, c=0.19), exactly `edges` directed edges, "
            "random features, 60/20/20 split",
            {"nodes": Param(int, 131072, 2, _MAX_NODES), "edges": Param(int, 4000000, 2),
             "features": Param(int, 128, 1), "classes": Param(int, 8, 2), "seed": Param(int, 0, 0)},
            lambda name, data_dir, index_dtype, **p: synthetic.rmat(name, **p),
            cache_version=synthetic.RMAT_VERSION),
)}
assert {k: p.default for k, p in _FAMILIES["sbm"].params.items()} == synthetic.SBM_DEFAULTS
assert {k: p.default for k, p in _FAMILIES["rmat"].params.items()} == synthetic.RMAT_DEFAULTS


def _choices() -> str:
    return ", ".join(k + (":..." if f.params else "") for k, f in _FAMILIES.items())


def parse_name(name: str) -> tuple[str, dict[str, Any]]:
    """``"sbm:nodes=100"`` -> ``("sbm", {every parameter, defaults filled in})``.

    Raises:
        UserError: unknown kind, unknown or repeated key, or a bad value.
    """
    kind, _, rest = name.strip().partition(":")
    kind = kind.strip().lower()
    family = _FAMILIES.get(kind)
    if family is None:
        raise UserError(f"unknown dataset '{name}'; choose one of: {_choices()}")
    values = {k: p.default for k, p in family.params.items()}
    seen: set[str] = set()
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, text = (s.strip() for s in item.partition("="))
        if not family.params:
            raise UserError(f"dataset '{kind}' takes no parameters (got '{item}'); use plain '{kind}'")
        if not eq:
            raise UserError(f"dataset parameter '{item}' of '{kind}' must be written key=value, "
                            f"e.g. {kind}:seed=1")
        if key not in family.params:
            raise UserError(f"unknown parameter '{key}' for dataset '{kind}'; allowed keys: "
                            f"{', '.join(sorted(family.params))}")
        if key in seen:
            raise UserError(f"parameter '{key}' is given twice in dataset name '{name}'")
        seen.add(key)
        values[key] = family.params[key].parse(kind, key, text)
    return kind, values


def canonical_name(name: str) -> str:
    """The name with every parameter, sorted by key: ``load_dataset(canonical_name(n)).name`` equals it."""
    kind, values = parse_name(name)
    if not values:
        return kind
    return kind + ":" + ",".join(f"{k}={Param.format(values[k])}" for k in sorted(values))


def validate(name: str) -> str:
    """Check a dataset name before any worker starts; return its canonical name.

    The one entry point the run configuration calls (gnnbench.config). It
    checks the name and its parameters' types and ranges.

    Raises:
        UserError: one line naming the dataset parameter that is wrong.
    """
    return canonical_name(name)


def load_dataset(name: str, data_dir: str | os.PathLike | None = None, index_dtype: Any = np.int64) -> Dataset:
    """Load (or generate) a dataset by name.

    Synthetic datasets are cached on disk by canonical name (see
    :mod:`gnnbench.datasets.cache`); Planetoid files are read from
    ``data_dir``, ``$GNNBENCH_DATA_DIR`` or the download cache.

    Args:
        name: ``cora``, ``citeseer``, ``karate``, ``sbm[:key=value,...]`` or
            ``rmat[:key=value,...]``; see :func:`list_datasets`.
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
    dataset = load_cached(canonical, family.cache_version)
    if dataset is None:
        dataset = family.build(canonical, data_dir, np.int64, **values)
        store_cached(dataset, family.cache_version)
    return dataset.with_index_dtype(index_dtype)


def list_datasets() -> list[DatasetInfo]:
    """Every dataset family with its description, parameter defaults and whether it needs raw files."""
    return [DatasetInfo(f.kind, f.description, {k: p.default for k, p in f.params.items()}, f.needs_data_dir)
            for f in _FAMILIES.values()]
