"""GCN, GAT, GIN, GraphSAGE and the relational R-GCN and R-GAT, written once against the frontend op set (no framework import).

Each model's file holds all that gnnbench reads from it: its convolution, its paper's equation as a dense
formulation (verify's model check) and its PyG and DGL layers (the native baselines; Note [native
counterparts] in models/native.py). :data:`MODELS` is the one list of models: run's choices, verify's checks
and the baselines derive from it.
"""
from __future__ import annotations

from gnnbench.errors import UserError

from .base import GNN, Hyperparameters
from .gat import GAT
from .gcn import GCN
from .gin import GIN
from .rgat import RGAT
from .rgcn import RGCN
from .sage import SAGE

__all__ = ["GNN", "Hyperparameters", "GCN", "GAT", "GIN", "SAGE", "RGCN", "RGAT", "MODELS", "get_model",
           "check_typed"]

MODELS: dict[str, type[GNN]] = {m.name: m for m in (GCN, GAT, GIN, SAGE, RGCN, RGAT)}


def get_model(name: str) -> type[GNN]:
    try:
        return MODELS[name]
    except KeyError:
        raise UserError(f"unknown model '{name}'; choose one of: {', '.join(MODELS)}") from None


def check_typed(model_cls, typed_dataset: bool, dataset: str) -> None:
    """Refuse a homogeneous model on a typed dataset, and the reverse (Note [typed and homogeneous models])."""
    if getattr(model_cls, "typed", False) == typed_dataset:
        return
    fits = [name for name, m in MODELS.items() if getattr(m, "typed", False) == typed_dataset]
    if typed_dataset:
        raise UserError(f"model '{model_cls.name}' takes a homogeneous graph, but dataset '{dataset}' is typed "
                        f"(node types and relations); use a relational model: {', '.join(fits)}")
    raise UserError(f"model '{model_cls.name}' is relational and needs a typed dataset (e.g. hetero:like=aifb), "
                    f"but '{dataset}' is homogeneous; use one of: {', '.join(fits)}")
