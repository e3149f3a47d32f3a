"""``pyg-native``: gnnbench's models built from PyG's own convolution layers.

Each model names its PyG layer, the layer's constructor arguments and where
gnnbench's parameter values go in it, in its own file (``GCN.pyg`` in
models/gcn.py; Note [native counterparts] in models/native.py).

The graph goes to PyG as an ``edge_index`` (``[2, E]``, source row first) in
gnnbench's canonical order, the input every PyG example uses, so PyG's
``MessagePassing`` gathers with ``index_select`` and aggregates with
``scatter`` (the ``pyg`` kernel system's default path). Two options
(:func:`configure`, ``-o KEY=VALUE``) show what a PyG user can change:

* ``adjacency=sparse``: the graph as a ``torch.sparse`` CSR ``adj_t`` (row
  ``i`` holds the sources of the edges into ``i``, unit values), so PyG's
  layers take their ``spmm`` path (MKL) instead of gather-scatter;
* ``patch=isplib``: ``isplib.patch_pyg()`` before the layers are built, so that
  path runs isplib's kernels: "PyG in two lines" (``campaigns/bench_pyg_patch.toml``). The layer loop is
Note [native model parity] in :mod:`gnnbench.peers`.

Differences that remain:

* GCN normalisation: PyG's ``gcn_norm`` weighs edge ``j -> i`` by
  ``1 / sqrt(d_in(i) d_in(j))`` (it counts in-degrees only), gnnbench by
  ``1 / sqrt(d_in(i) d_out(j))``. They agree on symmetric graphs (every
  gnnbench dataset except a directed ``rmat``); on a directed graph the two
  models compute different functions at the same cost. PyG computes the
  norm during the first forward pass and caches it (``cached=True``, PyG's
  setting for a fixed graph), so it falls in a warm-up epoch, where
  gnnbench computes it before training.
* ``GATConv``'s softmax adds ``1e-16`` to each denominator (no visible effect).
* PyG ``Linear`` layers keep their weight as ``[out, in]`` and compute
  ``x @ W.T``; the values are gnnbench's, transposed, so results agree to
  rounding but are not bit-identical.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable

import numpy as np
import torch

from ..errors import UserError
from ._layers import build_convs, counterpart, layer_loop, named_params

__all__ = ["build", "configure", "ADJACENCIES", "PATCHES"]

#: this baseline as the registry lists it, read there without importing this module (Note [native baseline
#: discovery] in gnnbench.runtime.registry)
NATIVE_BASELINE = {"name": "pyg-native", "requires": ("torch_geometric",), "position": 0,
                   "summary": "PyG's own GCNConv/GATConv/GINConv/SAGEConv models (framework baseline)",
                   "version_of": "torch_geometric"}
#: the model attribute that declares a model's layer in this library (Note [native counterparts] in
#: models/native.py)
COUNTERPART = "pyg"

ADJACENCIES = ("edge_index", "sparse")
PATCHES = ("none", "isplib")
_OPTIONS = {"adjacency": "edge_index", "patch": "none"}


def configure(adjacency: str = "edge_index", patch: str = "none") -> None:
    """Options of ``pyg-native`` (Note [system options] in :mod:`gnnbench.run.preflight`).

    Args:
        adjacency (str): how PyG gets the graph: ``edge_index`` or ``sparse`` (default: ``edge_index``).
        patch (str): ``isplib`` runs ``isplib.patch_pyg()`` first; ``none`` leaves PyG as is (default: ``none``).
    """
    if adjacency not in ADJACENCIES:
        raise UserError(f"pyg-native option adjacency must be one of {', '.join(ADJACENCIES)} (got '{adjacency}')")
    if patch not in PATCHES:
        raise UserError(f"pyg-native option patch must be one of {', '.join(PATCHES)} (got '{patch}')")
    if patch == "isplib" and adjacency != "sparse":
        raise UserError("pyg-native option patch=isplib replaces PyG's sparse spmm, which only adjacency=sparse "
                        "uses; add -o adjacency=sparse")
    _OPTIONS.update(adjacency=adjacency, patch=patch)


def _adjacency(graph, edge_index: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``edge_index`` or, with ``adjacency=sparse``, PyG's ``adj_t`` as a torch.sparse CSR tensor.

    A torch.sparse CSR holds each (row, column) once, so parallel edges would merge into one entry of value
    2: GCN and GIN would still sum the same, but GAT's softmax would see one edge and SAGE's mean would divide
    by one. Such a graph is refused rather than trained as another function. gnnbench's datasets have no
    parallel edges; the model check's two graphs have one each.
    """
    if _OPTIONS["adjacency"] == "edge_index":
        return edge_index
    parallel = _parallel_edges(graph)
    if parallel:
        raise UserError(f"pyg-native option adjacency=sparse cannot hold this graph's {parallel:,} parallel "
                        f"edge(s): a torch.sparse adj_t merges them, which changes GAT's softmax and SAGE's "
                        f"mean; use adjacency=edge_index")
    n = graph.num_nodes
    values = torch.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device)
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice, once per process
        warnings.simplefilter("ignore", UserWarning)
        coo = torch.sparse_coo_tensor(edge_index.flip(0), values, (n, n), check_invariants=True)
        return coo.coalesce().to_sparse_csr()


