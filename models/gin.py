"""Graph isomorphism network, GIN-0 (Xu et al., ICLR 2019).

.. math::
    x_i' = \\mathrm{MLP}\\big((1 + \\epsilon)\\, x_i + \\sum_{j \\in N(i)} x_j\\big), \\quad \\epsilon = 0

with a two-layer MLP (Linear, ReLU, Linear) per convolution; aggregation is
``spmm(reduce=sum)`` over A (no self loops: the node's own term is explicit).

Defaults (common node-classification settings, as PyG's examples): 2 layers,
hidden 64, dropout 0.5, lr 0.01, weight decay 5e-4. With ``epsilon = 0`` the
self term is ``x`` itself: multiplying by 1.0 would cost a full ``[N, F]``
pass forward and backward for nothing (Note [fused dense ops] in
``gnnbench/frameworks/torch_frontend.py``).
"""
from __future__ import annotations

from .base import GNN, Conv, Hyperparameters, dst_rows, glorot, zeros
from .native import MLP, Native, layer

EPSILON = 0.0


class GIN(GNN):
    name = "gin"
    defaults = Hyperparameters(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4)
    pyg = Native(layer("GINConv", MLP, eps=EPSILON, train_eps=False),
                 {"nn.0.weight": "weight1.T", "nn.0.bias": "bias1", "nn.2.weight": "weight2.T", "nn.2.bias": "bias2"})
    dgl = Native(layer("GINConv", MLP, aggregator_type="sum", init_eps=EPSILON, learn_eps=False),
                 {"apply_func.0.weight": "weight1.T", "apply_func.0.bias": "bias1",
                  "apply_func.2.weight": "weight2.T", "apply_func.2.bias": "bias2"})

    def dense(self, T, A, x, p, index):
        h = T.relu(((1.0 + EPSILON) * x + A @ x) @ p["weight1"] + p["bias1"])
        return h @ p["weight2"] + p["bias2"]

    def conv(self, index, in_dim, out_dim):
        hidden = self.hyper.hidden

        def forward(F, p, graph, x):
            agg = F.spmm(graph, x, None, reduce="sum")
            root = dst_rows(graph, x)  # Note [layers on blocks]
            h = F.add(root if EPSILON == 0.0 else F.mul(root, 1.0 + EPSILON), agg)  # GIN-0: no identity multiply
            h = F.relu(F.linear(h, p["weight1"], p["bias1"]))
            return F.linear(h, p["weight2"], p["bias2"])

        return Conv({
            "weight1": ((in_dim, hidden), glorot), "bias1": ((hidden,), zeros),
            "weight2": ((hidden, out_dim), glorot), "bias2": ((out_dim,), zeros),
        }, forward)
