"""dgnn: a dgNN-style fused GAT that recomputes attention instead of storing it.

The forward kernel keeps only each row's softmax max and sum (``N x H``); the
backward kernel recomputes the attention coefficients from them, so no
``E x H`` array is ever allocated. CPU kernels are numba
(:mod:`gnnbench.systems.dgnn.kernels`); CUDA arrays go to numba.cuda kernels
(:mod:`gnnbench.systems.dgnn.cuda`). Attention dropout is off
(Note [attention dropout] in :mod:`~gnnbench.systems.dgnn.kernels`).
"""
from .kernels import gat_fused, gat_fused_backward, prepare, warm_up

__all__ = ["gat_fused", "gat_fused_backward", "prepare", "warm_up"]
