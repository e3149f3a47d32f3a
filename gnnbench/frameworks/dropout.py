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

Note [fused dropout]
    A mask is a pure function of ``(seed, call, i)``, so it need not exist as
    an array. :func:`dropout_apply` writes ``out[i] = x[i] * m_i`` in one
    parallel pass, drawing ``m_i`` (``1 / (1 - p)`` or 0) on the fly, and the
    backward is the same pass over the incoming gradient with the same key:
    nothing is allocated for the mask and nothing is saved for autograd. Under
    PyTorch the former path (fill an ``[N, F]`` float mask, then ``x * mask``,
    keep the mask for the backward) wrote the mask and read it back once more
    for the multiply; at ``[131072, 128]`` that is 64 MiB written and 128 MiB
    read per call that the fused pass does not touch
    (``benchmarks/studies/bench_loop_share.py``). The product is the same IEEE float
    multiply by the same mask value, so every element (NaN and inf included:
    ``x * 0``, not a select) equals the mask path's, bit for bit, and PyTorch,
    which fuses, and TensorFlow, which multiplies by :func:`dropout_mask`, still
    train the same function.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from gnnbench.runtime.serial import parallel_above

__all__ = ["dropout_mask", "dropout_apply"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


# both sections serial below a size (Note [serial below a size])
@parallel_above(lambda flat, *_: flat.size, cache=True)
def _fill(flat, key, threshold, scale):
    for i in prange(flat.size):
        z = _mix(key + np.uint64(i) * _GOLDEN)
        flat[i] = scale if (z >> np.uint64(11)) >= threshold else 0.0


@parallel_above(lambda flat_x, *_: flat_x.size, cache=True)
def _apply(flat_x, flat_out, key, threshold, scale):
    zero = scale * 0
    for i in prange(flat_x.size):
        z = _mix(key + np.uint64(i) * _GOLDEN)
        flat_out[i] = flat_x[i] * (scale if (z >> np.uint64(11)) >= threshold else zero)


def _key_threshold(seed: int, call: int, p: float) -> tuple[np.uint64, np.uint64]:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must lie in [0, 1) (got {p})")
    key = _mix(np.uint64((int(seed) & 0xFFFFFFFF) << 32 | (int(call) & 0xFFFFFFFF)) + _GOLDEN)
    return np.uint64(key), np.uint64(int(p * 2.0 ** 53))  # keep when the top 53 bits reach p * 2^53


def dropout_apply(seed: int, call: int, x: np.ndarray, p: float, out: np.ndarray) -> None:
    """``out = x * dropout_mask(seed, call, x.shape, p, x.dtype)`` without the mask (Note [fused dropout]).

    Args:
        seed, call, p: as for :func:`dropout_mask`.
        x: a C-contiguous float32 or float64 array.
        out: a C-contiguous array of ``x``'s shape and dtype, written in place (may be ``x`` itself).
    """
    if x.shape != out.shape or x.dtype != out.dtype or not (x.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError(f"dropout_apply needs C-contiguous x and out of one shape and dtype (got x {x.dtype}"
                         f"{list(x.shape)}, out {out.dtype}{list(out.shape)})")
    key, threshold = _key_threshold(seed, call, p)
    _apply(x.reshape(-1), out.reshape(-1), key, threshold, x.dtype.type(1.0 / (1.0 - p)))


def dropout_mask(seed: int, call: int, shape: tuple[int, ...], p: float, dtype=np.float32) -> np.ndarray:
    """The mask of dropout call ``call`` after seeding with ``seed``: zeros and ``1 / (1 - p)``.

    Args:
        seed: the run's seed.
        call: how many dropout calls came before this one since seeding.
        shape: the shape of the tensor to drop from.
        p: the drop probability, in ``[0, 1)``.
        dtype: float32 or float64, the tensor's dtype.
    """
    key, threshold = _key_threshold(seed, call, p)
    mask = np.empty(shape, dtype=dtype)
    _fill(mask.reshape(-1), key, threshold, dtype(1.0 / (1.0 - p)))
    return mask
