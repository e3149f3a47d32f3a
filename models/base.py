"""The one layer loop every model shares; subclasses only build their convolutions.

Models never import a framework: they call the frontend op set ``F`` (see
``gnnbench/frameworks/torch_frontend.py``) and the system API through it.
Parameters are created here as NumPy arrays from a seeded generator, so the
initial weights are identical for every system and framework.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .native import Native

__all__ = ["GNN", "Conv", "Hyperparameters", "glorot", "zeros", "dst_rows", "is_block"]


def dst_rows(graph, x):
    """The destinations' rows of ``x``: ``x[:num_dst]`` on a block, ``x`` itself on a square graph.

    Note [layers on blocks]
        On a sampled block (``num_src`` sources, the first ``num_dst`` of
        which are its destinations) a layer takes ``[S, F]`` input and gives
        ``[N, F]``. Aggregation reads all ``S`` rows; the terms of a
        destination's own features (SAGE's root weight, GIN's ``(1 + eps) x``,
        GAT's destination score) read its first ``N``. GCN needs no slice:
        blocks carry a self loop per destination and ``gcn_scales`` gives
        ``[N]`` destination and ``[S]`` source scales.
    """
    return x[:getattr(graph, "graph", graph).num_dst] if is_block(graph) else x


def is_block(graph) -> bool:
    """Whether ``graph`` (a bound one too) is a sampled block, not a square graph (Note [layers on blocks])."""
    return getattr(getattr(graph, "graph", graph), "is_block", False)


def glorot(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Glorot/Xavier uniform on the last two axes' fan-in and fan-out."""
    fan_in, fan_out = (shape[-2], shape[-1]) if len(shape) >= 2 else (shape[0], shape[0])
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, dtype=np.float32)


@dataclass(frozen=True)
class Hyperparameters:
    """Training settings; each model's defaults follow its paper (see the model's docstring)."""

    hidden: int
    layers: int = 2
    heads: int = 1
    dropout: float = 0.5
    lr: float = 0.01
    weight_decay: float = 5e-4
    epochs: int = 200
    #: GCN's normalisation, "node" or "edge" (Note [GCN as node scales] in models/gcn.py); None for the
    #: models it does not apply to, and then absent from :meth:`as_dict` (a row's identity)
    normalisation: str | None = None
    #: R-GCN's basis decomposition, the number of bases (None: one weight per relation); None for the models it
    #: does not apply to, and then absent from :meth:`as_dict`
    bases: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not (k in ("normalisation", "bases") and v is None)}


@dataclass
class Conv:
    """One graph convolution: its parameters (name -> shape, init) and its forward."""

    params: dict[str, tuple[tuple[int, ...], Callable]] = field(default_factory=dict)
    forward: Callable = None  # forward(F, p, graph, x) -> x; p maps short names to tensors


class GNN:
    """A stack of convolutions with dropout before each and an activation between them.

    Subclasses set :attr:`name`, :attr:`defaults`, :attr:`self_loops`,
    implement :meth:`conv` for layer ``i`` of ``in_dim -> out_dim``, and
    declare what the rest of gnnbench reads from a model: :attr:`dense`
    for verify's model check, :attr:`pyg` and :attr:`dgl` for the native
    baselines. ``models.MODELS`` lists the model; nothing else does.

    Args:
        in_dim: input feature width.
        out_dim: number of classes.
        hyper: hyperparameters (default: the model's :attr:`defaults`).
    """

    name = "gnn"
    defaults = Hyperparameters(hidden=16)
    #: whether the model aggregates over A + I (GCN, GAT) rather than A (GIN, SAGE)
    self_loops = False
    #: the forms of ``hyper.normalisation`` that compute the same function (Note [GCN as node scales]);
    #: verify compares them on every system (``model gcn-forms``, Note [model check])
    normalisations: tuple[str, ...] = ()
    #: whether the model is relational, on typed graphs (Note [typed and homogeneous models] in models/typed.py)
    typed = False
    #: the PyG and DGL layers that compute :meth:`conv` (Note [native counterparts] in models/native.py),
    #: or None where the library has none
    pyg: Native | None = None
    dgl: Native | None = None
    #: ``dense(T, A, x, p, index) -> x'``: layer ``index`` from the paper's equation on dense float64 torch
    #: tensors (``T`` is torch), ``A[i, j]`` counting the edges ``j -> i`` (a loop added where a node lacks
    #: one when :attr:`self_loops`) and ``p`` the layer's parameters by short name: the model check's oracle,
    #: written apart from :meth:`conv` (Note [model check] in gnnbench/check/model_check.py); None if absent
    dense: Callable | None = None

    def __init__(self, in_dim: int, out_dim: int, hyper: Hyperparameters | None = None):
        self.hyper = hyper or self.defaults
        self.in_dim, self.out_dim = in_dim, out_dim
        self.convs = [self.conv(i, *dims) for i, dims in enumerate(self.layer_dims())]

    @classmethod
    def for_dataset(cls, dataset, hyper: Hyperparameters | None = None) -> "GNN":
        """The model for ``dataset``'s features and classes (``models.check_typed`` says first whether it fits,
        Note [typed and homogeneous models] in models/typed.py)."""
        return cls(dataset.features.shape[1], dataset.num_classes, hyper)

    def features(self, F, dataset):
        """The model's input: the node features as one tensor (a typed model takes one per node type)."""
        return F.tensor(dataset.features)

    def layer_dims(self) -> list[tuple[int, int]]:
        widths = [self.in_dim] + [self.hyper.hidden] * (self.hyper.layers - 1) + [self.out_dim]
        return list(zip(widths[:-1], widths[1:]))

    def conv(self, index: int, in_dim: int, out_dim: int) -> Conv:
        raise NotImplementedError

    def head_shape(self, index: int, out_dim: int) -> tuple[int, int]:
        """``(heads, width per head)`` of layer ``index``: one head of the layer's width unless the model has heads."""
        return 1, out_dim

    def activation(self, F, x):
        """Between layers, on a convolution's output, which nothing else holds: so it may be overwritten (Note
        [activation in place] in gnnbench/frameworks/torch_frontend.py)."""
        return F.relu(x, overwrite=True)

    def init_params(self, seed: int) -> dict[str, np.ndarray]:
        """Initial parameters as NumPy arrays, identical for every system given the seed."""
        rng = np.random.default_rng(seed)
        return {f"conv{i}.{name}": init(rng, shape)
                for i, conv in enumerate(self.convs) for name, (shape, init) in conv.params.items()}

    def forward(self, F, params: dict[str, Any], graph, x, training: bool):
        """Logits ``[N, classes]``; ``graph`` is one graph, or a list of blocks, layer ``i`` on block ``i``
        (outermost first; Note [layers on blocks])."""
        last = len(self.convs) - 1
        blocks = graph if isinstance(graph, (list, tuple)) else None
        for i, conv in enumerate(self.convs):
            x = F.dropout(x, self.hyper.dropout, training)
            p = {name: params[f"conv{i}.{name}"] for name in conv.params}
            x = conv.forward(F, p, graph if blocks is None else blocks[i], x)
            if i < last:
                x = self.activation(F, x)
        return x
