"""gnnbench/frameworks/dropout.py: the masks both frameworks draw, the same for the same seed and call."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.frameworks.dropout import dropout_apply, dropout_mask


def test_mask_is_deterministic_per_seed_and_call():
    a = dropout_mask(0, 3, (50, 40), 0.5)
    assert np.array_equal(a, dropout_mask(0, 3, (50, 40), 0.5))
    assert not np.array_equal(a, dropout_mask(0, 4, (50, 40), 0.5))
    assert not np.array_equal(a, dropout_mask(1, 3, (50, 40), 0.5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kept_values_are_scaled_and_the_rate_is_p(dtype):
    mask = dropout_mask(7, 0, (200, 100), 0.2, dtype)
    assert mask.dtype == dtype and mask.shape == (200, 100)
    assert set(np.unique(mask)) == {0.0, dtype(1.0 / 0.8)}
    assert abs((mask == 0).mean() - 0.2) < 0.01
    assert np.all(dropout_mask(7, 0, (10,), 0.0, dtype) == 1.0)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_probability_outside_0_1_is_refused(p):
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\)"):
        dropout_mask(0, 0, (4,), p)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_apply_equals_the_mask_product_bit_for_bit_special_values_included(dtype):
    x = np.random.default_rng(1).standard_normal((300, 7)).astype(dtype)
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]  # x * 0 keeps NaN for inf and NaN: the same as the mask multiply
    expected = x * dropout_mask(4, 2, x.shape, 0.3, dtype)
    out = np.empty_like(x)
    dropout_apply(4, 2, x, 0.3, out)
    assert out.tobytes() == expected.tobytes()
    dropout_apply(4, 2, x, 0.3, x)  # in place
    assert x.tobytes() == expected.tobytes()


def test_fused_apply_refuses_mismatched_or_strided_arrays():
    x = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match="one shape and dtype"):
        dropout_apply(0, 0, x, 0.5, np.empty((4, 5), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        dropout_apply(0, 0, x[:, ::2], 0.5, np.empty((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        dropout_apply(0, 0, x, 1.0, np.empty_like(x))
