"""Typed datasets: :class:`HeteroDataset`, and the synthetic generator ``hetero:`` with its presets.

``hetero:like=igbh,scale=0.01`` is a graph of IGBH's shape (paper, author, institute, field of study; cites,
written_by, affiliated_to, topic and their reverses), ``hetero:like=mag`` ogbn-mag's, ``hetero:like=aifb`` a
many-relation graph like the R-GCN paper's AIFB. The name lists every parameter, as ``rmat:``'s does, so one
name is one dataset; ``like`` names the shape (its types and relations), which no number can.

Note [hetero presets]
    Sizes at ``scale=1`` (each count and each relation's edges multiply by ``scale``):

    * ``igbh``: IGBH-tiny's node counts (100,000 papers, 357,041 authors, 8,738 institutes, 84,220 fields of
      study; the first two as IGBH publishes them), edges per relation at IGBH's mean degrees (about 5 cited
      papers, 3.5 authors and 7 fields per paper, one institute per author), every relation but ``cites``
      with its reverse: 7 relations. 1024 features on every type, 19 classes on papers.
    * ``mag``: ogbn-mag's published counts (736,389 papers, 1,134,649 authors, 8,740 institutions, 59,965
      fields of study; 5,416,271 cites, 7,145,660 writes, 1,043,998 affiliated_with, 7,505,078 has_topic)
      with the three reverses PyG's ``ToUndirected`` adds: 7 relations. 128 features (ogbn-mag gives papers
      word2vec features and the others none; runs usually embed them at the same width), 349 classes.
    * ``aifb``: AIFB's size (8,285 entities, about 29,000 edges) over 7 entity types and 45 relations with
      their reverses, 90 relations as in the R-GCN paper; 16 features, 4 classes on ``person``.

Note [planted classes]
    Every node of every type has a latent class, uniform over ``classes``. A relation's edge picks its
    destination uniformly and, with probability ``P_IN``, a source of the destination's class, else any source.
    Features are a class mean per type plus unit noise, the mean's scale chosen as sbm's (Note [sbm features]),
    so a node's own features say little and its neighbours' say more: a relational model that aggregates beats
    one that does not, and accuracy means something. The target type's latent classes are its labels; the
    split is a random 60/20/20 of the target's nodes.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.hetero import HeteroGraph, Relation

from .dataset import check_index_dtype, index_mask

__all__ = ["HeteroDataset", "Shape", "PRESETS", "HETERO_DEFAULTS", "hetero", "check_hetero", "feature_widths", "schema", "presets"]

#: probability that an edge's source shares its destination's class (Note [planted classes])
P_IN = 0.7
#: scale of the class means (as sbm's SBM_SIGNAL)
SIGNAL = 0.5


@dataclass(frozen=True)
class Shape:
    """A preset's shape at ``scale=1`` (Note [hetero presets]): node counts, relations with edge counts, the
    target type, features and classes."""

    nodes: dict[str, int]
    relations: tuple[tuple[Relation, int], ...]
    target: str
    features: int
    classes: int


def _with_reverses(forward: list[tuple[str, str, str, int]], own_reverse: tuple[str, ...] = ()) -> tuple:
    out = []
    for src, name, dst, edges in forward:
        out.append((Relation(src, name, dst), edges))
    for src, name, dst, edges in forward:
        if name not in own_reverse:
            out.append((Relation(dst, f"rev_{name}", src), edges))
    return tuple(out)


def _aifb() -> Shape:
    types = {"person": 1_600, "publication": 3_000, "project": 400, "organization": 300, "topic": 700,
             "event": 1_200, "literal": 1_085}
    names = list(types)
    rng = np.random.default_rng(2018)  # a fixed draw: the preset's shape never changes
    forward = []
    for k in range(45):
        src, dst = names[k % len(names)], names[int(rng.integers(len(names)))]
        forward.append((src, f"p{k:02d}", dst, int(rng.integers(100, 560))))
    return Shape(types, _with_reverses(forward), "person", 16, 4)


PRESETS: dict[str, Shape] = {
    "igbh": Shape({"paper": 100_000, "author": 357_041, "institute": 8_738, "fos": 84_220},
                  _with_reverses([("paper", "cites", "paper", 500_000), ("paper", "written_by", "author", 350_000),
                                  ("author", "affiliated_to", "institute", 357_041),
                                  ("paper", "topic", "fos", 700_000)], own_reverse=("cites",)),
                  "paper", 1024, 19),
    "mag": Shape({"paper": 736_389, "author": 1_134_649, "institution": 8_740, "field_of_study": 59_965},
                 _with_reverses([("paper", "cites", "paper", 5_416_271), ("author", "writes", "paper", 7_145_660),
                                 ("author", "affiliated_with", "institution", 1_043_998),
                                 ("paper", "has_topic", "field_of_study", 7_505_078)], own_reverse=("cites",)),
                 "paper", 128, 349),
    "aifb": _aifb(),
}

#: the generator's parameters and defaults; 0 for scale, features, classes and other_features means the preset's
#: (scale: :data:`DEFAULT_SCALE`), resolved in the canonical name
HETERO_DEFAULTS = {"like": "igbh", "scale": 0.0, "features": 0, "other_features": 0, "classes": 0, "seed": 0}
#: the scale a preset takes when none is given: a size a 2-core machine trains in seconds
DEFAULT_SCALE = {"igbh": 0.01, "mag": 0.005, "aifb": 1.0}


@dataclass(frozen=True, eq=False)
class HeteroDataset:
    """A typed node-classification dataset: a :class:`HeteroGraph`, features per node type, labels and a split on
    the target type.

    Args:
        name: canonical name (``load_dataset(name)`` rebuilds it).
        graph: the typed graph.
        type_features: node type -> float32 ``[count, F_type]`` C-contiguous features.
        target: the node type that has labels.
        labels, train_mask, val_mask, test_mask: on the target type's nodes, ``[count(target)]``.
        num_classes: ``C``.

    ``features`` is the target type's (what a row reports as the dataset's features); the loss and scores
    (:class:`~gnnbench.datasets.objective.Objective`) read ``labels`` and the masks as on any dataset.
    """

    name: str
    graph: HeteroGraph = field(repr=False)
    type_features: dict[str, np.ndarray] = field(repr=False)
    target: str
    labels: np.ndarray = field(repr=False)
    train_mask: np.ndarray = field(repr=False)
    val_mask: np.ndarray = field(repr=False)
    test_mask: np.ndarray = field(repr=False)
    num_classes: int
    task: str = "multiclass"
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)
    #: a typed dataset: models say whether they take one (``GNN.typed``)
    typed = True

    def __post_init__(self) -> None:
        counts = self.graph.node_counts
        if set(self.type_features) != set(counts):
            missing = sorted(set(counts) - set(self.type_features)) or sorted(set(self.type_features) - set(counts))
            raise UserError(f"dataset '{self.name}': features and node types differ at '{missing[0]}'; give every "
                            f"node type (and only those) its features")
        for t, f in self.type_features.items():
            if f.dtype != np.float32 or f.ndim != 2 or f.shape[0] != counts[t] or not f.flags.c_contiguous:
                raise UserError(f"dataset '{self.name}': features of node type '{t}' must be C-contiguous float32 "
                                f"[{counts[t]}, F] (got {f.dtype} {list(f.shape)})")
        if self.target not in counts:
            raise UserError(f"dataset '{self.name}': target type '{self.target}' is not a node type; its node "
                            f"types: {', '.join(counts)}")
        n = counts[self.target]
        if self.labels.dtype != np.int64 or self.labels.shape != (n,):
            raise UserError(f"dataset '{self.name}': labels must be int64 [{n}] (got {self.labels.dtype} "
                            f"{list(self.labels.shape)})")
        for key in ("train_mask", "val_mask", "test_mask"):
            m = getattr(self, key)
            if m.dtype != np.bool_ or m.shape != (n,):
                raise UserError(f"dataset '{self.name}': {key} must be bool [{n}] (got {m.dtype} {list(m.shape)})")

    @property
    def features(self) -> np.ndarray:
        return self.type_features[self.target]

    @property
    def num_nodes(self) -> int:
        return self.graph.node_counts[self.target]

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    def feature_widths(self) -> dict[str, int]:
        return {t: int(f.shape[1]) for t, f in self.type_features.items()}

    def describe(self) -> dict[str, Any]:
        return {"nodes": self.graph.num_nodes, "edges": self.graph.num_edges, "features": self.num_features,
                "classes": int(self.num_classes), "train": int(self.train_mask.sum()),
                "val": int(self.val_mask.sum()), "test": int(self.test_mask.sum()), "task": self.task,
                "target": self.target, **self.graph.describe(),
                "feature_widths": self.feature_widths()}

    def with_index_dtype(self, dtype: Any) -> "HeteroDataset":
        dtype = check_index_dtype(dtype)
        if dtype == self.graph.index_dtype:
            return self
        return dataclasses.replace(self, graph=self.graph.to_index_dtype(dtype))


def _resolved(values: dict[str, Any]) -> tuple[Shape, dict[str, int], list[tuple[Relation, int]], int, int, int]:
    """``(shape, node counts, relations with edges, features, other types' features, classes)`` at ``scale``."""
    shape = PRESETS[values["like"]]
    scale = values["scale"]
    counts = {t: int(round(n * scale)) for t, n in shape.nodes.items()}
    relations = [(r, int(round(e * scale))) for r, e in shape.relations]
    features = values["features"] or shape.features
    return (shape, counts, relations, features, values["other_features"] or features,
            values["classes"] or shape.classes)


def check_hetero(values: dict[str, Any]) -> None:
    """Resolve the preset's defaults into ``values`` (in place: the canonical name lists the numbers) and refuse
    parameters the generator cannot honour, before it runs (one line each)."""
    like = values["like"]
    if like not in PRESETS:
        raise UserError(f"hetero like='{like}' names no preset; choose one of: {', '.join(PRESETS)}")
    values.update({k: getattr(PRESETS[like], k) for k in ("features", "classes") if not values[k]})
    values["other_features"] = values["other_features"] or values["features"]
    values["scale"] = values["scale"] or DEFAULT_SCALE[like]
    if values["scale"] <= 0:
        raise UserError(f"parameter 'scale' of dataset 'hetero' must be a number in (0, 1] (got {values['scale']})")
    shape, counts, _, _, _, classes = _resolved(values)
    name = f"hetero:like={like},scale={values['scale']!r}"
    for t, n in counts.items():
        if n <= 0:
            least = 0.5 / shape.nodes[t]
            raise UserError(f"dataset '{name}': node type '{t}' has no nodes at scale={values['scale']} (an empty "
                            f"type); use scale>={least:.2g}")
    if counts[shape.target] < 10 * classes:
        raise UserError(f"dataset '{name}': target type '{shape.target}' has {counts[shape.target]} nodes for "
                        f"{classes} classes; each class needs about 10 (raise scale or lower classes)")


def feature_widths(values: dict[str, Any]) -> dict[str, int]:
    """Each node type's feature width for parsed parameters ``values``, without generating anything."""
    shape, counts, _, features, other, _ = _resolved(values)
    return {t: features if t == shape.target else other for t in counts}


def presets() -> list[dict[str, Any]]:
    """Each preset at its default scale: name, node types with counts and feature widths, relations with
    edges (before deduplication), target and classes, for ``gnnbench datasets``."""
    out = []
    for like in PRESETS:
        values = dict(HETERO_DEFAULTS, like=like)
        check_hetero(values)
        shape, counts, relations, _, _, classes = _resolved(values)
        widths = feature_widths(values)
        out.append({"name": f"hetero:like={like}", "scale": values["scale"], "target": shape.target,
                    "classes": classes, "nodes": sum(counts.values()), "edges": sum(e for _, e in relations),
                    "node_types": {t: {"nodes": n, "features": widths[t]} for t, n in counts.items()},
                    "relations": [str(r) for r, _ in relations]})
    return out


def schema(values: dict[str, Any]) -> tuple[dict[str, int], tuple[Relation, ...], str, int]:
    """``(feature widths, relations, target type, classes)`` of parsed parameters ``values``, without generating
    anything: what a model is built from, so that a run's checks can build it before any worker starts."""
    shape, _, relations, _, _, classes = _resolved(values)
    return feature_widths(values), tuple(r for r, _ in relations), shape.target, classes


def hetero(name: str, *, like: str, scale: float, features: int, other_features: int, classes: int,
           seed: int, index_dtype: Any = np.int64) -> HeteroDataset:
    """The typed graph ``name`` stands for, with planted classes (Note [planted classes]).

    Args:
        name: the canonical name stored in the dataset.
        like: the preset's shape (Note [hetero presets]).
        scale: multiplies every node count and relation's edges.
        features: the target type's feature width (0: the preset's).
        other_features: the other types' width (0: the same as the target's).
        classes: classes on the target type (0: the preset's).
        seed: NumPy ``default_rng`` seed.
    """
    check_hetero({"like": like, "scale": scale, "features": features, "other_features": other_features,
                        "classes": classes, "seed": seed})
    shape, counts, relations, width, other, classes = _resolved(
        {"like": like, "scale": scale, "features": features, "other_features": other_features, "classes": classes})
    rng = np.random.default_rng(seed)
    latent = {t: rng.integers(0, classes, n) for t, n in counts.items()}
    members = {t: [np.flatnonzero(c == k) for k in range(classes)] for t, c in latent.items()}
    edges = {}
    for r, m in relations:
        dst = rng.integers(0, counts[r.dst], m)
        src = rng.integers(0, counts[r.src], m)
        same = rng.random(m) < P_IN
        for k in range(classes):
            pool = members[r.src][k]
            pick = same & (latent[r.dst][dst] == k)
            if pool.size and pick.any():
                src[pick] = pool[rng.integers(0, pool.size, int(pick.sum()))]
        keys = np.unique(dst.astype(np.int64) * counts[r.src] + src)  # no parallel edges
        edges[r] = (keys % counts[r.src], keys // counts[r.src])
    graph = HeteroGraph.from_edges(counts, edges, index_dtype)
    type_features = {}
    for t, n in counts.items():
        f = width if t == shape.target else other
        means = rng.standard_normal((classes, f), dtype=np.float32) * np.float32(SIGNAL / np.sqrt(f))
        type_features[t] = np.ascontiguousarray(means[latent[t]] + rng.standard_normal((n, f), dtype=np.float32))
    n = counts[shape.target]
    order = rng.permutation(n)
    n_train, n_val = int(0.6 * n), int(0.2 * n)
    return HeteroDataset(name, graph, type_features, shape.target, latent[shape.target].astype(np.int64),
                         index_mask(n, order[:n_train]), index_mask(n, order[n_train:n_train + n_val]),
                         index_mask(n, order[n_train + n_val:]), classes)
