"""gnnbench/frameworks/torch_runtime.py: what the boundary is told about a tensor, and zero-copy views."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.frameworks.torch_runtime import facts, to_view


def test_facts_describe_dtype_shape_device_and_contiguity():
    t = torch.zeros(4, 3, dtype=torch.float32)
    f = facts(t)
    assert (f.dtype, f.shape, f.device, f.contiguous) == ("float32", (4, 3), "cpu", True)
    assert facts(t.T).contiguous is False
    assert facts(torch.zeros(2, dtype=torch.int32)).dtype == "int32"
    with pytest.raises(TypeError, match="expected a torch.Tensor, got ndarray"):
        facts(np.zeros(2))


def test_numpy_views_share_memory_and_writes_land_in_the_tensor():
    t = torch.zeros(5, requires_grad=True)
    view = to_view(t, "numpy")
    assert isinstance(view, np.ndarray) and view.ctypes.data == t.data_ptr()
    view[2] = 7.0  # a kernel writes its output in place
    assert t[2].item() == 7.0
    same = to_view(t, "torch")
    assert isinstance(same, torch.Tensor) and same.data_ptr() == t.data_ptr() and not same.requires_grad


def test_a_forward_keeps_only_what_the_gradients_it_will_run_read():
    # Note [saved for backward]: spmm's rules read x only for the edge weight's gradient
    import weakref

    from gnnbench.frameworks.torch_frontend import TorchFrontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    F = TorchFrontend()
    graph = BoundGraph(Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], 3), load_system("reference"))
    x = torch.randn(3, 4, requires_grad=True)

    def kept(weight) -> bool:
        h = x * 2.0  # an intermediate only the spmm's node could keep alive
        ref = weakref.ref(h)
        out = F.spmm(graph, h, weight)
        del h
        alive = ref() is not None
        out.sum().backward()
        return alive

    assert not kept(None)
    assert not kept(torch.rand(4))  # a constant weight needs no gradient
    assert kept(torch.rand(4, requires_grad=True))
    x.grad = None
    F.spmm(graph, x, None).sum().backward()
    assert x.grad[:, 0].tolist() == [1.0, 1.0, 2.0]  # x_j's gradient: j's out-degree
