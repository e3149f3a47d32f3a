"""The `mkl` kernel system: MKL sparse BLAS through torch.sparse CSR tensors (see kernels.py)."""
__all__: list[str] = []
