"""What both native baselines share: a model's declared layers built and loaded with gnnbench's values, and
the layer loop.

See Note [native model parity] in :mod:`gnnbench.peers` and Note [native counterparts] in models/native.py.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import torch

from ..errors import UserError

#: each library's name as messages give it, by the model attribute that declares its counterpart
LIBRARIES = {"pyg": "PyG", "dgl": "DGL"}


def counterpart(model, library: str, system: str):
    """``model``'s declared layer in ``library`` (its ``pyg`` or ``dgl``), or one line saying it declares none."""
    native = getattr(model, library, None)
    if native is None:
        raise UserError(f"model '{model.name}' declares no {LIBRARIES[library]} layer (its '{library}' is None), so "
                        f"'{system}' cannot build it; name one as models/gcn.py does (Note [native counterparts] in "
                        f"models/native.py)")
    return native


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


def build_convs(model, initial: dict[str, np.ndarray], F, native, nn, changes: Mapping[str, Any] | None = None
                ) -> list[torch.nn.Module]:
    """Every layer of ``model`` as its declared counterpart ``native`` (a :class:`models.native.Native`) from the
    library module ``nn`` (``torch_geometric.nn``, ``dgl.nn``), built without advancing torch's RNG
    (:func:`build_quietly`) and loaded with gnnbench's initial values; ``changes`` replace constructor keywords."""
    convs = []
    for i, (in_dim, out_dim) in enumerate(model.layer_dims()):
        module = build_quietly(lambda: _construct(native.layer, nn, model, i, in_dim, out_dim, changes or {}), F)
        load(module, native_values(native.params, layer_values(initial, i)), F)
        convs.append(module)
    return convs


def _construct(declared, nn, model, index: int, in_dim: int, out_dim: int, changes: Mapping[str, Any]):
    """The constructor call ``declared`` (a :class:`models.native.Layer`) describes, for layer ``index``."""
    from gnnbench.models.native import MLP, Dim

    heads, head_width = model.head_shape(index, out_dim)
    hidden = model.hyper.hidden
    sizes = {"in": in_dim, "out": out_dim, "hidden": hidden, "heads": heads, "head_width": head_width}

    def value(v):
        if isinstance(v, Dim):
            return sizes[v.name]
        if v is MLP:
            return torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, out_dim))
        return v

    cls = getattr(nn, declared.name, None)
    if cls is None:
        raise UserError(f"model '{model.name}' names the layer {nn.__name__}.{declared.name}, which this version "
                        f"of {nn.__name__.split('.')[0]} does not have")
    kwargs = {**declared.kwargs, **changes}
    return cls(*map(value, declared.args), **{k: value(v) for k, v in kwargs.items()})


def native_values(params: Mapping[str, str], values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A layer's gnnbench values by its native parameter names, ``params`` mapping native name -> gnnbench name
    (``.T``: transposed)."""
    return {native: values[ours[:-2]].T if ours.endswith(".T") else values[ours] for native, ours in params.items()}


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
