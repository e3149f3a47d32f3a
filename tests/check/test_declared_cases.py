"""Conformance cases come from the operators' declarations (Note [cases from the declaration]): an operator
declared in a test gets its cases, its inputs at the declared shapes and its index spaces, with no code of its own."""
from __future__ import annotations

import numpy as np

from gnnbench.check.conformance import INDEX_RANGES, OP_CASES, OTHER_WIDTH_OFFSET, adversarial_graphs, declared_cases
from gnnbench.dsl.syntax import parse_api

TOY_API = """\
api toy 1.0
operator scale_rows
    attr   mode in {plain, doubled}
    input  x: float[S, H, D]
    input  factor: float[E, H]?
    input  kind: i32[E] indexes T
    input  table: float[T, D, K]
    output out: float[N, H, K]

operator edge_norm
    input  values: float[E, H]
    output out: float[E, H]
"""


def test_a_toy_operator_declared_in_a_test_gets_its_cases():
    cases = declared_cases(parse_api(TOY_API, "toy.gnn"))
    assert [c.label for c in cases] == [
        f"scale_rows(mode={m}{w}, T={t})" for m in ("plain", "doubled") for w in ("", ", weight")
        for t in INDEX_RANGES] + ["edge_norm"]


def test_a_toy_operator_case_draws_its_inputs_at_the_declared_shapes():
    case = next(c for c in declared_cases(parse_api(TOY_API, "toy.gnn")) if c.label == "scale_rows(mode=plain, weight, T=3)")
    graph = adversarial_graphs()["hub"]
    arrays = case.inputs(graph, 2, 5, np.random.default_rng(0))
    assert list(arrays) == ["x", "factor", "kind", "table"]
    assert arrays["x"].shape == (graph.num_src, 2, 5)
    assert arrays["factor"].shape == (graph.num_edges, 2) and np.all(np.abs(arrays["factor"]) >= 1)  # edge weights
    assert arrays["kind"].dtype == np.int32 and set(np.unique(arrays["kind"])) == {0, 1, 2}
    assert arrays["table"].shape == (3, 5, 5 + OTHER_WIDTH_OFFSET)
    assert case.uses_width
    assert [case.space(n) for n in arrays] == ["src", "edge", "edge", None]
    plain = next(c for c in declared_cases(parse_api(TOY_API, "toy.gnn")) if c.label == "scale_rows(mode=plain, T=1)")
    assert plain.inputs(graph, 1, 3, np.random.default_rng(0))["factor"] is None
    edge_norm = declared_cases(parse_api(TOY_API, "toy.gnn"))[-1]
    assert not edge_norm.uses_width and edge_norm.space("values") == "edge"


def test_the_typed_operator_is_checked_at_one_a_few_and_many_relations():
    typed = [c for c in OP_CASES if c.operator == "typed_aggregate"]
    assert [c.label for c in typed] == ["typed_aggregate(R=1)", "typed_aggregate(R=3)", "typed_aggregate(R=64)"]
    graph = adversarial_graphs(np.int32)["hub"]
    arrays = typed[-1].inputs(graph, 3, 17, np.random.default_rng(1))
    assert arrays["weight"].shape == (64, 17, 17 + OTHER_WIDTH_OFFSET)
    assert arrays["etype"].dtype == np.int64 and arrays["etype"].max() < 64
    assert arrays["norm"].shape == (graph.num_edges, 3)
