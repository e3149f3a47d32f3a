"""Zachary's karate club: 34 nodes, two factions, the smallest real graph for smoke tests."""
from __future__ import annotations

import numpy as np

from .dataset import Dataset, build_dataset, index_mask, symmetric_graph

__all__ = ["load_karate"]

# Fixed split: 2 training nodes per faction, 10 validation, 20 test (seeded, so
# every run and every machine sees the same one).
_SPLIT_SEED = 0
_TRAIN_PER_CLASS = 2
_NUM_VAL = 10


def load_karate() -> Dataset:
    """The karate club graph from networkx with identity features.

    Labels are the ``club`` node attribute: 0 for ``"Mr. Hi"``, 1 for
    ``"Officer"``. Features are one-hot node ids, so a model can only
    generalise through the graph.

    Shapes:
        N=34, F=34, C=2, 156 directed edges (78 undirected).
    """
    import networkx as nx  # imported here: only this dataset needs it

    g = nx.karate_club_graph()
    num_nodes = g.number_of_nodes()
    edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    labels = np.array([0 if g.nodes[i]["club"] == "Mr. Hi" else 1 for i in range(num_nodes)], dtype=np.int64)

    rng = np.random.default_rng(_SPLIT_SEED)
    train = np.concatenate([rng.permutation(np.flatnonzero(labels == k))[:_TRAIN_PER_CLASS] for k in (0, 1)])
    rest = rng.permutation(np.flatnonzero(~index_mask(num_nodes, train)))
    graph = symmetric_graph(edges[:, 0], edges[:, 1], num_nodes)
    return build_dataset("karate", graph, np.eye(num_nodes, dtype=np.float32), labels,
                         index_mask(num_nodes, train), index_mask(num_nodes, rest[:_NUM_VAL]),
                         index_mask(num_nodes, rest[_NUM_VAL:]), 2)
