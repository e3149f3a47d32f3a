"""gnnbench/check/quantised.py: which systems get quantised checks, and their row labels."""
from __future__ import annotations

from gnnbench.check.quantised import quantised_labels


def test_only_a_system_declaring_verify_quantised_gets_rows():
    assert quantised_labels("reference") == []


def test_pim_rows_name_the_reduction_the_weights_and_its_quantised_mode():
    from gnnbench.runtime.registry import load_system

    labels = quantised_labels("pim")
    declared = load_system("pim").module.VERIFY_QUANTISED
    mode = ", ".join(f"{k}={v}" for k, v in declared["options"].items())
    assert len(labels) == 4 and all(label.startswith("spmm") and label.endswith(f", {mode})") for label in labels)
    assert len(set(labels)) == 4
