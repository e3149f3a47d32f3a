"""GCN, GAT, GIN and GraphSAGE, written once against the frontend op set (no framework import)."""
from __future__ import annotations

from gnnbench.errors import UserError

from .base import GNN, Hyperparameters
from .gat import GAT
from .gcn import GCN
from .gin import GIN
from .sage import SAGE

__all__ = ["GNN", "Hyperparameters", "GCN", "GAT", "GIN", "SAGE", "MODELS", "get_model"]

MODELS: dict[str, type[GNN]] = {m.name: m for m in (GCN, GAT, GIN, SAGE)}


def get_model(name: str) -> type[GNN]:
    try:
        return MODELS[name]
    except KeyError:
        raise UserError(f"unknown model '{name}'; choose one of: {', '.join(MODELS)}") from None
