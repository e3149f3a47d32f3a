"""gnnbench's own neighbour sampler: uniform, without replacement, per-layer fanouts, numba-parallel.

For a batch of seed nodes and fanouts ``(f_1, ..., f_L)`` (outermost layer
first, as ``--fanouts 25,10`` means 25 neighbours of each node two hops out
and 10 of each seed), the sampler walks inwards-out: the seeds are the
destinations of the last block; each destination draws ``min(f, deg)`` of
its in-neighbours uniformly without replacement (``f = -1``: all of them);
the sources of that block are its destinations followed by every newly
reached node in order of first appearance; those sources are the
destinations of the block before it. So ``blocks[l].num_dst ==
blocks[l + 1].num_src`` and the first ``num_dst`` sources of a block are its
destinations, as in DGL's ``to_block`` and PyG's relabelled subgraphs.

Note [sampling determinism]
    A sweep must give every system the same blocks, so nothing here reads a
    global random state or depends on thread scheduling. Each epoch's order
    of the training nodes is ``default_rng([seed, epoch])``'s permutation,
    and each destination ``i`` of layer ``l`` in batch ``b`` draws from its
    own SplitMix64 stream keyed by ``(seed, epoch, b, l, i)``; the parallel
    loop over destinations writes disjoint slices, and the relabelling that
    assigns source ids runs serially in edge order. Same key, same blocks,
    whatever the thread count.

Note [without replacement]
    Each destination with ``d`` in-neighbours and fanout ``k < d`` draws a
    uniform ``k``-subset of positions ``0..d-1``: Floyd's algorithm (``k``
    draws, each checked against the ``k`` chosen so far) when ``k`` is at
    most :data:`_FLOYD_MAX_K`, reservoir sampling (one pass over the ``d``
    positions) beyond it, so a 10,000-edge fanout costs ``O(d)`` and not
    ``O(k^2)``. Both give every ``k``-subset probability ``1 / C(d, k)``;
    ``tests/sampling/test_neighbor.py`` checks each neighbour's frequency by
    a chi-square test. A row's sources are left in draw order, as DGL's and
    PyG's are: sorting them cost about half the sampler's time
    (``results/design_figures.md``) for a locality no kernel was shown to need.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
from numba import njit, prange

from gnnbench.runtime.serial import parallel_above

__all__ = ["Block", "SampledBatch", "SeedBatches", "Sampler", "NeighborSampler", "epoch_batches", "check_fanouts"]

#: Note [without replacement]: Floyd's algorithm up to this fanout, reservoir sampling beyond.
_FLOYD_MAX_K = 64
#: The largest fanout: the numba kernels count in int64, and no graph gnnbench loads has a node of more
#: neighbours, so a larger one would mean "all" (write -1) or a typo.
MAX_FANOUT = 2**31 - 1


def check_fanouts(fanouts: Sequence[Any]) -> tuple[int, ...]:
    """Fanouts as ints, each in ``[1, MAX_FANOUT]`` or ``-1`` (all neighbours).

    Raises:
        ValueError: naming the bad one.
    """
    out = []
    for f in fanouts:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)):
            raise ValueError(f"fanouts must be integers (got {f!r})")
        if f == 0 or f < -1:
            raise ValueError(f"each fanout must be >= 1, or -1 for all neighbours (got {int(f)})")
        if f > MAX_FANOUT:
            raise ValueError(f"each fanout must be at most {MAX_FANOUT}, or -1 for all neighbours (got {int(f)})")
        out.append(int(f))
    if not out:
        raise ValueError("give at least one fanout, e.g. 25,10")
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Block:
    """One sampled layer: ``num_dst`` destinations aggregating over ``num_src`` sources (a prefix: dst i is src i).

    Attributes:
        indptr: ``[num_dst + 1]`` int64 row offsets.
        indices: ``[E]`` local source id of each sampled edge, ``< num_src``, in the index dtype.
        num_dst, num_src: the block's shape.
    """

    indptr: np.ndarray
    indices: np.ndarray
    num_dst: int
    num_src: int

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    def to_graph(self, self_loops: bool = False):
        """This block as a rectangular :class:`~gnnbench.runtime.graph.Graph` (plus destination self loops)."""
        from gnnbench.runtime.graph import Graph

        g = Graph(self.indptr, self.indices, self.num_dst, num_src=self.num_src)
        return g.with_self_loops() if self_loops else g


@dataclass(eq=False)
class SampledBatch:
    """One mini-batch: ``blocks`` outermost first, ``input_nodes`` (global ids of the first block's sources)
    and ``seeds`` (global ids of the last block's destinations, the nodes the loss is taken on)."""

    blocks: list[Block]
    input_nodes: np.ndarray
    seeds: np.ndarray
    _graphs: dict[bool, list] = field(default_factory=dict, repr=False)

    @property
    def num_edges(self) -> int:
        return sum(b.num_edges for b in self.blocks)

    def gather(self, F, features: np.ndarray):
        """The input nodes' features as a framework tensor (the *gather* phase's work)."""
        return F.tensor(features[self.input_nodes])

    def graphs(self, self_loops: bool = False) -> list:
        if self_loops not in self._graphs:
            self._graphs[self_loops] = [b.to_graph(self_loops) for b in self.blocks]
        return self._graphs[self_loops]


def epoch_batches(train_nodes: np.ndarray, batch_size: int, seed: int, epoch: int,
                  shuffle: bool = True) -> list[np.ndarray]:
    """The epoch's batches of seed nodes: a seeded shuffle of ``train_nodes`` cut into ``batch_size`` pieces
    (the last may be smaller) (Note [sampling determinism])."""
    nodes = np.asarray(train_nodes, dtype=np.int64)
    if shuffle:
        nodes = nodes[np.random.default_rng([seed, epoch]).permutation(nodes.shape[0])]
    return [nodes[i:i + batch_size] for i in range(0, nodes.shape[0], batch_size)]


# ---------------------------------------------------------------- kernels

@njit(cache=True, inline="always")
def _splitmix(state):
    z = state + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _below(x, n):
    """A uniform integer in ``[0, n)`` from 64 random bits (multiply-shift; bias < n / 2^32 for n < 2^32)."""
    return np.int64(((x >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


# both sections serial below a size (Note [serial below a size])
@parallel_above(lambda indptr, dst_nodes, *_: dst_nodes.shape[0], cache=True)
def _counts(indptr, dst_nodes, fanout, counts):
    for i in prange(dst_nodes.shape[0]):
        v = dst_nodes[i]
        d = indptr[v + 1] - indptr[v]
        counts[i] = d if (fanout < 0 or fanout >= d) else fanout


@parallel_above(lambda *args: args[-1].shape[0], cache=True)  # the edges drawn
def _draw(indptr, indices, dst_nodes, fanout, key, out_ptr, picked):
    """Global source ids of each destination's sample into ``picked[out_ptr[i]:out_ptr[i+1]]``."""
    for i in prange(dst_nodes.shape[0]):
        v = dst_nodes[i]
        start = indptr[v]
        d = indptr[v + 1] - start
        o = out_ptr[i]
        k = out_ptr[i + 1] - o
        if k == d:
            for p in range(d):
                picked[o + p] = indices[start + p]
            continue
        state = _splitmix(key ^ (np.uint64(i) * np.uint64(0xD1B54A32D192ED03)))
        if k <= 64:  # Floyd: positions j in [d-k, d); store positions first
            n = 0
            for j in range(d - k, d):
                state = state + np.uint64(0x9E3779B97F4A7C15)
                t = _below(_splitmix(state), j + 1)
                seen = False
                for q in range(n):
                    if picked[o + q] == t:
                        seen = True
                        break
                picked[o + n] = j if seen else t
                n += 1
        else:  # reservoir sampling (Algorithm R) over positions
            for p in range(k):
                picked[o + p] = p
            for p in range(k, d):
                state = state + np.uint64(0x9E3779B97F4A7C15)
                t = _below(_splitmix(state), p + 1)
                if t < k:
                    picked[o + t] = p
        for q in range(k):
            picked[o + q] = indices[start + picked[o + q]]


@njit(cache=True)
def _relabel(dst_nodes, picked, local, local_of):
    """Local ids: destinations keep ``0..N-1``; new sources get ``N, N+1, ...`` in edge order.

    ``local_of`` is a ``[num_nodes]`` map holding -1 everywhere on entry and on exit.
    Returns the sources' global ids.
    """
    n = dst_nodes.shape[0]
    for i in range(n):
        local_of[dst_nodes[i]] = i
    extra = np.empty(picked.shape[0], dtype=np.int64)
    m = 0
    for e in range(picked.shape[0]):
        u = picked[e]
        q = local_of[u]
        if q < 0:
            q = n + m
            local_of[u] = q
            extra[m] = u
            m += 1
        local[e] = q
    for i in range(n):
        local_of[dst_nodes[i]] = -1
    for j in range(m):
        local_of[extra[j]] = -1
    src = np.empty(n + m, dtype=np.int64)
    src[:n] = dst_nodes
    src[n:] = extra[:m]
    return src


class SeedBatches:
    """What every sampler shares, typed or not: an epoch's batches are :func:`epoch_batches`'s seeds, each drawn
    by the subclass's ``sample(seeds, epoch, batch)``; the subclass sets ``seed``."""

    seed: int

    def batches(self, train_nodes: np.ndarray, batch_size: int, epoch: int, shuffle: bool = True) -> Iterator[Any]:
        """The epoch's sampled batches, in order (:func:`epoch_batches`)."""
        for b, seeds in enumerate(epoch_batches(train_nodes, batch_size, self.seed, epoch, shuffle)):
            yield self.sample(seeds, epoch, b)

    def sample(self, seeds: np.ndarray, epoch: int = 0, batch: int = 0) -> Any:
        raise NotImplementedError


class Sampler(SeedBatches):
    """What every sampler (``--sampler``) shares: the graph's in-edges, the fanouts, the seed and the epoch's
    batches of seed nodes (:func:`epoch_batches`, the same for every sampler); a subclass draws the blocks.

    Args:
        indptr (np.ndarray): ``[N + 1]`` CSR-by-destination offsets of the full graph.
        indices (np.ndarray): ``[E]`` source of each in-edge.
        fanouts (sequence of int): per layer, outermost first; ``-1`` takes every neighbour.
        seed (int): the run's seed (default: 0).
        index_dtype: dtype of the blocks' indices (default: int64).
    """

    name = "sampler"

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int], seed: int = 0,
                 index_dtype: Any = np.int64):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int64)
        self.num_nodes = self.indptr.shape[0] - 1
        self.fanouts = check_fanouts(fanouts)
        self.seed = int(seed)
        self.index_dtype = np.dtype(index_dtype)

    @classmethod
    def from_graph(cls, graph, fanouts: Sequence[int], seed: int = 0) -> "Sampler":
        return cls(graph.indptr, graph.indices, fanouts, seed, graph.index_dtype)

    def sample(self, seeds: np.ndarray, epoch: int = 0, batch: int = 0) -> SampledBatch:
        """The blocks of batch ``batch`` of epoch ``epoch``, whose seed nodes are ``seeds``."""
        raise NotImplementedError


class NeighborSampler(Sampler):
    """Uniform neighbour sampling without replacement over a graph's in-edges (arguments as :class:`Sampler`).

    ``sample(seeds, epoch, batch)`` returns a :class:`SampledBatch`; equal
    ``(seed, epoch, batch)`` and seeds give equal blocks (Note [sampling determinism]).
    """

    name = "gnnbench"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._local_of = np.full(self.num_nodes, -1, dtype=np.int64)

    def _key(self, epoch: int, batch: int, layer: int) -> np.uint64:
        words = np.random.SeedSequence([self.seed, epoch, batch, layer]).generate_state(2, np.uint32)
        return np.uint64((int(words[0]) << 32) | int(words[1]))

    def sample(self, seeds: np.ndarray, epoch: int = 0, batch: int = 0) -> SampledBatch:
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        nodes = seeds
        blocks: list[Block] = []
        for layer in range(len(self.fanouts) - 1, -1, -1):  # innermost (the seeds') first
            fanout = self.fanouts[layer]
            counts = np.empty(nodes.shape[0], dtype=np.int64)
            _counts(self.indptr, nodes, fanout, counts)
            out_ptr = np.zeros(nodes.shape[0] + 1, dtype=np.int64)
            np.cumsum(counts, out=out_ptr[1:])
            picked = np.empty(int(out_ptr[-1]), dtype=np.int64)
            _draw(self.indptr, self.indices, nodes, fanout, self._key(epoch, batch, layer), out_ptr, picked)
            local = np.empty_like(picked)
            src = _relabel(nodes, picked, local, self._local_of)
            blocks.append(Block(out_ptr, local.astype(self.index_dtype, copy=False), int(nodes.shape[0]),
                                int(src.shape[0])))
            nodes = src
        blocks.reverse()
        return SampledBatch(blocks, nodes, seeds)
