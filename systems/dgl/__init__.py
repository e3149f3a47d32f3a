"""The `dgl` kernel system: DGL's gspmm/gsddmm/edge_softmax kernels (see kernels.py)."""
__all__: list[str] = []
