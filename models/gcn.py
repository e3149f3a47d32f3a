"""Graph convolutional network (Kipf & Welling, ICLR 2017).

.. math::
    X' = \\hat{D}_{in}^{-1/2} (A + I) \\hat{D}_{out}^{-1/2} X W + b
       = s_{dst} \\odot \\big((A + I) (s_{src} \\odot X W)\\big) + b,
    \\quad s_{dst} = \\hat{D}_{in}^{-1/2} \\mathbf{1},\\ s_{src} = \\hat{D}_{out}^{-1/2} \\mathbf{1}

(on an undirected graph ``D_in = D_out``: Kipf & Welling's ``D^-1/2 (A + I) D^-1/2``).
Aggregation runs at the narrower of the two widths: ``A (X W) = (A X) W``, so a
layer that narrows (``out < in``) transforms first and any other (hidden 16 to
Reddit's 41 classes) aggregates first, as DGL's ``GraphConv`` and this package's
SAGE do.

Two forms of the same function, chosen by ``Hyperparameters.normalisation``
(``gnnbench run --normalisation node|edge``):

* ``"node"`` (default): the normalisation as two node scales
  (:meth:`gnnbench.runtime.graph.Graph.gcn_scales`) around an *unweighted*
  ``spmm(reduce=sum)``, as DGL's ``GraphConv(norm="both")`` does.
* ``"edge"``: the normalisation as a per-edge weight
  (:meth:`gnnbench.runtime.graph.Graph.gcn_norm`) passed to a weighted ``spmm``.

Note [GCN as node scales]
    The edge form makes every system gather an E-long weight array in the
    forward and in the backward spmm, for a matrix that factorises:
    ``w[j -> i] = s_dst[i] * s_src[j]``. The node form applies the two
    factors as framework multiplies broadcast over ``[N, 1]``, so the
    system sees an unweighted spmm, which every system has and tunes,
    and the framework's autograd differentiates the multiplies. No weight
    needs a gradient in either form (graph tensors are constants), so
    neither calls ``spmm_weight_backward``.

    The scales stay at model level rather than in the system API (optional
    node-scale inputs to ``spmm`` that a system could fuse): this way every
    system benefits at once, with no new kernel, declaration or conformance
    case, and the two extra ``[N, F]`` multiplies are cheap beside an
    E-long gather. A system that wants to fuse them can still detect the
    pattern later; the API stays one fact smaller. verify checks that the two
    forms agree on every system (``model gcn-forms``, Note [model check]).

Defaults (paper): 2 layers, hidden 16, dropout 0.5, lr 0.01, weight decay 5e-4
(applied to every parameter here; the paper applies it to the first layer only).
"""
from __future__ import annotations

from gnnbench.errors import UserError

from .base import GNN, Conv, Hyperparameters, glorot, zeros
from .native import IN, OUT, Blocks, Native, layer

#: GCN's normalisation forms; the first is the default (Note [GCN as node scales])
NORMALISATIONS = ("node", "edge")


class GCN(GNN):
    name = "gcn"
    defaults = Hyperparameters(hidden=16, dropout=0.5, lr=0.01, weight_decay=5e-4, normalisation=NORMALISATIONS[0])
    self_loops = True
    normalisations = NORMALISATIONS
    #: on blocks PyG's GCNConv takes no (source, destination) pair and counts in-degrees alone: it gets the
    #: block's own normalisation as edge weights instead
    pyg = Native(layer("GCNConv", IN, OUT, add_self_loops=False, normalize=True, cached=True, bias=True),
                 {"lin.weight": "weight.T", "bias": "bias"},
                 Blocks(pair=False, edge_weight="gcn_norm", changes={"normalize": False, "cached": False}))
    dgl = Native(layer("GraphConv", IN, OUT, norm="both", weight=True, bias=True, allow_zero_in_degree=True),
                 {"weight": "weight", "bias": "bias"})

    def dense(self, T, A, x, p, index):
        d_in, d_out = A.sum(1).clamp(min=1), A.sum(0).clamp(min=1)
        return (d_in.rsqrt()[:, None] * A * d_out.rsqrt()[None, :]) @ (x @ p["weight"]) + p["bias"]

    def conv(self, index, in_dim, out_dim):
        form = self.hyper.normalisation
        if form not in NORMALISATIONS:
            raise UserError(f"GCN normalisation must be one of {', '.join(NORMALISATIONS)} (got {form!r})")

        def at_narrower_width(F, p, x, aggregate):
            if out_dim < in_dim:
                return aggregate(F.matmul(x, p["weight"]))
            return F.matmul(aggregate(x), p["weight"])

        def forward_edge(F, p, graph, x):
            norm = F.graph_tensor(graph, "gcn_norm", graph.graph.gcn_norm())
            h = at_narrower_width(F, p, x, lambda h: F.spmm(graph, h, norm, reduce="sum"))
            return F.add(h, p["bias"])

        def forward_node(F, p, graph, x):
            dst_scale, src_scale = graph.graph.gcn_scales()
            dst_scale = F.graph_tensor(graph, "gcn_dst_scale", dst_scale.reshape(-1, 1))
            src_scale = F.graph_tensor(graph, "gcn_src_scale", src_scale.reshape(-1, 1))
            h = at_narrower_width(F, p, x, lambda h: F.spmm(graph, F.mul(h, src_scale), None, reduce="sum"))
            return F.mul_add(h, dst_scale, p["bias"])

        params = {"weight": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}
        return Conv(params, forward_node if form == "node" else forward_edge)
