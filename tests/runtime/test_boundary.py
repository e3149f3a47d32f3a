"""The producer-only boundary: zero-copy views, allocation by the framework, and each check firing."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.runtime.boundary import KernelDecl, arg
from gnnbench.errors import BoundaryError
from gnnbench.frameworks.torch_runtime import run
from gnnbench.runtime.graph import Graph

GRAPH = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], 3)


class Recorder:
    """A kernel that remembers the arrays it was handed and writes its outputs in place."""

    def __init__(self):
        self.seen = None

    def __call__(self, graph, x, idx, out, saved, *, reduce):
        self.seen = (x, idx, out, saved)
        out[...] = 7.0
        saved[...] = 3


def _decl(fn, arrays_dtype="float"):
    return KernelDecl("demo", "k", fn,
                      inputs=(arg("x", f"{arrays_dtype}[N, F]"), arg("idx", "i64[E]", optional=True, indexes="N")),
                      outputs=(arg("out", "float[N, F*2]"),), saves=(arg("saved", "i32[E]", zero=True),),
                      attrs={"reduce": ("sum", "mean")})


def test_kernel_gets_zero_copy_views_of_framework_allocated_outputs():
    rec = Recorder()
    x = torch.randn(3, 4)
    idx = torch.tensor([0, 1, 2, 0])
    out, saved = run(_decl(rec), GRAPH.view(), (x, idx), {"reduce": "sum"})
    vx, vidx, vout, vsaved = rec.seen
    assert isinstance(vout, np.ndarray)
    assert vx.__array_interface__["data"][0] == x.data_ptr()
    assert vidx.__array_interface__["data"][0] == idx.data_ptr()
    assert vout.__array_interface__["data"][0] == out.data_ptr()
    assert vsaved.__array_interface__["data"][0] == saved.data_ptr()
    assert out.shape == (3, 8) and out.dtype == torch.float32 and bool((out == 7).all())
    assert saved.dtype == torch.int32 and saved.tolist() == [3, 3, 3, 3]


def test_output_dtype_follows_the_float_inputs():
    out, _ = run(_decl(Recorder()), GRAPH.view(), (torch.randn(3, 2, dtype=torch.float64), None), {"reduce": "mean"})
    assert out.dtype == torch.float64


def test_torch_arrays_are_the_same_storage():
    seen = {}

    def kernel(graph, x, idx, out, saved, *, reduce):
        seen["x"] = x
        out.fill_(1.0)

    x = torch.randn(3, 2, requires_grad=True)
    out, _ = run(_decl(kernel), GRAPH.view(), (x, None), {"reduce": "sum"}, arrays="torch")
    assert seen["x"].data_ptr() == x.data_ptr() and not seen["x"].requires_grad


@pytest.mark.parametrize("inputs,attrs,message", [
    ((torch.randn(3, 2, dtype=torch.float16), None), {"reduce": "sum"},
     "demo.k: argument 'x' has dtype float16; expected float32 or float64"),
    ((torch.randn(4, 2), None), {"reduce": "sum"},
     r"demo.k: argument 'x' has shape \(4, 2\); expected \[N, F\] with N=3 \(axis 0 should be 3\)"),
    ((torch.randn(3, 2, 2), None), {"reduce": "sum"},
     r"demo.k: argument 'x' has shape \(3, 2, 2\); expected 2 dimensions \[N, F\]"),
    ((torch.randn(2, 3).t(), None), {"reduce": "sum"},
     "demo.k: argument 'x' is not contiguous; kernels receive zero-copy views"),
    ((torch.randn(3, 2), torch.tensor([0, 1, 2, 3])), {"reduce": "sum"},
     r"demo.k: argument 'idx' holds indices in \[0, 3\]; expected values in \[-1, N=3\)"),
    ((torch.randn(3, 2), torch.tensor([0, 1, 2])), {"reduce": "sum"},
     r"demo.k: argument 'idx' has shape \(3,\); expected \[E\] with E=4"),
    ((None, None), {"reduce": "sum"}, "demo.k: argument 'x' is required but was None"),
    ((torch.randn(3, 2), None), {"reduce": "max"}, "demo.k: argument 'reduce' is 'max'; expected one of sum, mean"),
    ((torch.randn(3, 2), None), {}, "demo.k: argument 'reduce' is a required attribute"),
])
def test_each_check_fires_and_names_the_argument(inputs, attrs, message):
    rec = Recorder()
    with pytest.raises(BoundaryError, match=message) as info:
        run(_decl(rec), GRAPH.view(), inputs, attrs)
    assert rec.seen is None
    assert info.value.operator == "demo.k"


def test_device_check_fires():
    from gnnbench.runtime.boundary import TensorFacts, check_inputs

    facts = lambda t: TensorFacts("float32", (3, 2), "cuda", True)  # noqa: E731
    with pytest.raises(BoundaryError, match="argument 'x' is on device cuda; expected cpu"):
        check_inputs(_decl(Recorder()), (object(), None), facts, {"N": 3, "E": 4}, "cpu")


def test_numpy_views_are_refused_off_the_cpu():
    with pytest.raises(BoundaryError, match="NumPy views, which exist on the CPU only"):
        x = torch.randn(3, 2)
        run(_decl(Recorder()), GRAPH.view(), (x.to("meta"), None), {"reduce": "sum"})
