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
