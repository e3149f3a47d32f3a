"""Round trip: scaffold a system, fill its kernels with a plain correct implementation, run and check it."""
from __future__ import annotations

import textwrap

import pytest
import torch

from gnnbench.cli import main as cli
from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.registry import load_system
from tests.graphs import adversarial_graphs

KERNELS = '''
import numpy as np


def _w(weight, graph, p):
    e = p if graph.edge_ids is None else graph.edge_ids[p]
    return 1.0 if weight is None else weight[e][:, None]


def spmm_sum(graph, x, weight, out, *, reduce):
    out[...] = 0
    for i in range(graph.num_rows):
        for p in range(graph.indptr[i], graph.indptr[i + 1]):
            out[i] += _w(weight, graph, p) * x[graph.indices[p]]
        if reduce == "mean":
            out[i] /= max(graph.row_degree[i], 1.0)


def spmm_sum_backward(graph, grad_out, weight, grad_x, *, reduce):
    grad_x[...] = 0
    for j in range(graph.num_rows):
        for p in range(graph.indptr[j], graph.indptr[j + 1]):
            i = graph.indices[p]
            scale = max(graph.col_degree[i], 1.0) if reduce == "mean" else 1.0
            grad_x[j] += _w(weight, graph, p) * grad_out[i] / scale


def spmm_weight_backward(graph, x, grad_out, grad_weight, *, reduce):
    for i in range(graph.num_rows):
        scale = max(graph.row_degree[i], 1.0) if reduce == "mean" else 1.0
        for p in range(graph.indptr[i], graph.indptr[i + 1]):
            grad_weight[p] = (x[graph.indices[p]] * grad_out[i]).sum(-1) / scale
'''


@pytest.fixture
def scaffolded(tmp_path, monkeypatch, request):
    # a fresh name per test: Python caches imported kernel modules by name
    name = f"scaffolded_{request.node.name.removeprefix('test_')[:20]}"
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(tmp_path / "systems"))
    assert cli(["new-system", name, "--dir", str(tmp_path / "systems"), "--tests", str(tmp_path / "tests")]) == 0
    return tmp_path / "systems" / name


def test_scaffold_creates_spec_kernels_glue_and_test(scaffolded, tmp_path, capsys):
    name = scaffolded.name
    names = sorted(p.name for p in scaffolded.iterdir() if p.suffix in (".py", ".gnn"))
    assert names == ["__init__.py", "_glue.py", "_glue_torch.py", "kernels.py", f"{name}.gnn"]
    assert (tmp_path / "tests" / f"test_{name}_conformance.py").exists()
    assert cli(["gen", "--check", str(scaffolded / f"{name}.gnn")]) == 0
    assert cli(["new-system", name, "--dir", str(tmp_path / "systems")]) == 2
    assert "already exists" in capsys.readouterr().err


def test_unfilled_kernels_say_what_to_write(scaffolded):
    with pytest.raises(NotImplementedError, match=f"{scaffolded.name}.spmm_sum: write me"):
        train(RunConfig(system=scaffolded.name, model="gcn", dataset="karate", epochs=3, warmup=1))


def test_filled_kernels_train_and_match_reference(scaffolded):
    (scaffolded / "kernels.py").write_text(textwrap.dedent(KERNELS))
    row = train(RunConfig(system=scaffolded.name, model="sage", dataset="karate", epochs=4, warmup=1))
    ref = train(RunConfig(system="reference", model="sage", dataset="karate", epochs=4, warmup=1))
    assert row["first_loss"] == pytest.approx(ref["first_loss"], rel=1e-5)
    F = TorchFrontend(dtype="float64")
    for name, graph in adversarial_graphs().items():
        x = torch.randn(graph.num_nodes, 2, 3, dtype=torch.float64, requires_grad=True)
        w = torch.rand(graph.num_edges, 2, dtype=torch.float64, requires_grad=True)
        results = []
        for system in (scaffolded.name, "reference"):
            out = F.spmm(BoundGraph(graph, load_system(system)), x, w, reduce="mean")
            results.append((out, *torch.autograd.grad(out.sum(), (x, w), allow_unused=True)))
        for got, want in zip(*results):
            torch.testing.assert_close(got, want, msg=f"graph {name}")
