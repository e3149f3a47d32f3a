"""gnnbench/peers/_layers.py: gnnbench's initial values copied into a native layer, loudly or not at all."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.peers._layers import build_quietly, layer_values, load, named_params


def test_values_are_copied_in_the_frontend_dtype():
    F = TorchFrontend(dtype="float64")
    lin = torch.nn.Linear(3, 2)
    load(lin, {"weight": np.ones((2, 3)), "bias": np.zeros(2)}, F)
    assert lin.weight.dtype == torch.float64 and torch.equal(lin.weight, torch.ones(2, 3, dtype=torch.float64))


@pytest.mark.parametrize("values, message", [
    ({"weight": np.ones((2, 3))}, r"missing \['bias'\]"),
    ({"weight": np.ones((3, 2)), "bias": np.zeros(2)}, r"Linear.weight has shape \(2, 3\); the gnnbench value has "
                                                        r"shape \(3, 2\)"),
])
def test_a_layout_mismatch_fails_instead_of_training_from_noise(values, message):
    with pytest.raises(RuntimeError, match=message):
        load(torch.nn.Linear(3, 2), values, TorchFrontend())


def test_building_does_not_advance_the_rng_and_names_are_per_layer():
    F = TorchFrontend()
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    convs = [build_quietly(lambda: torch.nn.Linear(4, 4), F) for _ in range(2)]
    assert torch.equal(torch.rand(3), expected)  # the dropout masks that follow stay gnnbench's
    assert list(named_params(convs)) == ["conv0.weight", "conv0.bias", "conv1.weight", "conv1.bias"]
    assert layer_values({"conv0.weight": 1, "conv1.weight": 2, "conv1.bias": 3}, 1) == {"weight": 2, "bias": 3}
