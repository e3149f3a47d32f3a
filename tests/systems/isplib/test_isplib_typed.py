"""isplib's fused typed aggregation (Note [typed aggregation loop]) against the dense float64 reference.

Three (index, float) pairs, those tests/numba_cache.py warms, so a warm cache compiles nothing here; the
direct calls pass read-only inputs, as the kernels do (Note [one signature]), for the same reason.
"""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.systems.isplib import kernels as K
from gnnbench.systems.isplib import typed_numba
from tests.systems.typed_cases import TypedCase, tolerance, typed_cases

PAIRS = [(np.int64, np.float64), (np.int32, np.float64), (np.int64, np.float32)]


@pytest.mark.parametrize("index_dtype, float_dtype", PAIRS)
def test_typed_kernels_match_the_dense_reference(index_dtype, float_dtype):
    for case in typed_cases(index_dtype):
        out_ref, grad_x_ref, grad_weight_ref = case.reference()
        x, weight, norm, grad_out = (a.astype(float_dtype) for a in (case.x, case.weight, case.norm, case.grad_out))
        out = np.full(out_ref.shape, np.nan, dtype=float_dtype)        # every element must be written
        grad_x = np.full(grad_x_ref.shape, np.nan, dtype=float_dtype)
        grad_weight = np.full(grad_weight_ref.shape, np.nan, dtype=float_dtype)
        K.typed_aggregate(case.graph.view(), x, weight, norm, case.etype, out)
        K.typed_aggregate_backward(case.graph.view(transposed=True), grad_out, weight, norm, case.etype, grad_x)
        K.typed_weight_backward(case.graph.view(), x, grad_out, norm, case.etype, weight, grad_weight)
        for name, got, want in (("out", out, out_ref), ("grad_x", grad_x, grad_x_ref),
                                ("grad_weight", grad_weight, grad_weight_ref)):
            np.testing.assert_allclose(got, want, **tolerance(float_dtype), err_msg=f"{case.name}: {name}")


def _read_only(*arrays):
    for a in arrays:
        a = a.copy()
        a.flags.writeable = False
        yield a


def _narrow(relations: int) -> TypedCase:
    return next(c for c in typed_cases(np.int64, relation_counts=(relations,)) if c.name.startswith("narrow"))


def test_weight_gradient_is_the_same_over_any_feature_slices():
    # Note [weight gradient by feature slices]: one, two or three slices of the 3 features, one result
    case = _narrow(3)
    view = case.graph.view()
    args = (view.indptr, view.indices, view.indices[:0], False, *_read_only(case.etype, case.norm, case.x,
                                                                            case.grad_out))
    results = []
    for slices in ([0, 3], [0, 1, 2, 3], [0, 2, 3]):
        got = np.full_like(case.weight, np.nan)
        typed_numba.typed_weight_rows.serial(*args, got, np.array(slices, dtype=np.int64))
        results.append(got)
    np.testing.assert_allclose(results[0], case.reference()[2], rtol=1e-10, atol=1e-10)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])   # the same sums in the same order, bit for bit


def test_feature_slices_are_a_cache_line_wide_and_cover_every_feature():
    assert typed_numba.feature_slices(64, 2, 16).tolist() == [0, 32, 64]
    assert typed_numba.feature_slices(64, 16, 16).tolist() == [0, 16, 32, 48, 64]   # no slice under a line
    assert typed_numba.feature_slices(3, 8, 16).tolist() == [0, 3]
    assert typed_numba.feature_slices(0, 8, 16).tolist() == [0, 0]


@pytest.mark.slow
def test_parallel_twins_equal_the_serial_ones_bit_for_bit():
    # each block allocates its own accumulator inside prange; rows and slices are computed alike on any thread
    case = _narrow(64)
    fwd = case.graph.view()
    etype, norm, x, mats, grad_out = _read_only(case.etype, case.norm, case.x,
                                                np.ascontiguousarray(case.weight.transpose(0, 2, 1)), case.grad_out)
    rows = np.arange(fwd.num_rows + 1, dtype=np.int64)                 # one row per block
    slices = np.array([0, 1, 2, 3], dtype=np.int64)
    for twin in ("serial", "parallel"):
        out = np.empty((fwd.num_rows, 2, mats.shape[1]))
        getattr(typed_numba.typed_rows, twin)(fwd.indptr, fwd.indices, fwd.indices[:0], False, etype, norm, x,
                                               mats, out, rows, 0.0)
        grad_weight = np.empty_like(case.weight)
        getattr(typed_numba.typed_weight_rows, twin)(fwd.indptr, fwd.indices, fwd.indices[:0], False, etype, norm,
                                                      x, grad_out, grad_weight, slices)
        if twin == "serial":
            want = out, grad_weight
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(grad_weight, want[1])
    np.testing.assert_allclose(out, case.reference()[0], rtol=1e-10, atol=1e-10)
