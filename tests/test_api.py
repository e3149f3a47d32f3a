"""gnnbench/api.py: the system API's operators, declared once."""
from __future__ import annotations

from gnnbench.api import ATTRIBUTE_VALUES, OPERATORS


def test_the_five_operators_and_their_signatures():
    assert list(OPERATORS) == ["spmm", "sddmm", "edge_softmax", "gat_aggregate", "typed_aggregate"]
    assert OPERATORS["typed_aggregate"].input_names == ("x", "weight", "norm", "etype")
    spmm = OPERATORS["spmm"]
    assert spmm.input_names == ("x", "weight") and spmm.outputs == ("out",)
    assert spmm.is_optional("weight") and not spmm.is_optional("x")
    assert OPERATORS["gat_aggregate"].attrs == {"negative_slope": "float"}


def test_enumerated_attributes_are_listed_for_messages_and_free_ones_are_not():
    assert ATTRIBUTE_VALUES[("spmm", "reduce")] == ("sum", "mean", "max")
    assert ATTRIBUTE_VALUES[("sddmm", "op")] == ("dot", "add")
    assert ("gat_aggregate", "negative_slope") not in ATTRIBUTE_VALUES
