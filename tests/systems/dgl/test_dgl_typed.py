"""dgl's typed aggregation (RelGraphConv's gather_mm / segment_mm path) against the dense float64 reference."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

if importlib.util.find_spec("dgl") is None:
    pytest.skip("DGL is not installed (pip install dgl==2.1.0 pandas)", allow_module_level=True)

from gnnbench.systems.dgl import kernels as K  # noqa: E402
from tests.systems.typed_cases import HEADS, tolerance, typed_cases  # noqa: E402

#: (D, K) on either side of dgl.ops.gather_mm's switch: a bmm on gathered weights, or sorted per-relation matmuls
WIDTHS = {"gather_mm": (3, 4), "segment_mm": (3, 12)}


def _run(case, float_dtype):
    t = lambda a: torch.from_numpy(a.astype(float_dtype))  # noqa: E731
    x, weight, norm, grad_out = t(case.x), t(case.weight), t(case.norm), t(case.grad_out)
    etype = torch.from_numpy(case.etype)
    out = torch.full((case.graph.num_nodes, HEADS, weight.shape[2]), torch.nan, dtype=x.dtype)
    grad_x = torch.full_like(x, torch.nan)
    grad_weight = torch.full_like(weight, torch.nan)
    K.typed_aggregate(case.graph.view(), x, weight, norm, etype, out)
    K.typed_aggregate_backward(case.graph.view(transposed=True), grad_out, weight, norm, etype, grad_x)
    K.typed_weight_backward(case.graph.view(), x, grad_out, norm, etype, weight, grad_weight)
    return out, grad_x, grad_weight


@pytest.mark.parametrize("index_dtype, float_dtype", [(np.int64, np.float64), (np.int32, np.float32)])
@pytest.mark.parametrize("path", list(WIDTHS))
def test_typed_kernels_match_the_dense_reference(index_dtype, float_dtype, path):
    assert K._uses_segments(100, *WIDTHS[path]) == (path == "segment_mm")
    for case in typed_cases(index_dtype, widths=WIDTHS[path]):
        for name, got, want in zip(("out", "grad_x", "grad_weight"), _run(case, float_dtype), case.reference()):
            np.testing.assert_allclose(got.numpy(), want, **tolerance(float_dtype), err_msg=f"{case.name}: {name}")
