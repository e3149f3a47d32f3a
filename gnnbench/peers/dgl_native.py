"""``dgl-native``: gnnbench's models built from DGL's own ``dgl.nn`` layers.

Each model names its DGL layer, the layer's constructor arguments and where
gnnbench's parameter values go in it, in its own file (``GCN.dgl`` in
models/gcn.py; Note [native counterparts] in models/native.py).

The DGL graph is ``dgl.graph((src, dst))`` in gnnbench's canonical edge order
(DGL edge id == canonical id), built once with all sparse formats
materialised; the layer loop is Note [native model parity] in
:mod:`gnnbench.peers`. DGL is imported through :mod:`gnnbench.peers.dgl_shim`.

Differences that remain:

* GCN: ``norm="both"`` is exactly gnnbench's ``1 / sqrt(d_in(i) d_out(j))``
  (both clamp degrees at 1), but DGL applies it as two node-wise scalings,
  ``D_in^-1/2 A (D_out^-1/2 X W)``, instead of an edge weight, and multiplies by
  ``W`` before aggregating only when that narrows the features (else after):
  equal to rounding, with a different cost profile (no ``[E]`` weight
  tensor, an extra ``N x F`` scaling per layer).
* SAGE: DGL applies ``fc_neigh`` before the mean when that narrows the
  features (``lin_before_mp``); mean and linear map commute, so only
  rounding differs.
* ``Linear`` weights are stored ``[out, in]``; the values are gnnbench's,
  transposed.
* DGL uses libxsmm for float32 sum aggregation on x86 when available (its
  default); nothing here changes that.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ._layers import build_convs, counterpart, layer_loop, named_params

__all__ = ["build", "build_blocks"]

#: this baseline as the registry lists it, read there without importing this module (Note [native baseline
#: discovery] in gnnbench.runtime.registry)
NATIVE_BASELINE = {"name": "dgl-native", "requires": ("dgl", "pandas"), "position": 1,
                   "summary": "DGL's own GraphConv/GATConv/GINConv/SAGEConv models (framework baseline)",
                   "version_of": "dgl"}
#: the model attribute that declares a model's layer in this library (Note [native counterparts] in
#: models/native.py)
COUNTERPART = "dgl"


def layer_library():
    """``dgl.nn``, imported through the shim (once per process; NativeBaseline.load imports it untimed)."""
    import importlib

    from .dgl_shim import dgl  # noqa: F401 - DGL only through its shim (Note [DGL import shim])

    return importlib.import_module("dgl.nn")


def _flat(out):
    """A layer's output as ``[N, out]``: DGL's GATConv gives ``[N, heads, width]``, its heads concatenated here."""
    return out.reshape(out.shape[0], -1)


def build(model, graph, initial_params: dict[str, np.ndarray], F, x: Any
          ) -> tuple[dict[str, torch.Tensor], Callable[[bool], Any]]:
    """DGL convolutions for ``model`` with gnnbench's initial values; see :func:`gnnbench.peers.build_native`."""
    if getattr(model, "typed", False):  # a relational model (Note [typed natives] in gnnbench.peers.typed)
        from .typed import build_typed

        counterpart(model, COUNTERPART, "dgl-native")
        return build_typed(COUNTERPART, layer_library(), model, graph, initial_params, F, x)
    native = counterpart(model, COUNTERPART, "dgl-native")
    from .dgl_shim import dgl

    src, dst = graph.edges()
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=graph.num_nodes)
    g.create_formats_()
    g = g.to(F.device)
    convs = build_convs(model, initial_params, F, native, layer_library())
    return named_params(convs), layer_loop(model, F, convs, x, lambda i, conv, h: _flat(conv(g, h)))


def build_blocks(model, initial_params: dict[str, np.ndarray], F):
    """The same convolutions for sampled blocks (Note [sampled batching] in gnnbench.run.sampled).

    Returns ``(params, to_blocks, forward)``: ``to_blocks(graphs)`` turns gnnbench's rectangular graphs into
    ``dgl.create_block`` blocks (the per-block preparation), ``forward(blocks, x, training)`` runs the layers,
    layer ``i`` on block ``i``; DGL's layers take a block's destination features as its first rows.
    """
    if getattr(model, "typed", False):  # Note [typed natives on blocks] in gnnbench.peers.typed
        from .typed import build_typed_blocks

        counterpart(model, COUNTERPART, "dgl-native")
        return build_typed_blocks(COUNTERPART, layer_library(), model, initial_params, F)
    native = counterpart(model, COUNTERPART, "dgl-native")
    from .dgl_shim import dgl

    convs = build_convs(model, initial_params, F, native, layer_library())

    def to_blocks(graphs):
        out = []
        for g in graphs:
            indptr = torch.from_numpy(np.array(g.indptr, dtype=np.int64))  # a Graph's arrays are read-only
            indices = torch.from_numpy(np.array(g.indices, dtype=np.int64))
            eids = torch.arange(g.num_edges, dtype=torch.int64)
            block = dgl.create_block(("csc", (indptr, indices, eids)), num_src_nodes=g.num_src,
                                     num_dst_nodes=g.num_nodes)
            out.append(block.to(F.device))
        return out

    def forward(blocks, x, training: bool):
        return layer_loop(model, F, convs, x, lambda i, conv, h: _flat(conv(blocks[i], h)))(training)

    return named_params(convs), to_blocks, forward
