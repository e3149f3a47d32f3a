"""Dropout masks every framework draws alike: counter-based, seeded, fast.

Note [framework-neutral dropout]
    Dropout is the only randomness inside an epoch. If each framework drew its
    own masks, PyTorch and TensorFlow would train different functions from the
    same seed, and their accuracies would differ by the seed-to-seed spread.
    So both frontends take masks from :func:`dropout_mask`: element ``i`` of
    dropout call ``k`` after ``seed(s)`` is kept when ``splitmix64(key(s, k) +
    i * golden) / 2^64 >= p``, computed by a parallel numba loop (about ten
    times faster than torch's ``bernoulli_`` on the CPU, which dominated a
    GCN epoch on a 4M-edge graph). Kept values are scaled by ``1 / (1 - p)``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["dropout_mask"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(parallel=True, cache=True)
def _fill(flat, key, threshold, scale):
    for i in prange(flat.size):
        z = _mix(key + np.uint64(i) * _GOLDEN)
        flat[i] = scale if (z >> np.uint64(11)) >= threshold else 0.0


def dropout_mask(seed: int, call: int, shape: tuple[int, ...], p: float, dtype=np.float32) -> np.ndarray:
    """The mask of dropout call ``call`` after seeding with ``seed``: zeros and ``1 / (1 - p)``.

    Args:
        seed: the run's seed.
        call: how many dropout calls came before this one since seeding.
        shape: the shape of the tensor to drop from.
        p: the drop probability, in ``[0, 1)``.
        dtype: float32 or float64, the tensor's dtype.
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must lie in [0, 1) (got {p})")
    mask = np.empty(shape, dtype=dtype)
    key = _mix(np.uint64((int(seed) & 0xFFFFFFFF) << 32 | (int(call) & 0xFFFFFFFF)) + _GOLDEN)
    threshold = np.uint64(int(p * 2.0 ** 53))  # keep when the top 53 bits reach p * 2^53
    _fill(mask.reshape(-1), np.uint64(key), threshold, dtype(1.0 / (1.0 - p)))
    return mask
