"""The model bug the issue found passing verify: GCN normalised ``D^-1 (A + I)`` instead of ``D^-1/2 (A + I) D^-1/2``.

``MODELS`` is ``models.MODELS`` with this GCN in place of the real one; verify's
model check reads it through ``VerifySettings(models="demo_gcn_row_norm.model:MODELS")``.
"""
from __future__ import annotations

import numpy as np

from gnnbench.models import MODELS as _MODELS
from gnnbench.models.base import Conv, glorot, zeros
from gnnbench.models.gcn import GCN


class RowNormalisedGCN(GCN):
    def conv(self, index, in_dim, out_dim):
        def forward(F, p, graph, x):
            _, dst = graph.graph.edges()
            norm = (1.0 / np.maximum(graph.graph.in_degree[dst], 1.0)).astype(np.float32)   # the bug
            w = F.graph_tensor(graph, "row_norm", norm)
            return F.add(F.spmm(graph, F.matmul(x, p["weight"]), w, reduce="sum"), p["bias"])

        return Conv({"weight": ((in_dim, out_dim), glorot), "bias": ((out_dim,), zeros)}, forward)


MODELS = {**_MODELS, "gcn": RowNormalisedGCN}
