"""Typed graphs: bipartite relations with any S and N, the homogeneous form, the hetero: generator and its presets."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.datasets.hetero import PRESETS, presets
from gnnbench.datasets.registry import canonical_name, load_dataset, typed_schema
from gnnbench.errors import UserError
from gnnbench.runtime.graph import Graph, GraphError
from gnnbench.runtime.hetero import HeteroGraph, Relation


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GNNBENCH_OFFLINE", "1")


def test_a_bipartite_relation_may_have_fewer_sources_than_destinations():
    g = Graph.from_edges([0, 1, 1], [4, 0, 2], 5, num_src=2, bipartite=True)
    assert (g.num_dst, g.num_src, g.is_block, g.bipartite) == (5, 2, False, True)
    forward, back = g.view(), g.view(transposed=True)
    assert (forward.num_rows, forward.num_cols, back.num_rows, back.num_cols) == (5, 2, 2, 5)
    assert back.indptr.tolist() == [0, 1, 3]
    assert g.out_degree.tolist() == [1.0, 2.0]
    assert g.to_index_dtype(np.int32).bipartite


def test_a_block_still_needs_its_destinations_among_its_sources():
    with pytest.raises(GraphError, match="num_src must be at least"):
        Graph.from_edges([0], [3], 5, num_src=2)


def test_a_bipartite_relation_refuses_self_loops_and_signs_differently_from_a_block():
    g = Graph.from_edges([0, 1], [1, 0], 2, num_src=3, bipartite=True)
    with pytest.raises(GraphError, match="no self loops"):
        g.with_self_loops()
    block = Graph.from_edges([0, 1], [1, 0], 2, num_src=3)
    assert g.signature() != block.signature()


def test_the_homogeneous_form_lays_types_out_in_order_and_types_each_edge():
    a, w = Relation("paper", "cites", "paper"), Relation("author", "writes", "paper")
    hg = HeteroGraph.from_edges({"paper": 3, "author": 2}, {a: ([0, 1], [1, 2]), w: ([1, 0, 1], [0, 0, 2])})
    form = hg.homogeneous()
    assert form.offsets.tolist() == [0, 3, 5]
    assert form.node_type.tolist() == [0, 0, 0, 1, 1]
    src, dst = form.graph.edges()
    # by destination, then relation, then source; authors are ids 3 and 4
    assert list(zip(src.tolist(), dst.tolist(), form.edge_type.tolist())) == \
        [(3, 0, 1), (4, 0, 1), (0, 1, 0), (1, 2, 0), (4, 2, 1)]
    assert hg.relations_into("paper") == [0, 1] and hg.relations_into("author") == []


@pytest.mark.parametrize("counts,edges,message", [
    ({"paper": 3}, {Relation("paper", "writes", "author"): ([0], [0])},
     "relation 'paper-writes->author' names node type 'author', which the graph does not have; its node types: paper"),
    ({"paper": 3, "author": 0}, {},
     "node type 'author' has no nodes; every node type needs at least one"),
])
def test_bad_typed_graphs_are_one_line(counts, edges, message):
    with pytest.raises(UserError) as err:
        HeteroGraph.from_edges(counts, edges)
    assert str(err.value) == message


def test_the_canonical_name_resolves_the_preset_and_lists_every_parameter():
    assert canonical_name("hetero:like=aifb") == \
        "hetero:classes=4,features=16,like=aifb,other_features=16,scale=1.0,seed=0"
    assert canonical_name("hetero:scale=0.01,like=igbh") == canonical_name("hetero")


@pytest.mark.parametrize("like", list(PRESETS))
def test_each_preset_builds_its_types_and_relations_with_planted_classes(like):
    d = load_dataset(f"hetero:like={like}")
    shape = PRESETS[like]
    assert d.graph.node_types == tuple(shape.nodes)
    assert [str(r) for r in d.graph.relations] == [str(r) for r, _ in shape.relations]
    assert d.target == shape.target and d.labels.shape == (d.graph.node_counts[d.target],)
    assert set(np.unique(d.labels)) == set(range(d.num_classes))
    # planted: a destination's in-neighbours share its class far more often than chance
    k = d.graph.relations.index(next(r for r, _ in shape.relations if r.dst == d.target and r.src == d.target)) \
        if any(r.src == r.dst == d.target for r, _ in shape.relations) else None
    if k is not None:
        src, dst = d.graph.graphs[k].edges()
        assert np.mean(d.labels[src] == d.labels[dst]) > 0.5
    again = load_dataset(f"hetero:like={like}")
    assert all(np.array_equal(d.type_features[t], again.type_features[t]) for t in d.type_features)


def test_aifb_has_many_relations_and_igbh_and_mag_seven():
    counts = {p["name"]: len(p["relations"]) for p in presets()}
    assert counts == {"hetero:like=igbh": 7, "hetero:like=mag": 7, "hetero:like=aifb": 90}


def test_an_empty_type_at_a_small_scale_is_one_line():
    with pytest.raises(UserError) as err:
        canonical_name("hetero:like=aifb,scale=0.0001")
    assert str(err.value) == ("dataset 'hetero:like=aifb,scale=0.0001': node type 'person' has no nodes at "
                              "scale=0.0001 (an empty type); use scale>=0.00031")


def test_the_schema_comes_from_the_name_alone():
    widths, relations, target, classes = typed_schema("hetero:like=mag,other_features=64")
    assert widths == {"paper": 128, "author": 64, "institution": 64, "field_of_study": 64}
    assert (target, classes, len(relations)) == ("paper", 349, 7)
    assert typed_schema("karate") is None


def test_int32_indices_and_describe():
    d = load_dataset("hetero:like=aifb", index_dtype=np.int32)
    assert all(g.index_dtype == np.int32 for g in d.graph.graphs)
    described = d.describe()
    assert described["target"] == "person" and len(described["relations"]) == 90
    assert described["nodes"] == 8285


def test_datasets_lists_the_typed_presets_with_types_and_relations(capsys):
    from gnnbench.cli import main

    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "node types (nodes x features)" in out
    assert "paper 1,000x1024, author 3,570x1024" in out and "author-affiliated_to->institute" in out