def _parallel_edges(graph) -> int:
    """How many edges repeat an earlier edge's (source, destination). Each row's sources are sorted
    (``Graph.from_edges``), so a repeat sits right after its first."""
    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    if indices.size < 2:
        return 0
    repeat = indices[1:] == indices[:-1]  # [i]: edge i + 1 has edge i's source
    starts = indptr[1:-1]
    repeat[starts[(starts > 0) & (starts < indices.size)] - 1] = False  # ... but begins another row
    return int(repeat.sum())


def layer_library():
    """``torch_geometric.nn`` (once per process; NativeBaseline.load imports it untimed)."""
    import torch_geometric.nn

    return torch_geometric.nn


def build(model, graph, initial_params: dict[str, np.ndarray], F, x: Any
          ) -> tuple[dict[str, torch.Tensor], Callable[[bool], Any]]:
    """PyG convolutions for ``model`` with gnnbench's initial values; see :func:`gnnbench.peers.build_native`."""
    if getattr(model, "typed", False):  # a relational model (Note [typed natives] in gnnbench.peers.typed)
        from .typed import build_typed

        counterpart(model, COUNTERPART, "pyg-native")
        return build_typed(COUNTERPART, layer_library(), model, graph, initial_params, F, x)
    native = counterpart(model, COUNTERPART, "pyg-native")
    src, dst = graph.edges()
    edge_index = _adjacency(graph, torch.from_numpy(np.stack([src, dst])).to(F.device), F.dtype)
    if _OPTIONS["patch"] != "none":  # the patching system's own package, by the option's name, as glue is found
        importlib.import_module(f"gnnbench.systems.{_OPTIONS['patch']}").patch_pyg()
    convs = build_convs(model, initial_params, F, native, layer_library())
    return named_params(convs), layer_loop(model, F, convs, x, lambda i, conv, h: conv(h, edge_index))


def build_blocks(model, initial_params: dict[str, np.ndarray], F):
    """The same convolutions for sampled blocks (Note [sampled batching] in gnnbench.run.sampled).

    Returns ``(params, to_blocks, forward)`` as :func:`gnnbench.peers.dgl_native.build_blocks`. A block is
    ``(edge_index, (S, N), weights)``. A layer takes ``(x, x[:N])`` with ``size=(S, N)``, PyG's bipartite
    form, unless its model's declaration says otherwise (``Blocks`` in models/native.py): PyG's ``GCNConv``
    takes no pair and normalises by in-degree alone (zero for a block's outer sources), so GCN runs
    unnormalised with the block's ``gcn_norm`` as edge weights over ``S`` rows and keeps the first ``N``, as
    PyG's NeighborLoader examples slice ``[:batch_size]``.
    """
    if getattr(model, "typed", False):  # Note [typed natives on blocks] in gnnbench.peers.typed
        from .typed import build_typed_blocks

        counterpart(model, COUNTERPART, "pyg-native")
        return build_typed_blocks(COUNTERPART, layer_library(), model, initial_params, F)
    native = counterpart(model, COUNTERPART, "pyg-native")
    on_blocks = native.blocks
    convs = build_convs(model, initial_params, F, native, layer_library(), on_blocks.changes)

    def to_blocks(graphs):
        out = []
        for g in graphs:
            src, dst = g.edges()
            edge_index = torch.from_numpy(np.stack([src, dst])).to(F.device)
            # a copy: Graph's cached weights are read-only, which torch.from_numpy warns about on every block
            weight = (() if on_blocks.edge_weight is None else
                      (torch.tensor(getattr(g, on_blocks.edge_weight)(), dtype=F.dtype, device=F.device),))
            out.append((edge_index, (g.num_src, g.num_nodes), weight))
        return out

    def forward(blocks, x, training: bool):
        def call(i, conv, h):
            edge_index, (s, n), weight = blocks[i]
            if on_blocks.pair:
                return conv((h, h[:n]), edge_index, *weight, size=(s, n))
            return conv(h, edge_index, *weight)[:n]

        return layer_loop(model, F, convs, x, call)(training)

    return named_params(convs), to_blocks, forward
