"""GraphSAGE with mean aggregation (Hamilton et al., NeurIPS 2017).

.. math::
    x_i' = W_r x_i + W_n \\,\\mathrm{mean}_{j \\in N(i)} x_j + b

Aggregation is ``spmm(reduce=mean)`` over A, before the neighbour transform
(PyG's ``SAGEConv`` order); no normalisation of the output.

Defaults (common node-classification settings): 2 layers, hidden 64,
dropout 0.5, lr 0.01, weight decay 5e-4.
"""
from __future__ import annotations

from .base import GNN, Conv, Hyperparameters, glorot, zeros


class SAGE(GNN):
    name = "sage"
    defaults = Hyperparameters(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4)

    def conv(self, index, in_dim, out_dim):
        def forward(F, p, graph, x):
            mean = F.spmm(graph, x, None, reduce="mean")
            out = F.add(F.matmul(x, p["weight_root"]), F.matmul(mean, p["weight_neigh"]))
            return F.add(out, p["bias"])

        return Conv({
            "weight_root": ((in_dim, out_dim), glorot),
            "weight_neigh": ((in_dim, out_dim), glorot),
            "bias": ((out_dim,), zeros),
        }, forward)
