"""GraphSAGE with mean aggregation (Hamilton et al., NeurIPS 2017).

.. math::
    x_i' = W_r x_i + W_n \\,\\mathrm{mean}_{j \\in N(i)} x_j + b

Aggregation is ``spmm(reduce=mean)`` over A, in the cheaper order: the
mean is linear, so ``mean(x) W_n = mean(x W_n)``, and the order decides
the width the SpMMs run at and the width of what autograd keeps.

* On a square (full) graph the neighbour transform runs first whenever
  ``in >= out``, as in DGL's ``SAGEConv`` (which does when ``in > out``)
  and this package's GCN: the aggregation, its saved input and its
  output are ``[N, out]``. For the first layer, whose input (the features)
  needs no gradient, this costs two SpMMs at ``out`` (forward and
  backward) against one at ``in``: level when ``in = 2 out``, but the
  ``[N, in]`` mean that aggregating first keeps for the backward is gone:
  with it SAGE's full-graph peak was 1.59x dgl-native's at 16M edges (128
  features, hidden 64; results/bench_scaling.md, issue 55).
* On a sampled block (Note [layers on blocks]) a layer keeps the order it
  had: the first layer aggregates first unless ``in > 2 out``, a hidden
  layer transforms first when it narrows (``out < in``). Aggregating first
  there runs the matmul on the destinations, not on the sources, about
  ten times as many: on ogbn-products' shape (100 features, hidden
  64) that cost less backward time than transforming first, one run each
  (``results/studies/runtime-notes.md``; results/sampled_products.md was
  measured before). PyG's ``SAGEConv`` always aggregates first.

No normalisation of the output.

Defaults (common node-classification settings): 2 layers, hidden 64,
dropout 0.5, lr 0.01, weight decay 5e-4.
"""
from __future__ import annotations

from .base import GNN, Conv, Hyperparameters, dst_rows, glorot, is_block, zeros
from .native import IN, OUT, Native, layer


class SAGE(GNN):
    name = "sage"
    defaults = Hyperparameters(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4)
    pyg = Native(layer("SAGEConv", IN, OUT, aggr="mean", root_weight=True, bias=True),
                 {"lin_l.weight": "weight_neigh.T", "lin_l.bias": "bias", "lin_r.weight": "weight_root.T"})
    dgl = Native(layer("SAGEConv", IN, OUT, "mean", bias=True),
                 {"fc_self.weight": "weight_root.T", "fc_self.bias": "bias", "fc_neigh.weight": "weight_neigh.T"})

    def dense(self, T, A, x, p, index):
        mean = (A @ x) / A.sum(1).clamp(min=1)[:, None]                # an empty row gives 0
        return x @ p["weight_root"] + mean @ p["weight_neigh"] + p["bias"]

    def conv(self, index, in_dim, out_dim):
        def forward(F, p, graph, x):
            if transforms_first(graph, index, in_dim, out_dim):  # the cheaper order (docstring)
                neigh = F.spmm(graph, F.matmul(x, p["weight_neigh"]), None, reduce="mean")
            else:
                neigh = F.matmul(F.spmm(graph, x, None, reduce="mean"), p["weight_neigh"])
            return F.add(F.linear(dst_rows(graph, x), p["weight_root"], p["bias"]), neigh)

        return Conv({
            "weight_root": ((in_dim, out_dim), glorot),
            "weight_neigh": ((in_dim, out_dim), glorot),
            "bias": ((out_dim,), zeros),
        }, forward)


def transforms_first(graph, index: int, in_dim: int, out_dim: int) -> bool:
    """Whether layer ``index`` (from 0) applies its neighbour weight before it aggregates (the module's
    docstring): on a square graph when it does not widen, on a block as before."""
    if not is_block(graph):
        return in_dim >= out_dim
    return in_dim > 2 * out_dim if index == 0 else out_dim < in_dim
