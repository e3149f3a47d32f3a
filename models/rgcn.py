"""Relational graph convolutional network, R-GCN (Schlichtkrull et al., ESWC 2018).

.. math::
    h_i' = W_0 h_i + b + \\sum_{r} \\frac{1}{|N_r(i)|} \\sum_{j \\in N_r(i)} W_r h_j,
    \\qquad W_r = \\sum_{b=1}^{B} a_{rb} V_b \\ \\text{(basis decomposition, optional)}

a mean per relation (``c_{i,r} = |N_r(i)|``, the paper's choice for entity classification; an empty
relation gives 0) plus the self-connection ``W_0``, over every node type; the logits are the target type's.
Each relation's mean is ``spmm(reduce=mean)`` on its bipartite view (Note [relations on the existing
operators] in gnnbench/runtime/hetero.py), at the narrower of the two widths, as GCN does.

``W_0`` is one matrix for every node type, as in the paper and in PyG's ``RGCNConv`` and DGL's
``RelGraphConv`` (which run on the homogeneous form, Note [homogeneous form]): so every node type must have
the same feature width, and a dataset whose types differ is refused in one line (:meth:`RGCN.for_dataset`).

Defaults (paper, AIFB): 2 layers, hidden 16, no basis decomposition, no dropout, lr 0.01, no weight decay,
50 epochs. ``Hyperparameters.bases`` sets ``B``.

Note [R-GCN on the typed operator]
    On a system with a ``typed_aggregate`` kernel (Note [typed aggregation] in gnnbench.api), a layer's whole
    relational sum is one call on the homogeneous form (Note [homogeneous form]): the node types' features laid
    one after the other, ``norm[e] = 1 / |N_r(i)|`` for edge ``e`` of relation ``r`` into ``i`` (the mean per
    relation), ``etype`` the edges' relations and ``weight`` the stacked ``[R, in, out]`` (from the bases when
    ``--bases`` is given). That is the call fused relational kernels exist for, and it replaces ``R``
    spmm-and-matmul pairs. A system without the kernel keeps one ``spmm(reduce=mean)`` per relation on the
    relation's own view: the operator's composed form (one ``spmm`` over all the edges per relation,
    ``gnnbench.frameworks.composed``) would cost ``R`` passes over every edge where the per-relation views
    cost one in all. Both compute the same function (the dense equation of the model check), so the first
    loss is reference's to rounding either way; reference, which has the kernel, runs the typed form.
"""
from __future__ import annotations

import numpy as np

from gnnbench.errors import UserError

from .base import Conv, Hyperparameters, glorot, zeros
from .native import BASES, IN, OUT, RELATIONS, Native, Typed, layer
from .typed import TypedGNN, destinations


def _basis_init(rng, shape):
    return glorot(rng, shape)


