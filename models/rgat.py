"""Relational graph attention network, R-GAT: MLPerf Training's GNN model.

.. math::
    h_i' = \\sum_{r:\\ \\mathrm{dst}(r) = \\mathrm{type}(i)} \\Big( \\Vert_{h}
           \\sum_{j \\in N_r(i)} \\alpha^{r,h}_{ij} W^{r,h}_{s} h_j \\Big) + b_r,
    \\quad \\alpha^{r,h}_{ij} = \\mathrm{softmax}_j\\big(\\mathrm{LeakyReLU}_{0.2}(a^{r,h}_s \\cdot W^{r,h}_s h_j
           + a^{r,h}_d \\cdot W^{r,h}_d h_i)\\big)

one GAT per relation on its bipartite view (PyG's ``GATConv((in_src, in_dst), hidden / heads, heads)`` with
no self loops, which a bipartite relation cannot have), summed over the relations into each type (PyG's
``HeteroConv(aggr="sum")``), LeakyReLU (slope 0.01) and dropout between layers, and a linear layer on the
target type's last hidden features for the logits, as MLPerf's reference (``rgnn.py`` on
graphlearn-for-pytorch). Each relation's attention is ``gat_aggregate`` on its view (fused by a system that can,
composed from sddmm, edge_softmax and spmm otherwise; Note [relations on the existing operators]). A node
with no edge of a relation gets that relation's bias only; a node type no relation reaches has no output, as
in ``HeteroConv``, and the relations from it are skipped in the next layer.

Defaults (MLPerf): 3 layers, hidden 512 over 4 heads (128 each), dropout 0.2, Adam at lr 0.001 without weight
decay. ``--hidden`` must be a multiple of ``--heads``.
"""
from __future__ import annotations

from gnnbench.errors import UserError

from .base import Conv, Hyperparameters, glorot, zeros
from .native import HEAD_WIDTH, HEADS, IN_DST, IN_SRC, Native, Typed, layer
from .typed import TypedGNN, destinations

_HEAD = {"weight": "lin.weight.T", "bias": "lin.bias"}

NEGATIVE_SLOPE = 0.2
#: the activation between layers: PyTorch's ``leaky_relu`` default slope, as MLPerf's reference
ACTIVATION_SLOPE = 0.01


