"""gnnbench/peers/_layers.py: a model's declared layers built per layer (Note [native counterparts]), and
gnnbench's initial values copied into them, loudly or not at all."""
from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from gnnbench.errors import UserError
from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.models import GAT, GCN
from gnnbench.models.base import Hyperparameters
from gnnbench.models.native import HEAD_WIDTH, HEADS, IN, MLP, OUT, Native, layer
from gnnbench.peers._layers import build_convs, build_quietly, layer_values, load, named_params, native_values


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


class _Recorder(torch.nn.Module):
    """A parameterless stand-in for a library layer: it keeps the arguments it was built with."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.args, self.kwargs = args, kwargs


def test_a_declared_layer_is_built_per_layer_with_its_sizes_resolved():
    nn = types.SimpleNamespace(__name__="fakelib.nn", Recorder=_Recorder)
    model = GAT(5, 3, Hyperparameters(hidden=4, heads=2))
    declared = Native(layer("Recorder", IN, HEAD_WIDTH, heads=HEADS, out=OUT, slope=0.2, net=MLP), {})
    first, last = build_convs(model, model.init_params(0), TorchFrontend(), declared, nn, {"slope": 0.1})
    assert first.args == (5, 4) and first.kwargs["heads"] == 2 and first.kwargs["out"] == 8   # 2 heads x 4
    assert last.args == (8, 3) and last.kwargs["heads"] == 1 and last.kwargs["slope"] == 0.1   # one head out
    assert [type(m).__name__ for m in last.kwargs["net"]] == ["Linear", "ReLU", "Linear"]
    assert (last.kwargs["net"][0].in_features, last.kwargs["net"][2].out_features) == (8, 3)


def test_declared_values_are_copied_by_native_name_and_transposed_where_marked():
    values = {"weight": np.arange(6.0).reshape(3, 2), "bias": np.zeros(2)}
    mapped = native_values({"lin.weight": "weight.T", "bias": "bias"}, values)
    assert mapped["lin.weight"].shape == (2, 3) and mapped["bias"] is values["bias"]


def test_a_layer_the_library_lacks_is_one_line():
    model = GCN(4, 2)
    nn = types.SimpleNamespace(__name__="fakelib.nn")
    with pytest.raises(UserError, match=r"^model 'gcn' names the layer fakelib\.nn\.NoSuchConv, which this version "
                                        r"of fakelib does not have$"):
        build_convs(model, model.init_params(0), TorchFrontend(), Native(layer("NoSuchConv", IN, OUT), {}), nn)