class RGCN(TypedGNN):
    name = "rgcn"
    defaults = Hyperparameters(hidden=16, layers=2, dropout=0.0, lr=0.01, weight_decay=0.0, epochs=50)
    #: takes ``--bases`` (``Hyperparameters.bases``)
    basis_decomposition = True
    pyg = Native(layer("RGCNConv", IN, OUT, RELATIONS, num_bases=BASES, aggr="mean", root_weight=True, bias=True),
                 {"weight": "weight", "root": "root", "bias": "bias"},
                 typed=Typed("homogeneous", bases_params={"weight": "basis", "comp": "coeff", "root": "root",
                                                          "bias": "bias"}))
    dgl = Native(layer("RelGraphConv", IN, OUT, RELATIONS, regularizer=None, num_bases=BASES, bias=True,
                       activation=None, self_loop=True, dropout=0.0, layer_norm=False),
                 {"linear_r.W": "weight", "loop_weight": "root", "h_bias": "bias"},
                 typed=Typed("homogeneous", edge_norm=True, bases_changes={"regularizer": "basis"},
                             bases_params={"linear_r.W": "basis", "linear_r.coeff": "coeff", "loop_weight": "root",
                                           "h_bias": "bias"}))

    def __init__(self, schema, out_dim, hyper=None):
        widths = set(schema.widths.values())
        if len(widths) > 1:
            shown = ", ".join(f"{t}={w}" for t, w in schema.widths.items())
            raise UserError(f"rgcn needs one feature width for every node type (its self-connection W_0, like "
                            f"RGCNConv's and RelGraphConv's, is one matrix), but the node types have {shown}; use "
                            f"rgat, or a dataset with one width (hetero: other_features=0)")
        hyper = hyper or self.defaults
        if hyper.bases is not None and not 1 <= hyper.bases <= len(schema.relations):
            raise UserError(f"rgcn bases must lie in [1, {len(schema.relations)}] (the relations) "
                            f"(got {hyper.bases})")
        super().__init__(schema, out_dim, hyper)

    @staticmethod
    def runs_typed_aggregate(system) -> bool:
        """Whether a layer is one ``typed_aggregate`` call on ``system`` (Note [R-GCN on the typed operator])."""
        return system.find("typed_aggregate", {}) is not None

    def dense(self, T, A, x, p, index):
        weights = self._dense_weights(T, p)
        out = {t: v @ p["root"] + p["bias"] for t, v in x.items()}
        for k, r in enumerate(self.schema.relations):
            deg = A[k].sum(1).clamp(min=1)[:, None]
            out[r.dst] = out[r.dst] + ((A[k] @ x[r.src]) / deg) @ weights[k]
        return out

    def _dense_weights(self, T, p):
        if "weight" in p:
            return [p["weight"][k] for k in range(len(self.schema.relations))]
        return [T.einsum("b,bio->io", p["coeff"][k], p["basis"]) for k in range(len(self.schema.relations))]

    def conv(self, index, in_dim, out_dim):
        relations = self.schema.relations
        bases = self.hyper.bases

        def stacked_weights(F, p):
            if bases is None:
                return p["weight"]
            flat = F.matmul(p["coeff"], F.reshape(p["basis"], (bases, in_dim * out_dim)))   # [R, in*out]
            return F.reshape(flat, (len(relations), in_dim, out_dim))

        def relation_weights(F, p):
            stacked = stacked_weights(F, p)
            return [F.take(stacked, k) for k in range(len(relations))]

        def typed(F, p, graph, x, out):
            """Every relation's mean in one ``typed_aggregate`` (Note [R-GCN on the typed operator])."""
            form, hom = graph.graph.homogeneous(), graph.homogeneous()
            types = list(graph.graph.node_counts)
            xs = F.reshape(F.concat([x[t] for t in types]), (-1, 1, in_dim))
            norm = F.graph_tensor(hom, "rgcn relation mean", _relation_mean(form))
            etype = F.graph_tensor(hom, "rgcn edge type", form.edge_type)
            h = F.reshape(F.typed_aggregate(hom, xs, stacked_weights(F, p), norm, etype), (-1, out_dim))
            for i, t in enumerate(types):
                if t in out:
                    out[t] = F.add(out[t], F.rows(h, *form.node_range(i)))
            return out

        last = index == self.hyper.layers - 1
        target = self.schema.target

        def forward(F, p, graph, x):
            # the last layer computes the target's logits only: no other type's output is read
            out = {}
            for t, v in x.items():
                own = destinations(graph, t, v)  # Note [typed layers on blocks]
                if own is not None and (not last or t == target):
                    out[t] = F.linear(own, p["root"], p["bias"])
            if not getattr(graph, "block", False) and self.runs_typed_aggregate(graph.system) \
                    and all(t in x for t in graph.graph.node_counts):
                return typed(F, p, graph, x, out)  # a full typed graph: the homogeneous form is the whole graph's
            weights = relation_weights(F, p)
            for k, r in enumerate(relations):
                if r.dst not in out or r.src not in x:  # not read, or a block without its sources: an empty mean
                    continue
                rel = graph.relation(k)
                if out_dim < in_dim:  # the narrower width, as GCN and SAGE do
                    h = F.spmm(rel, F.matmul(x[r.src], weights[k]), None, reduce="mean")
                else:
                    h = F.matmul(F.spmm(rel, x[r.src], None, reduce="mean"), weights[k])
                out[r.dst] = F.add(out[r.dst], h)
            return out

        params = {"root": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}
        if bases is None:
            params["weight"] = ((len(relations), in_dim, out_dim), glorot)
        else:
            params["basis"] = ((bases, in_dim, out_dim), _basis_init)
            params["coeff"] = ((len(relations), bases), glorot)
        return Conv(params, forward)


def _relation_mean(form) -> np.ndarray:
    """``[E, 1]``: ``1 / |N_r(i)|`` for each edge of relation ``r`` into ``i`` on the homogeneous form (canonical
    order), the mean per relation of Note [R-GCN on the typed operator]."""
    graph = form.graph
    dst = np.repeat(np.arange(graph.num_dst, dtype=np.int64), np.diff(graph.indptr.astype(np.int64)))
    _, inverse, counts = np.unique(dst * max(int(form.edge_type.max(initial=0)) + 1, 1) + form.edge_type,
                                   return_inverse=True, return_counts=True)
    return (1.0 / counts[inverse]).reshape(-1, 1)
