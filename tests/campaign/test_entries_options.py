"""A campaign's `options` field reads a run's system options (Note [campaign entries])."""
from gnnbench.campaign.entries import field_of


def test_options_read_the_sweeps_system_options_as_key_value_text():
    row = {"extra": {"sweep": {"spec": {"system_options": [["patch", "isplib"], ["adjacency", "sparse"]]}}}}
    assert field_of(row, "options") == "adjacency=sparse,patch=isplib"


def test_options_fall_back_to_the_rows_hyperparameters_and_are_none_without_any():
    assert field_of({"hyperparameters": {"system_options": {"adjacency": "edge_index"}}}, "options") == \
        "adjacency=edge_index"
    assert field_of({"extra": {"sweep": {"spec": {"system_options": []}}}}, "options") is None


def test_a_graphs_size_reads_as_a_reader_says_it_and_orders_as_it_should():
    from gnnbench.campaign.entries import size_label, size_value

    labels = [size_label(edges) for edges in (524_288, 4_000_000, 114_600_000, 131_072, 640)]
    assert labels == ["524k", "4M", "114.6M", "131k", "640"]
    assert sorted(labels, key=size_value) == ["640", "131k", "524k", "4M", "114.6M"]
    assert field_of({"dataset": "rmat:classes=8,edges=524288,features=64,nodes=32768,seed=0"}, "edges") == "524k"
