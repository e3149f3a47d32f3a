"""The `cusparse` kernel system: the `mkl` kernels on CUDA, where torch.sparse calls cuSPARSE."""
__all__: list[str] = []
