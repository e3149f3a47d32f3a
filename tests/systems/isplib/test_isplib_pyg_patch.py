"""isplib.patch_pyg: PyG's GCNConv, SAGEConv and GINConv give the same outputs and gradients."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg_nn = pytest.importorskip("torch_geometric.nn")
pyg_utils = pytest.importorskip("torch_geometric.utils")

from gnnbench.systems import isplib  # noqa: E402
from gnnbench.systems.isplib import pyg_patch  # noqa: E402

N = 17


def _adjacency(layout=torch.sparse_csr, weighted=False, seed=0):
    """``adj_t[i, j] != 0`` for each edge ``j -> i``, with an isolated node and a duplicate-free hub."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, N - 1, 60)
    dst = rng.integers(0, N - 1, 60)
    src = np.concatenate([src, np.arange(1, N - 1)])
    dst = np.concatenate([dst, np.zeros(N - 2, dtype=np.int64)])
    keys = np.unique(dst * N + src)
    dst, src = np.divmod(keys, N)
    values = torch.from_numpy(rng.uniform(0.5, 2.0, len(src))).float() if weighted else torch.ones(len(src))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coo = torch.sparse_coo_tensor(torch.from_numpy(np.stack([dst, src])), values, (N, N)).coalesce()
        return coo if layout == torch.sparse_coo else coo.to_sparse_csr()


def _run(conv, x, adj):
    x = x.clone().requires_grad_(True)
    for p in conv.parameters():
        p.grad = None
    out = conv(x, adj)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    return out.detach(), x.grad.detach(), [p.grad.detach().clone() for p in conv.parameters()]


def _compare(conv, x, adj, atol=1e-5):
    ref = _run(conv, x, adj)
    calls = []
    real = pyg_patch._IsplibSpMM.apply

    def counting(*args):
        calls.append(args[2])
        return real(*args)

    pyg_patch._IsplibSpMM.apply = counting
    try:
        with isplib.pyg_patched():
            got = _run(conv, x, adj)
    finally:
        pyg_patch._IsplibSpMM.apply = real
    assert calls, "the patched conv did not reach isplib's SpMM"
    torch.testing.assert_close(got[0], ref[0], atol=atol, rtol=1e-5)
    torch.testing.assert_close(got[1], ref[1], atol=atol, rtol=1e-5)
    for g, r in zip(got[2], ref[2]):
        torch.testing.assert_close(g, r, atol=atol, rtol=1e-5)
    return calls


@pytest.mark.parametrize("cached", [False, True])
def test_gcnconv_matches_unpatched(cached):
    torch.manual_seed(0)
    conv = pyg_nn.GCNConv(8, 5, cached=cached)
    x = torch.randn(N, 8)
    calls = _compare(conv, x, _adjacency())
    assert calls == ["sum"]


@pytest.mark.parametrize("aggr", ["mean", "sum"])
def test_sageconv_matches_unpatched(aggr):
    torch.manual_seed(1)
    conv = pyg_nn.SAGEConv(6, 4, aggr=aggr)
    assert _compare(conv, torch.randn(N, 6), _adjacency()) == [aggr]


def test_ginconv_matches_unpatched():
    torch.manual_seed(2)
    mlp = torch.nn.Sequential(torch.nn.Linear(7, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    conv = pyg_nn.GINConv(mlp, train_eps=True)
    assert _compare(conv, torch.randn(N, 7), _adjacency()) == ["sum"]


@pytest.mark.parametrize("layout", [torch.sparse_csr, torch.sparse_coo])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_spmm_weighted_and_layouts(layout, reduce, dtype):
    adj = _adjacency(layout, weighted=True)
    x = torch.randn(N, 33, dtype=dtype)
    adj_d = adj.to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = pyg_utils.spmm(adj_d, x, reduce=reduce)
        with isplib.pyg_patched():
            got = pyg_utils.spmm(adj_d, x, reduce=reduce)
    torch.testing.assert_close(got, ref)


def test_bipartite_adjacency_and_gradient():
    rng = np.random.default_rng(3)
    rows, cols = rng.integers(0, 5, 30), rng.integers(0, 9, 30)
    keys = np.unique(rows * 9 + cols)
    rows, cols = np.divmod(keys, 9)
    adj = torch.sparse_coo_tensor(torch.from_numpy(np.stack([rows, cols])), torch.ones(len(rows)), (5, 9))
    adj = adj.coalesce().to_sparse_csr()
    x = torch.randn(9, 4, requires_grad=True)
    with isplib.pyg_patched():
        out = pyg_patch.isplib_spmm(adj, x, "mean")
    out.sum().backward()
    dense = adj.to_dense()
    deg = dense.sum(1, keepdim=True).clamp(min=1)
    torch.testing.assert_close(out, (dense / deg) @ x.detach())
    torch.testing.assert_close(x.grad, (dense / deg).T @ torch.ones(5, 4))


def test_uncovered_calls_fall_back_to_pyg():
    adj = _adjacency()
    x = torch.randn(N, 3)
    with isplib.pyg_patched():
        got = pyg_utils.spmm(adj, x, reduce="max")  # isplib covers sum/mean only
    torch.testing.assert_close(got, torch.sparse.mm(adj, x, "amax"))


def test_patch_unpatch_and_context_manager_restore_pyg():
    import torch_geometric.nn.conv.gcn_conv as gcn_mod
    import torch_geometric.nn.conv.sage_conv as sage_mod

    original = gcn_mod.spmm
    assert not pyg_patch.is_patched()
    isplib.patch_pyg()
    isplib.patch_pyg()  # idempotent
    assert gcn_mod.spmm is pyg_patch.isplib_spmm and sage_mod.spmm is pyg_patch.isplib_spmm
    assert pyg_utils.spmm is pyg_patch.isplib_spmm
    with isplib.pyg_patched():
        pass
    assert pyg_patch.is_patched()  # nested use keeps the outer patch
    isplib.unpatch_pyg()
    assert gcn_mod.spmm is original and pyg_utils.spmm is original
    with isplib.pyg_patched():
        assert gcn_mod.spmm is pyg_patch.isplib_spmm
    assert gcn_mod.spmm is original


def test_adjacency_cache_reuses_and_invalidates():
    adj = _adjacency(weighted=True)
    a = pyg_patch._adjacency(adj)
    assert pyg_patch._adjacency(adj) is a
    adj.values().mul_(2)  # in-place change: version counter moves
    b = pyg_patch._adjacency(adj)
    assert b is not a and np.allclose(b.weight(torch.float32).ravel(), adj.values().numpy())


def test_new_tensor_with_same_pattern_reuses_the_transpose():
    a1 = _adjacency(weighted=True, seed=4)
    a2 = _adjacency(weighted=True, seed=4) * 3  # a new object, same pattern, new values
    s1 = pyg_patch._adjacency(a1).structure
    adj2 = pyg_patch._adjacency(a2)
    assert adj2.structure is s1
    np.testing.assert_allclose(adj2.weight(torch.float32).ravel(), a2.values().numpy())
