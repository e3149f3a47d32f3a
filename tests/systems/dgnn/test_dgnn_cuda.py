"""The dgnn CUDA kernels: on a real GPU when there is one, and their logic in
numba's CUDA simulator everywhere."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from .dgnn_reference import awkward_graph, random_inputs, reference_grads

from gnnbench.runtime.graph import Graph
from gnnbench.systems.dgnn import gat_fused, gat_fused_backward

HERE = Path(__file__).parent
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="needs a CUDA GPU; none on this machine")
RTOL = {np.float32: 1e-4, np.float64: 1e-10}


def assert_close(actual, expected, rtol, name):
    atol = rtol * max(float(np.abs(expected).max()), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)


@needs_gpu
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("dim", [1, 8, 17, 40])
def test_cuda_matches_composed_reference(index_dtype, dtype, heads, dim):
    """torch CUDA tensors go through the public kernels to the numba.cuda path."""
    graph = awkward_graph(index_dtype)
    x, ss, sd, go = random_inputs(graph.num_nodes, heads, dim, dtype, seed=dim + heads)
    n, dev = graph.num_nodes, torch.device("cuda")
    t = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
    nan = lambda shape: torch.full(shape, torch.nan, dtype=t(x).dtype, device=dev)  # noqa: E731
    out, row_max, row_sum = nan(x.shape), nan((n, heads)), nan((n, heads))
    gat_fused(graph.view(), t(x), t(ss), t(sd), out, row_max, row_sum, negative_slope=0.2)
    gx, gss, gsd, row_dot = nan(x.shape), nan((n, heads)), nan((n, heads)), nan((n, heads))
    gat_fused_backward(graph.view(), t(x), t(ss), t(sd), row_max, row_sum, t(go), gx, gss, gsd, row_dot,
                       negative_slope=0.2)
    torch.cuda.synchronize()
    want = reference_grads(graph, x, ss, sd, go, 0.2)
    for name, a, b in zip(("out", "grad_x", "grad_score_src", "grad_score_dst"), (out, gx, gss, gsd), want):
        assert_close(a.cpu().numpy(), b, RTOL[dtype], name)


@needs_gpu
def test_cuda_graph_without_edges():
    graph = Graph.from_edges(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 3)
    dev = torch.device("cuda")
    x = torch.randn(3, 2, 4, device=dev)
    ss, sd = torch.randn(3, 2, device=dev), torch.randn(3, 2, device=dev)
    out, rm, rs = torch.full_like(x, torch.nan), torch.full_like(ss, torch.nan), torch.full_like(ss, torch.nan)
    gat_fused(graph.view(), x, ss, sd, out, rm, rs, negative_slope=0.2)
    assert (out == 0).all() and (rm == 0).all() and (rs == 0).all()


@needs_gpu
def test_cuda_warm_up():
    from gnnbench.systems.dgnn import warm_up
    for index_dtype in (np.int32, np.int64):
        warm_up(index_dtype, np.float32, device="cuda")


# The simulator runs each CUDA thread as a Python thread: keep the graph tiny but
# give it everything that exercises the kernels' striding: a row and a column
# with more than 32 edges (duplicates of one edge), D = 33 > 32 threads, a self
# loop, an isolated node, a source-only and a sink-only node.
_SIMULATOR_SCRIPT = r"""
import json, sys
import numpy as np
from numba import cuda
sys.path.insert(0, sys.argv[1])
from dgnn_reference import random_inputs, reference_grads
from gnnbench.runtime.graph import Graph
from gnnbench.systems.dgnn import cuda as dc
src = [1] * 40 + [0] * 35 + [3, 2, 4]
dst = [0] * 40 + [2] * 35 + [3, 1, 3]
graph = Graph.from_edges(np.array(src), np.array(dst), 6, np.int32)  # 5 isolated, 4 source-only
errors = {}
for dtype, dim, h in ((np.float64, 33, 2), (np.float32, 2, 1)):
    x, ss, sd, go = random_inputs(6, h, dim, dtype, seed=dim)
    dev = cuda.to_device
    nan = lambda shape: cuda.to_device(np.full(shape, np.nan, dtype))
    out, rm, rs = nan(x.shape), nan((6, h)), nan((6, h))
    dc.gat_fused(graph.view(), dev(x), dev(ss), dev(sd), out, rm, rs, negative_slope=0.2)
    gx, gss, gsd, rd = nan(x.shape), nan((6, h)), nan((6, h)), nan((6, h))
    dc.gat_fused_backward(graph.view(), dev(x), dev(ss), dev(sd), rm, rs, dev(go), gx, gss, gsd, rd,
                          negative_slope=0.2)
    want = reference_grads(graph, x, ss, sd, go, 0.2)
    for name, a, b in zip(("out", "grad_x", "grad_score_src", "grad_score_dst"), (out, gx, gss, gsd), want):
        a = a.copy_to_host()
        scale = max(float(np.abs(b).max()), 1.0)
        errors[f"{np.dtype(dtype).name} {name}"] = float(np.nanmax(np.abs(a - b)) / scale) if not np.isnan(a).any() else None
print(json.dumps(errors))
"""


def test_cuda_kernels_in_numba_simulator():
    """The CUDA kernels' logic (indexing, striding, reductions, empty rows) in
    numba's CUDA simulator, so it is checked even where no GPU is."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", _SIMULATOR_SCRIPT, str(HERE)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(errors) == 8
    for key, err in errors.items():
        assert err is not None, f"{key}: an output element was left unwritten (NaN)"
        assert err < (1e-10 if key.startswith("float64") else 1e-4), (key, err)
