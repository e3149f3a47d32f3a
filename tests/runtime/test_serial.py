"""Tests of gnnbench.runtime.serial: a section's serial twin computes the parallel section's result bit for bit
(Note [serial below a size]), and the size picks which one runs."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.frameworks.dropout import dropout_apply, dropout_mask
from gnnbench.runtime import serial
from gnnbench.runtime.csr_transpose import column_counts, transpose_csr
from gnnbench.sampling.neighbor import NeighborSampler


def _graph(nodes: int = 300, edges: int = 2000, seed: int = 1):
    rng = np.random.default_rng(seed)
    dst, src = np.sort(rng.integers(0, nodes, edges)), rng.integers(0, nodes, edges)
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=nodes), out=indptr[1:])
    return indptr, src.astype(np.int64)


def _both(monkeypatch, compute):
    """``compute()`` with every section serial, then with every section parallel."""
    monkeypatch.setattr(serial, "SERIAL_BELOW", 1 << 62)
    serial_result = compute()
    monkeypatch.setattr(serial, "SERIAL_BELOW", 0)
    return serial_result, compute()


def test_the_transpose_is_the_same_serial_and_parallel(monkeypatch):
    indptr, indices = _graph()
    for blocks in (1, 2, 3):
        one, other = _both(monkeypatch, lambda: (*transpose_csr(indptr, indices, 300, blocks),
                                                 column_counts(indices, 300, blocks)))
        for a, b in zip(one, other):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_the_sampler_draws_the_same_blocks_serial_and_parallel(monkeypatch):
    indptr, indices = _graph(edges=30000)  # degrees around 100: fanout 70 draws by reservoir, 5 by Floyd

    def blocks():
        batch = NeighborSampler(indptr, indices, (5, 70), seed=3).sample(np.arange(0, 300, 7), epoch=1, batch=2)
        return [(b.indptr, b.indices) for b in batch.blocks] + [(batch.input_nodes,)]

    one, other = _both(monkeypatch, blocks)
    assert all(np.array_equal(a, b) for xs, ys in zip(one, other) for a, b in zip(xs, ys))


def test_dropout_is_the_same_serial_and_parallel(monkeypatch):
    x = np.random.default_rng(0).standard_normal((50, 33)).astype(np.float32)

    def dropped():
        out = np.empty_like(x)
        dropout_apply(4, 2, x, 0.5, out)
        return out, dropout_mask(4, 2, x.shape, 0.5, np.float64)

    (a, m), (b, n) = _both(monkeypatch, dropped)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32)) and np.array_equal(m, n)


@pytest.mark.parametrize("work, ran", [(serial.SERIAL_BELOW - 1, "serial"), (serial.SERIAL_BELOW, "parallel")])
def test_the_work_below_the_threshold_runs_the_serial_twin(work, ran):
    def count(n, out):
        for i in range(out.shape[0]):
            out[i] = i

    section = serial.parallel_above(lambda n, out: n)(count)
    calls = []
    for name in ("serial", "parallel"):
        setattr(section, name, lambda n, out, name=name: calls.append(name))
    section(work, np.empty(1))
    assert calls == [ran]


def test_the_serial_twin_has_its_own_name_for_numba_s_disk_cache():
    from gnnbench.runtime.csr_transpose import _scatter_blocks

    assert _scatter_blocks.serial.py_func.__qualname__ == "_scatter_blocks_serial"
    assert _scatter_blocks.parallel.py_func.__qualname__ == "_scatter_blocks"
    assert _scatter_blocks.serial.targetoptions.get("parallel") is not True
