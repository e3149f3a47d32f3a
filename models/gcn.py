"""Graph convolutional network (Kipf & Welling, ICLR 2017).

.. math::
    X' = \\hat{D}^{-1/2} (A + I) \\hat{D}^{-1/2} X W + b

The normalisation is an edge weight computed once per graph
(:meth:`gnnbench.runtime.graph.Graph.gcn_norm`); aggregation is ``spmm(reduce=sum)``
with those weights, after the dense transform (the narrower width).

Defaults (paper): 2 layers, hidden 16, dropout 0.5, lr 0.01, weight decay 5e-4
(applied to every parameter here; the paper applies it to the first layer only).
"""
from __future__ import annotations

from .base import GNN, Conv, Hyperparameters, glorot, zeros


class GCN(GNN):
    name = "gcn"
    defaults = Hyperparameters(hidden=16, dropout=0.5, lr=0.01, weight_decay=5e-4)
    self_loops = True

    def conv(self, index, in_dim, out_dim):
        def forward(F, p, graph, x):
            norm = F.graph_tensor(graph, "gcn_norm", graph.graph.gcn_norm())
            return F.add(F.spmm(graph, F.matmul(x, p["weight"]), norm, reduce="sum"), p["bias"])

        return Conv({"weight": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}, forward)
