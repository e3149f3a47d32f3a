"""A second planted model bug: GCN's node form scaling sources by ``D_in^-1/2`` instead of ``D_out^-1/2``.

The two degrees agree on an undirected graph, so only the directed model graph
shows it; the edge form is left correct, so verify's ``model gcn-forms``
(node form vs edge form on the system, Note [model check]) must fail there.
Read through ``VerifySettings(models="demo_gcn_row_norm.swapped_scales:MODELS")``;
the kernels are ``reference``'s.
"""
from __future__ import annotations

from gnnbench.models import MODELS as _MODELS
from gnnbench.models.base import Conv
from gnnbench.models.gcn import GCN


class SwappedScalesGCN(GCN):
    def conv(self, index, in_dim, out_dim):
        conv = super().conv(index, in_dim, out_dim)
        if self.hyper.normalisation != "node":
            return conv

        def forward(F, p, graph, x):
            dst_scale, _ = graph.graph.gcn_scales()
            scale = F.graph_tensor(graph, "in_degree_scale", dst_scale.reshape(-1, 1))   # the bug: both ends
            h = F.spmm(graph, F.mul(F.matmul(x, p["weight"]), scale), None, reduce="sum")
            return F.add(F.mul(h, scale), p["bias"])

        return Conv(conv.params, forward)


MODELS = {**_MODELS, "gcn": SwappedScalesGCN}
