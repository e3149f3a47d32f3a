#!/bin/bash
# The CUDA paths on a GPU machine, in one pass that fits a short lease (at most 8 minutes):
#   1. the tests that skip without a GPU (cusparse conformance, dgnn's numba.cuda kernels) and the CUDA
#      allocator's peak memory;
#   2. `gnnbench verify` of every kernel system that runs on cuda (the gate compare shows);
#   3. campaigns/gpu.toml: cusparse, pyg, reference and pyg-native on a 4M-edge R-MAT graph;
#   4. compare's table.
# Usage: bash benchmarks/studies/gpu_check.sh [OUTDIR]   (default: $OUT, else /tmp/gpu_check)
# Writes OUTDIR/{log.txt,gpu.sqlite,compare.txt}; results/studies/gpu_check.md is rendered from them.
set -u
out=${1:-${OUT:-/tmp/gpu_check}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 GNNBENCH_RESULTS="$out/gpu.sqlite" GNNBENCH_CACHE=/tmp/gnnbench-cache
step() {  # a step that fails or hangs is reported, and the next one still runs
    local limit=$1; shift
    echo "== $* (limit ${limit} s)"
    local start=$SECONDS
    timeout "$limit" "$@"
    echo "== exit $? after $((SECONDS - start)) s"
}
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch, numba; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'available', torch.cuda.is_available(), 'numba', numba.__version__)"
    # the simulator test is left out: it needs no GPU and runs in every CI
    step 100 python3 -m pytest -q -o addopts=--import-mode=importlib -rs -p no:cacheprovider \
        -k "not numba_simulator" tests/systems/mkl/test_cusparse.py tests/systems/dgnn/test_dgnn_cuda.py \
        tests/run/test_environment.py
    for system in cusparse pyg reference; do
        step 80 python3 -m gnnbench verify --system "$system" --device cuda
    done
    step 180 python3 -m gnnbench sweep --campaign campaigns/gpu.toml --results "$out/gpu.sqlite"
    step 20 python3 -m gnnbench compare --results "$out/gpu.sqlite" | tee "$out/compare.txt"
} 2>&1 | tee "$out/log.txt"
