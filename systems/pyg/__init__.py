"""The `pyg` kernel system: PyG's scatter / spmm aggregation (see kernels.py)."""
__all__: list[str] = []
