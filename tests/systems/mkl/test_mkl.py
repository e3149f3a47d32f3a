"""The `mkl` system: conformance in float32 (float64 runs in tests/check/test_conformance.py) and its CSR format."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.check.conformance import adversarial_graphs, run_suite
from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.runtime.registry import load_system


@pytest.mark.parametrize("operator", ["spmm", "sddmm", "edge_softmax"])
def test_conformance_float32(operator):
    results, settings = run_suite("mkl", operator, profile="fast", dtype="float32", threads=1)
    assert settings["dtype"] == "float32"
    assert all(r.status == "passed" for r in results), [f for r in results for f in r.failures]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_prepare_keeps_mkl_indices_int32(index_dtype):
    # Note [int32 indices for MKL]: int64 CSR indices would be converted on every call
    from gnnbench.systems.mkl.kernels import prepare

    graph = adversarial_graphs(index_dtype)["hub"]
    for transposed in (False, True):
        csr = prepare(graph.view(transposed))
        assert csr.crow.dtype == csr.col.dtype == torch.int32
        assert csr.offsets.dtype == torch.int64
        assert (csr.edge_ids is None) != transposed


def test_max_uses_the_csr_reduce_kernel_and_reports_it():
    system = load_system("mkl")
    graph = adversarial_graphs()["duplicates"]
    x = torch.arange(graph.num_nodes * 2, dtype=torch.float64).reshape(-1, 1, 2)
    out = TorchFrontend(dtype="float64").spmm(BoundGraph(graph, system), x, None, reduce="max")
    src, dst = graph.edges()
    expected = np.zeros((graph.num_nodes, 1, 2))
    np.maximum.at(expected, dst, x.numpy()[src])          # x >= 0, so 0 is the right start for empty rows
    np.testing.assert_array_equal(out.numpy(), expected)
    report = system.hook("report")()
    assert report["paths"]["spmm_max"] == "torch.sparse.mm(csr, reduce=amax)"
    assert report["mkl_available"] is torch.backends.mkl.is_available()


def test_parallel_self_loops_on_one_node_do_not_crash_the_vendor_routines():
    """Note [over-full pattern]: one node with three loops (more entries than cells) takes the gather path,
    the one that serves cuSPARSE, which refuses such a pattern for SpMM too."""
    import numpy as np
    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    graph = Graph.from_edges(np.zeros(3, np.int64), np.zeros(3, np.int64), 1, np.int32)
    F = get_frontend("torch", "cpu", "float64")
    src = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64, requires_grad=True)
    dst = torch.tensor([[[3.0, -1.0]]], dtype=torch.float64, requires_grad=True)
    weight = torch.tensor([[1.0], [2.0], [-0.5]], dtype=torch.float64, requires_grad=True)
    mkl = BoundGraph(graph, load_system("mkl"))
    out = F.sddmm(mkl, src, dst, op="dot")
    assert out.detach().flatten().tolist() == [1.0, 1.0, 1.0]
    total = F.spmm(mkl, src, weight, reduce="sum")
    assert total.detach().flatten().tolist() == [2.5, 5.0]         # (1 + 2 - 0.5) * src
    (grad_w,) = torch.autograd.grad(total.sum(), [weight])
    assert grad_w.flatten().tolist() == [3.0, 3.0, 3.0]
    assert load_system("mkl").hook("report")()["paths"]["spmm_sum"] == "gather (pattern has more entries than cells)"
