"""extsp: SciPy CSR SpMM as a gnnbench kernel system (an out-of-tree example, docs/out-of-tree.md)."""