class RGAT(TypedGNN):
    name = "rgat"
    defaults = Hyperparameters(hidden=512, layers=3, heads=4, dropout=0.2, lr=0.001, weight_decay=0.0, epochs=100)
    input_dropout = False  # MLPerf's reference drops out between layers only
    pyg = Native(layer("GATConv", (IN_SRC, IN_DST), HEAD_WIDTH, heads=HEADS, concat=True,
                       negative_slope=NEGATIVE_SLOPE, dropout=0.0, add_self_loops=False, bias=True),
                 {"lin_src.weight": "weight_src.T", "lin_dst.weight": "weight_dst.T", "att_src": "att_src",
                  "att_dst": "att_dst", "bias": "bias"},
                 typed=Typed("per_relation", "HeteroConv", {"aggr": "sum"}, head=_HEAD))
    dgl = Native(layer("GATConv", (IN_SRC, IN_DST), HEAD_WIDTH, HEADS, feat_drop=0.0, attn_drop=0.0,
                       negative_slope=NEGATIVE_SLOPE, residual=False, activation=None, allow_zero_in_degree=True,
                       bias=True),
                 {"fc_src.weight": "weight_src.T", "fc_dst.weight": "weight_dst.T", "attn_l": "att_src",
                  "attn_r": "att_dst", "bias": "bias"},
                 typed=Typed("per_relation", "HeteroGraphConv", {"aggregate": "sum"}, head=_HEAD))

    def __init__(self, schema, out_dim, hyper=None):
        hyper = hyper or self.defaults
        if hyper.hidden % hyper.heads:
            raise UserError(f"rgat's hidden width is split over its heads, so it must be a multiple of them "
                            f"(got hidden={hyper.hidden}, heads={hyper.heads})")
        super().__init__(schema, out_dim, hyper)

    def layer_dims(self):
        return [(self.in_dim, self.hyper.hidden)] * self.hyper.layers  # the classes come from the output layer

    def activation(self, F, x):
        return F.leaky_relu(x, ACTIVATION_SLOPE)

    def init_params(self, seed):
        params = super().init_params(seed)
        import numpy as np

        rng = np.random.default_rng(seed + 1)
        params["lin.weight"] = glorot(rng, (self.hyper.hidden, self.out_dim))
        params["lin.bias"] = zeros(rng, (self.out_dim,))
        return params

    def output(self, F, params, x):
        return F.linear(x[self.schema.target], params["lin.weight"], params["lin.bias"])

    def _reached(self, index):
        """The node types with features at the input of layer ``index`` (Note: unreached types drop out)."""
        present = set(self.schema.widths)
        for _ in range(index):
            present = {r.dst for r in self.schema.relations if r.src in present}
        return present

    def _widths(self, index):
        return dict(self.schema.widths) if index == 0 else {t: self.hyper.hidden for t in self.schema.widths}

    def dense(self, T, A, x, p, index):
        heads, width = self.hyper.heads, self.hyper.hidden // self.hyper.heads
        out = {}
        for k, r in enumerate(self.schema.relations):
            if r.src not in x or r.dst not in x:
                continue
            q = lambda name: p[f"r{k}.{name}"]  # noqa: E731
            zs = (x[r.src] @ q("weight_src")).reshape(len(x[r.src]), heads, width)
            zd = (x[r.dst] @ q("weight_dst")).reshape(len(x[r.dst]), heads, width)
            ss, sd = (zs * q("att_src")).sum(-1), (zd * q("att_dst")).sum(-1)
            e = T.nn.functional.leaky_relu(sd[:, None] + ss[None, :], NEGATIVE_SLOPE)       # [i, j, heads]
            e = e.masked_fill(A[k][:, :, None] == 0, -T.inf)
            weight = A[k][:, :, None] * T.exp(e - e.amax(1, keepdim=True).nan_to_num(neginf=0.0))
            alpha = weight / weight.sum(1, keepdim=True).clamp(min=1e-300)
            h = T.einsum("ijh,jhc->ihc", alpha, zs).reshape(len(x[r.dst]), -1) + q("bias")
            out[r.dst] = h if r.dst not in out else out[r.dst] + h
        return out

    def conv(self, index, in_dim, out_dim):
        heads, width = self.hyper.heads, self.hyper.hidden // self.hyper.heads
        widths, present = self._widths(index), self._reached(index)
        used = [k for k, r in enumerate(self.schema.relations) if r.src in present and r.dst in present]
        if not any(self.schema.relations[k].dst == self.schema.target for k in used):
            raise UserError(f"rgat layer {index + 1}: no relation reaches the target type '{self.schema.target}' "
                            f"from a type with features; the target would have no output")

        def forward(F, p, graph, x):
            out = {}
            for k in used:
                r = self.schema.relations[k]
                own = destinations(graph, r.dst, x[r.dst]) if r.dst in x else None
                if own is None:  # Note [typed layers on blocks]: no destination of this type
                    continue
                hd = F.reshape(F.matmul(own, p[f"r{k}.weight_dst"]), (-1, heads, width))
                if r.src not in x:  # a block without sources of this type: the relation's bias alone
                    h = F.add(F.mul(F.reshape(hd, (-1, heads * width)), 0.0), p[f"r{k}.bias"])
                    out[r.dst] = h if r.dst not in out else F.add(out[r.dst], h)
                    continue
                hs = F.reshape(F.matmul(x[r.src], p[f"r{k}.weight_src"]), (-1, heads, width))
                score_src = F.sum(F.mul(hs, p[f"r{k}.att_src"]), -1)
                score_dst = F.sum(F.mul(hd, p[f"r{k}.att_dst"]), -1)
                h = F.gat_aggregate(graph.relation(k), hs, score_src, score_dst, NEGATIVE_SLOPE)
                h = F.add(F.reshape(h, (-1, heads * width)), p[f"r{k}.bias"])
                out[r.dst] = h if r.dst not in out else F.add(out[r.dst], h)
            return out

        params = {}
        for k in used:
            r = self.schema.relations[k]
            params.update({
                f"r{k}.weight_src": ((widths[r.src], heads * width), glorot),
                f"r{k}.weight_dst": ((widths[r.dst], heads * width), glorot),
                f"r{k}.att_src": ((1, heads, width), glorot),
                f"r{k}.att_dst": ((1, heads, width), glorot),
                f"r{k}.bias": ((heads * width,), zeros),
            })
        return Conv(params, forward)
