"""What both native baselines share: copying gnnbench's parameters in, and the layer loop.

See Note [native model parity] in :mod:`gnnbench.peers`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ..errors import UserError

MODELS = ("gcn", "gat", "gin", "sage")


def check_model(model, system: str) -> None:
    if model.name not in MODELS:
        raise UserError(f"'{system}' has no native '{model.name}' model; it builds: {', '.join(MODELS)}")


def load(module: torch.nn.Module, values: dict[str, np.ndarray], F) -> None:
    """Copy gnnbench's initial values into ``module``'s parameters and move it to the frontend's device/dtype.

    Args:
        module: one convolution of the native library.
        values: native parameter name -> array in the native layout (already transposed).
        F: the torch frontend.
    """
    module.to(device=F.device, dtype=F.dtype)
    params = dict(module.named_parameters())
    missing, extra = set(params) - set(values), set(values) - set(params)
    if missing or extra:  # a library version with another layout: fail loudly rather than train from noise
        raise RuntimeError(f"{type(module).__name__} parameters {sorted(params)} do not match the "
                           f"gnnbench layout {sorted(values)}; missing {sorted(missing)}, unexpected {sorted(extra)}")
    with torch.no_grad():
        for name, value in values.items():
            target = params[name]
            source = torch.from_numpy(np.ascontiguousarray(value)).to(device=F.device, dtype=F.dtype)
            if tuple(source.shape) != tuple(target.shape):
                raise RuntimeError(f"{type(module).__name__}.{name} has shape {tuple(target.shape)}; the gnnbench "
                                   f"value has shape {tuple(source.shape)}")
            target.copy_(source)


def build_quietly(make: Callable[[], Any], F) -> Any:
    """``make()`` without advancing torch's global RNG.

    The libraries' layers draw their own random initial values when built;
    those are overwritten by :func:`load`, and forking the RNG keeps the
    dropout masks that follow identical to gnnbench's models' for one seed.
    """
    devices = [F.device] if F.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        return make()


def build_convs(model, initial: dict[str, np.ndarray], F, conv: Callable) -> list[torch.nn.Module]:
    """Every layer's convolution, built by ``conv(model, index, in_dim, out_dim, values) -> (module, native
    values)`` without advancing torch's RNG (:func:`build_quietly`) and loaded with gnnbench's initial values."""
    convs = []
    for i, (in_dim, out_dim) in enumerate(model.layer_dims()):
        values = layer_values(initial, i)
        module, native = build_quietly(lambda: conv(model, i, in_dim, out_dim, values), F)
        load(module, native, F)
        convs.append(module)
    return convs


def layer_values(initial: dict[str, np.ndarray], index: int) -> dict[str, np.ndarray]:
    """Layer ``index``'s gnnbench parameters by short name (``weight``, ``att_src``, ...)."""
    prefix = f"conv{index}."
    return {k[len(prefix):]: v for k, v in initial.items() if k.startswith(prefix)}


def named_params(convs: list[torch.nn.Module]) -> dict[str, torch.Tensor]:
    """Trainable tensors as ``conv{i}.{native name}``."""
    return {f"conv{i}.{name}": p for i, conv in enumerate(convs) for name, p in conv.named_parameters()}


def layer_loop(model, F, convs: list[torch.nn.Module], x: Any, call: Callable) -> Callable[[bool], Any]:
    """``forward(training)``: dropout, conv, activation between layers, as ``gnnbench.models.base.GNN``.

    ``call(i, conv, h)`` applies convolution ``i`` and returns ``[N, out]``.
    """
    last = len(convs) - 1
    dropout = model.hyper.dropout

    def forward(training: bool):
        for conv in convs:
            conv.train(training)
        h = x
        for i, conv in enumerate(convs):
            h = F.dropout(h, dropout, training)
            h = call(i, conv, h)
            if i < last:
                h = model.activation(F, h)
        return h

    return forward


def gat_shape(model, index: int, out_dim: int) -> tuple[int, int]:
    """``(heads, width)`` of GAT layer ``index``: one head of ``out_dim`` on the last layer."""
    last = index == model.hyper.layers - 1
    return (1, out_dim) if last else (model.hyper.heads, model.hyper.hidden)
