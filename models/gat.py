"""Graph attention network (Veličković et al., ICLR 2018).

.. math::
    \\alpha_{ij} = \\mathrm{softmax}_j\\big(\\mathrm{LeakyReLU}(a_s^\\top W x_j + a_d^\\top W x_i)\\big),
    \\qquad x_i' = \\Vert_{h} \\sum_j \\alpha^h_{ij} W^h x_j

computed through the system API's ``gat_aggregate`` (fused by systems that
can, composed from ``sddmm``/``edge_softmax``/``spmm`` otherwise), over A + I.

Defaults (paper, Cora): 2 layers, 8 heads x 8 hidden, ELU, dropout 0.6 on
every layer's input, one output head, lr 0.005, weight decay 5e-4.
Attention dropout is off for every system so that fused and composed kernels
compute the same function (see ``systems/dgnn``).
"""
from __future__ import annotations

from .base import GNN, Conv, Hyperparameters, dst_rows, glorot, zeros
from .native import HEAD_WIDTH, HEADS, IN, Native, layer

NEGATIVE_SLOPE = 0.2


class GAT(GNN):
    name = "gat"
    defaults = Hyperparameters(hidden=8, heads=8, dropout=0.6, lr=0.005, weight_decay=5e-4)
    self_loops = True
    pyg = Native(layer("GATConv", IN, HEAD_WIDTH, heads=HEADS, concat=True, negative_slope=NEGATIVE_SLOPE, dropout=0.0,
                       add_self_loops=False, bias=True),
                 {"lin.weight": "weight.T", "att_src": "att_src", "att_dst": "att_dst", "bias": "bias"})
    dgl = Native(layer("GATConv", IN, HEAD_WIDTH, HEADS, feat_drop=0.0, attn_drop=0.0, negative_slope=NEGATIVE_SLOPE,
                       residual=False, activation=None, allow_zero_in_degree=True, bias=True),
                 {"fc.weight": "weight.T", "attn_l": "att_src", "attn_r": "att_dst", "bias": "bias"})

    def dense(self, T, A, x, p, index):
        z = (x @ p["weight"]).reshape(len(x), *p["att_src"].shape[1:])                      # [j, heads, width]
        score_src, score_dst = (z * p["att_src"]).sum(-1), (z * p["att_dst"]).sum(-1)
        e = T.nn.functional.leaky_relu(score_dst[:, None] + score_src[None, :], NEGATIVE_SLOPE)  # [i, j, heads]
        e = e.masked_fill(A[:, :, None] == 0, -T.inf)
        weight = A[:, :, None] * T.exp(e - e.amax(1, keepdim=True).nan_to_num(neginf=0.0))  # A: parallel edges
        alpha = weight / weight.sum(1, keepdim=True).clamp(min=1e-300)
        return T.einsum("ijh,jhc->ihc", alpha, z).reshape(len(x), -1) + p["bias"]

    def head_shape(self, index, out_dim):
        return (1, out_dim) if index == self.hyper.layers - 1 else (self.hyper.heads, self.hyper.hidden)

    def layer_dims(self):
        h = self.hyper
        widths = [self.in_dim] + [h.hidden * h.heads] * (h.layers - 1) + [self.out_dim]
        return list(zip(widths[:-1], widths[1:]))

    def activation(self, F, x):
        return F.elu(x)

    def conv(self, index, in_dim, out_dim):
        heads, width = self.head_shape(index, out_dim)

        def forward(F, p, graph, x):
            h = F.reshape(F.matmul(x, p["weight"]), (-1, heads, width))
            score_src = F.sum(F.mul(h, p["att_src"]), -1)
            score_dst = F.sum(F.mul(dst_rows(graph, h), p["att_dst"]), -1)  # Note [layers on blocks]
            out = F.gat_aggregate(graph, h, score_src, score_dst, NEGATIVE_SLOPE)
            return F.add(F.reshape(out, (-1, heads * width)), p["bias"])

        return Conv({
            "weight": ((in_dim, heads * width), glorot),
            "att_src": ((1, heads, width), glorot),
            "att_dst": ((1, heads, width), glorot),
            "bias": ((heads * width,), zeros),
        }, forward)
