"""A campaign's `options` field reads a run's system options (Note [campaign entries])."""
from gnnbench.campaign.entries import field_of


def test_options_read_the_sweeps_system_options_as_key_value_text():
    row = {"extra": {"sweep": {"spec": {"system_options": [["patch", "isplib"], ["adjacency", "sparse"]]}}}}
    assert field_of(row, "options") == "adjacency=sparse,patch=isplib"


def test_options_fall_back_to_the_rows_hyperparameters_and_are_none_without_any():
    assert field_of({"hyperparameters": {"system_options": {"adjacency": "edge_index"}}}, "options") == \
        "adjacency=edge_index"
    assert field_of({"extra": {"sweep": {"spec": {"system_options": []}}}}, "options") is None
