"""The `cusparse` system: the `mkl` kernels on CUDA; refused with a pointer to `mkl` without a GPU."""
from __future__ import annotations

import pytest
import torch

from gnnbench.cli import main
from gnnbench.check.conformance import run_suite
from gnnbench.errors import UnavailableError
from gnnbench.dsl.parse import load_spec
from gnnbench.runtime.registry import load_system, system_info

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="cusparse needs a CUDA GPU; none here")
without_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")


def test_shares_the_mkl_kernels():
    assert system_info("cusparse").devices == ("cuda",)
    spec_mkl, spec_cus = (open(system_info(n).spec_path).read() for n in ("mkl", "cusparse"))
    assert "kernels gnnbench.systems.mkl.kernels" in spec_mkl
    assert "kernels gnnbench.systems.mkl.kernels" in spec_cus
    assert [k for k in load_spec(system_info("mkl").spec_path).kernels] == \
        [k for k in load_spec(system_info("cusparse").spec_path).kernels]


def test_cpu_is_refused_with_a_pointer_to_mkl():
    reason = system_info("cusparse").unavailable_reason("torch", "cpu")
    assert reason == "runs on cuda only; use --system mkl on the CPU"
    with pytest.raises(UnavailableError, match="use --system mkl on the CPU"):
        load_system("cusparse", "torch", "cpu")


def test_run_on_the_cpu_prints_one_line(capsys):
    assert main(["run", "--system", "cusparse", "--model", "gcn", "--no-store"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "gnnbench run: system 'cusparse' is unavailable: runs on cuda only; use --system mkl on the CPU"


@without_gpu
def test_run_on_cuda_without_gpu_prints_one_line(capsys):
    assert main(["run", "--system", "cusparse", "--model", "gcn", "--device", "cuda", "--no-store"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("gnnbench run: system 'cusparse' is unavailable: needs a CUDA GPU and none is available here; "
                   "use --system mkl on the CPU")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("operator", ["spmm", "sddmm", "edge_softmax"])
def test_conformance_on_cuda(operator, dtype):
    results, _ = run_suite("cusparse", operator, profile="fast", device="cuda", dtype=dtype)
    assert all(r.status == "passed" for r in results), [f for r in results for f in r.failures]


@needs_gpu
def test_cuda_max_takes_the_fallback_and_reports_it():
    from gnnbench.systems.mkl.kernels import report

    run_suite("cusparse", "spmm", profile="fast", device="cuda", dtype="float32")
    assert report()["paths"]["spmm_max"] == "scatter_reduce fallback"
