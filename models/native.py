"""A model's native counterparts: the PyG and DGL layers that compute its convolution, named in data.

A model declares them beside its own convolution (``pyg = Native(...)``, ``dgl = Native(...)`` in
``models/gcn.py``), so that adding a model is its file and its entry in ``models.MODELS``. Models import no
framework: a counterpart names its library's layer class and constructor arguments as strings and numbers,
and :mod:`gnnbench.peers` builds it (Note [native model parity] there).

Note [native counterparts]
    A counterpart is read as the call it describes, ``layer("GCNConv", IN, OUT, cached=True)`` being
    ``torch_geometric.nn.GCNConv(in_dim, out_dim, cached=True)`` for each layer. What changes from layer
    to layer is a :class:`Dim` marker, resolved from the layer's widths and the model's hyperparameters
    (:meth:`gnnbench.models.GNN.head_shape` for the heads); :data:`MLP` is GIN's two-layer network.
    ``params`` maps each of the layer's parameters to the gnnbench value copied into it, ``.T`` when the
    library stores it transposed (``torch.nn.Linear``'s ``[out, in]``). A model without a counterpart
    for a library does not run on that library's baseline, which says so in one line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Native", "Layer", "Blocks", "Typed", "Dim", "layer", "IN", "OUT", "HIDDEN", "HEADS", "HEAD_WIDTH", "MLP",
           "IN_SRC", "IN_DST", "RELATIONS", "BASES"]


@dataclass(frozen=True)
class Dim:
    """A size that changes from layer to layer, resolved by the peers when they build each layer."""

    name: str


#: the layer's input and output widths, the model's hidden width, and the layer's heads and width per head
IN, OUT, HIDDEN, HEADS, HEAD_WIDTH = Dim("in"), Dim("out"), Dim("hidden"), Dim("heads"), Dim("head_width")
#: a relational layer's sizes: a relation's source and destination widths, the relations, the bases (or None)
IN_SRC, IN_DST, RELATIONS, BASES = Dim("in_src"), Dim("in_dst"), Dim("relations"), Dim("bases")


@dataclass(frozen=True)
class _MLP:
    """``Sequential(Linear(IN, HIDDEN), ReLU(), Linear(HIDDEN, OUT))``, GIN's network per convolution."""


MLP = _MLP()


@dataclass(frozen=True)
class Layer:
    """A library layer's class name (in ``torch_geometric.nn`` or ``dgl.nn``) and constructor arguments."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def layer(name: str, *args: Any, **kwargs: Any) -> Layer:
    """``layer("GCNConv", IN, OUT, cached=True)``: the constructor call, written as it is called."""
    return Layer(name, args, kwargs)


@dataclass(frozen=True)
class Blocks:
    """How a PyG layer runs on a sampled block of ``S`` sources and ``N`` destinations (Note [layers on blocks]).

    Args:
        pair (bool): the layer takes PyG's bipartite ``(x, x[:N])`` with ``size=(S, N)``; a layer that takes
            no pair runs over all ``S`` rows and the first ``N`` of its output are kept (default: ``True``).
        edge_weight (str, optional): the block's :class:`~gnnbench.runtime.graph.Graph` method whose values
            the layer takes as edge weights, such as ``"gcn_norm"`` (default: ``None``).
        changes (Mapping): constructor keywords that differ on blocks (default: none).
    """

    pair: bool = True
    edge_weight: str | None = None
    changes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Typed:
    """How a library runs a relational model's layer (Note [typed natives] in gnnbench/peers/typed.py).

    Args:
        form (str): ``"per_relation"``: ``wrapper`` (PyG's ``HeteroConv``, DGL's ``HeteroGraphConv``) over one
            ``layer`` per relation, its parameters those of relation ``k`` prefixed ``r{k}.`` in gnnbench;
            ``"homogeneous"``: one ``layer`` on the homogeneous form, with each edge's relation (PyG's
            ``RGCNConv``, DGL's ``RelGraphConv``).
        wrapper (str, optional): the heterogeneous wrapper's class name (per_relation).
        wrapper_kwargs (Mapping): its constructor keywords.
        bases_params (Mapping, optional): the parameter map when the model uses a basis decomposition.
        bases_changes (Mapping): constructor keywords that differ when it does (DGL's ``regularizer="basis"``).
        edge_norm (bool): the layer takes R-GCN's ``1 / |N_r(i)|`` as a per-edge weight (DGL's ``norm``).
        head (Mapping, optional): a ``torch.nn.Linear`` on the target type after the layers, native name ->
            gnnbench name (R-GAT's output layer).
    """

    form: str
    wrapper: str | None = None
    wrapper_kwargs: Mapping[str, Any] = field(default_factory=dict)
    bases_params: Mapping[str, str] | None = None
    bases_changes: Mapping[str, Any] = field(default_factory=dict)
    edge_norm: bool = False
    head: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Native:
    """One library's layer for a model's convolution (Note [native counterparts]).

    Args:
        layer (Layer): the layer's class and constructor arguments.
        params (Mapping[str, str]): the layer's parameter name -> gnnbench's name, ``.T`` when transposed.
        blocks (Blocks): how it runs on sampled blocks, where the library's call differs (default: as a pair).
    """

    layer: Layer
    params: Mapping[str, str]
    blocks: Blocks = Blocks()
    #: how a relational model's layer runs in the library (None: a homogeneous model)
    typed: Typed | None = None
