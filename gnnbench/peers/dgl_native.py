"""``dgl-native``: gnnbench's four models built from DGL's own ``dgl.nn`` layers.

=========  ============================================================  ===========================
model      DGL layer (all with ``allow_zero_in_degree=True``)            parameters (gnnbench -> DGL)
=========  ============================================================  ===========================
gcn        ``GraphConv(in, out, norm="both")``                           ``weight``, ``bias`` as is
gat        ``GATConv(in, D, H, feat_drop=0, attn_drop=0,                 ``weight.T -> fc.weight``,
           negative_slope=0.2)`` (output ``[N, H, D]`` flattened)        ``att_src -> attn_l``,
                                                                         ``att_dst -> attn_r``, ``bias``
gin        ``GINConv(Sequential(Linear, ReLU, Linear), "sum",            ``weight1.T -> apply_func.0.weight``,
           init_eps=0)``                                                 ``bias1``, ``weight2``, ``bias2``
sage       ``SAGEConv(in, out, "mean")``                                 ``weight_root.T -> fc_self.weight``,
                                                                         ``bias -> fc_self.bias``,
                                                                         ``weight_neigh.T -> fc_neigh.weight``
=========  ============================================================  ===========================

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

from ._layers import build_convs, check_model, gat_shape, layer_loop, named_params

__all__ = ["build", "build_blocks"]

#: this baseline as the registry lists it, read there without importing this module (Note [native baseline
#: discovery] in gnnbench.runtime.registry)
NATIVE_BASELINE = {"name": "dgl-native", "requires": ("dgl", "pandas"), "position": 1,
                   "summary": "DGL's own GraphConv/GATConv/GINConv/SAGEConv models (framework baseline)",
                   "version_of": "dgl"}


def _conv(model, index: int, in_dim: int, out_dim: int, p: dict[str, np.ndarray]):
    from dgl.nn import GATConv, GINConv, GraphConv, SAGEConv

    if model.name == "gcn":
        conv = GraphConv(in_dim, out_dim, norm="both", weight=True, bias=True, allow_zero_in_degree=True)
        return conv, {"weight": p["weight"], "bias": p["bias"]}
    if model.name == "gat":
        heads, width = gat_shape(model, index, out_dim)
        conv = GATConv(in_dim, width, heads, feat_drop=0.0, attn_drop=0.0, negative_slope=0.2, residual=False,
                       activation=None, allow_zero_in_degree=True, bias=True)
        return conv, {"fc.weight": p["weight"].T, "attn_l": p["att_src"], "attn_r": p["att_dst"],
                      "bias": p["bias"]}
    if model.name == "gin":
        hidden = model.hyper.hidden
        mlp = torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, out_dim))
        conv = GINConv(mlp, aggregator_type="sum", init_eps=0.0, learn_eps=False)
        return conv, {"apply_func.0.weight": p["weight1"].T, "apply_func.0.bias": p["bias1"],
                      "apply_func.2.weight": p["weight2"].T, "apply_func.2.bias": p["bias2"]}
    conv = SAGEConv(in_dim, out_dim, "mean", bias=True)
    return conv, {"fc_self.weight": p["weight_root"].T, "fc_self.bias": p["bias"],
                  "fc_neigh.weight": p["weight_neigh"].T}


def build(model, graph, initial_params: dict[str, np.ndarray], F, x: Any
          ) -> tuple[dict[str, torch.Tensor], Callable[[bool], Any]]:
    """DGL convolutions for ``model`` with gnnbench's initial values; see :func:`gnnbench.peers.build_native`."""
    from .dgl_shim import dgl

    check_model(model, "dgl-native")
    src, dst = graph.edges()
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=graph.num_nodes)
    g.create_formats_()
    g = g.to(F.device)
    convs = build_convs(model, initial_params, F, _conv)

    def call(i, conv, h):
        out = conv(g, h)
        return out.reshape(out.shape[0], -1) if model.name == "gat" else out

    return named_params(convs), layer_loop(model, F, convs, x, call)


def build_blocks(model, initial_params: dict[str, np.ndarray], F):
    """The same convolutions for sampled blocks (Note [sampled batching] in gnnbench.run.sampled).

    Returns ``(params, to_blocks, forward)``: ``to_blocks(graphs)`` turns gnnbench's rectangular graphs into
    ``dgl.create_block`` blocks (the per-block preparation), ``forward(blocks, x, training)`` runs the layers,
    layer ``i`` on block ``i``; DGL's layers take a block's destination features as its first rows.
    """
    from .dgl_shim import dgl

    check_model(model, "dgl-native")
    convs = build_convs(model, initial_params, F, _conv)

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
        def call(i, conv, h):
            out = conv(blocks[i], h)
            return out.reshape(out.shape[0], -1) if model.name == "gat" else out

        return layer_loop(model, F, convs, x, call)(training)

    return named_params(convs), to_blocks, forward
