"""The operator oracle: what judges a kernel against ``reference`` in float64.

``conformance`` holds the operator cases and the oracle comparison;
``bipartite`` the sampled blocks; ``dims`` the float types, sizes, widths and
heads that real runs take; ``model_check`` checks the models against dense
formulations; ``quantised`` checks pim's int32 mode; ``run_check`` checks a
run's own first forward. Every layer that runs kernels may call it, ``run``
included; the gate that composes it with end-to-end training is
:mod:`gnnbench.verify`, above ``run``.
"""
