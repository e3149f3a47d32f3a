"""The native baselines of the relational models: PyG's and DGL's own heterogeneous layers, declared as data.

Note [typed natives]
    A relational model declares its layer in each library beside its own convolution (``RGCN.pyg``,
    ``RGAT.dgl`` in models/; :class:`~gnnbench.models.native.Typed`), in one of two forms:

    * per relation: the library's heterogeneous wrapper (PyG's ``HeteroConv``, DGL's ``HeteroGraphConv``,
      summing) over one layer per relation (``GATConv((in_src, in_dst), ...)``), each loaded with relation
      ``k``'s values (gnnbench's ``r{k}.*``), on the library's typed graph (a dict of ``edge_index`` per edge
      type, a ``dgl.heterograph``). This is MLPerf's R-GAT.
    * homogeneous: one layer on the homogeneous form (Note [homogeneous form] in gnnbench/runtime/hetero.py)
      with each edge's relation: PyG's ``RGCNConv(aggr="mean")``, DGL's ``RelGraphConv`` with R-GCN's
      ``1 / |N_r(i)|`` as its per-edge ``norm``. Their self-connection is one matrix, as gnnbench's.

    The layer loop is the model's own (``TypedGNN.forward``): dropout per node type in the same order (so the
    same masks), the activation between layers, the target type's rows, R-GAT's output ``Linear``. So the
    natives train the same function from the same values, with the same first loss.

    What differs: DGL's ``HeteroGraphConv`` skips a relation with no edges, whose layer would add its bias
    alone; the loop adds that bias back (no preset has an empty relation; verify's typed graph has one).

Note [typed natives on blocks]
    On sampled typed blocks (Note [typed layers on blocks] in models/typed.py) each layer binds its block as its
    library binds a typed graph, from the same block arrays every system gets (``--sampler gnnbench`` or
    ``dgl``): DGL a ``dgl.create_block`` of one edge type per relation (``HeteroGraphConv`` feeds each
    relation's layer the first ``num_dst`` rows of its destination type, as DGL's own sampled examples do),
    PyG one ``edge_index`` per edge type (``HeteroConv`` gives a destination type its sources' rows, of which
    the first ``num_dst`` are kept, as PyG's ``NeighborLoader`` examples slice ``[:batch_size]``). The
    homogeneous form of a block puts every type's destinations first, in type order, then every type's other
    sources, so ``RelGraphConv``'s self-connection (``feat[:num_dst]``) and ``RGCNConv``'s pair ``(x, x[:N])``
    read the destinations; the mean per relation is over the block's sampled edges, as gnnbench's. What a
    wrapper leaves out is added back as on the whole graph: the bias of a relation whose source type has no
    source in the block (R-GAT's empty attention), and, in DGL, of a relation without edges. Types without
    destinations drop out of a layer's output, as in gnnbench's model, so the dropout masks stay the same.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ..errors import UserError
from ._layers import build_quietly, load, native_values

__all__ = ["build_typed", "build_typed_blocks", "dgl_heterograph", "is_block", "typed_counts"]


def _resolve(v, sizes: dict[str, Any]):
    from gnnbench.models.native import Dim

    if isinstance(v, Dim):
        return sizes[v.name]
    if isinstance(v, tuple):
        return tuple(_resolve(item, sizes) for item in v)
    return v


def _construct(declared, nn, model, sizes: dict[str, Any], changes=None):
    cls = getattr(nn, declared.name, None)
    if cls is None:
        raise UserError(f"model '{model.name}' names the layer {nn.__name__}.{declared.name}, which this version "
                        f"of {nn.__name__.split('.')[0]} does not have")
    kwargs = {**declared.kwargs, **(changes or {})}
    return cls(*(_resolve(a, sizes) for a in declared.args), **{k: _resolve(v, sizes) for k, v in kwargs.items()})


def _layer_values(initial: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: v for k, v in initial.items() if k.startswith(prefix)}


def build_typed(library: str, nn, model, graph, initial: dict[str, np.ndarray], F, x: dict[str, Any]
                ) -> tuple[dict[str, torch.Tensor], Callable[[bool], Any]]:
    """``(params, forward)`` of relational ``model`` from ``library``'s declared layers (Note [typed natives]).

    Args:
        library: ``"pyg"`` or ``"dgl"``, the model attribute that declares its layer.
        nn: the library's layer module (``torch_geometric.nn``, ``dgl.nn``).
        graph: the :class:`~gnnbench.runtime.hetero.HeteroGraph`.
        x: features per node type as frontend tensors.
    """
    layers = _TypedLayers(library, nn, model, initial, F)
    bound = layers.bind(graph)
    return layers.params, lambda training: layers.run([bound] * len(layers.modules), x, training)


def build_typed_blocks(library: str, nn, model, initial: dict[str, np.ndarray], F):
    """``(params, to_blocks, forward)`` of relational ``model`` on sampled typed blocks, as the homogeneous
    ``build_blocks`` give (Note [typed natives on blocks]): ``to_blocks(graphs)`` makes each
    :class:`~gnnbench.sampling.hetero.HeteroBlock` (or a whole typed graph, for full-neighbour evaluation) the
    library's own typed graph, ``forward(blocks, x, training)`` runs layer ``i`` on block ``i``."""
    layers = _TypedLayers(library, nn, model, initial, F)

    def to_blocks(graphs):
        return [layers.bind(g) for g in graphs]

    def forward(blocks, x, training: bool):
        return layers.run(blocks, x, training)

    return layers.params, to_blocks, forward


def is_block(graph) -> bool:
    """Whether ``graph`` is a sampled typed block (:class:`~gnnbench.sampling.hetero.HeteroBlock`: counts per type
    of destinations and sources) rather than a whole typed graph."""
    return isinstance(getattr(graph, "num_dst", None), dict)


def typed_counts(graph) -> tuple[dict[str, int], dict[str, int]]:
    """``(num_dst, num_src)`` per node type: a sampled typed block's, or a whole typed graph's counts as both."""
    if is_block(graph):
        return graph.num_dst, graph.num_src
    return graph.node_counts, graph.node_counts


class _TypedLayers:
    """A relational model's layers in one library (Note [typed natives]): built once, bound to any typed graph
    or block (:meth:`bind`), run by the model's own layer loop (:meth:`run`)."""

    def __init__(self, library: str, nn, model, initial: dict[str, np.ndarray], F):
        native = getattr(model, library)
        build = _per_relation if native.typed.form == "per_relation" else _homogeneous
        self.modules, self.orders, self.bind = build(library, nn, model, initial, F, native)
        self.params = {f"conv{i}.{name}": p for i, m in enumerate(self.modules) for name, p in m.named_parameters()}
        self.head = None
        if native.typed.head is not None:
            hidden, classes = initial["lin.weight"].shape
            self.head = build_quietly(lambda: torch.nn.Linear(hidden, classes), F)
            load(self.head, native_values(native.typed.head, initial), F)
            self.params.update({f"head.{name}": p for name, p in self.head.named_parameters()})
        self.model, self.F = model, F

    def run(self, bound: list, x: dict[str, Any], training: bool):
        """The target type's logits: layer ``i`` calls ``bound[i]`` (one :meth:`bind`'s result per layer)."""
        model, F = self.model, self.F
        last = len(self.modules) - 1
        for m in self.modules:
            m.train(training)
        h = dict(x)
        for i, module in enumerate(self.modules):
            if i or model.input_dropout:
                h = {t: F.dropout(v, model.hyper.dropout, training) for t, v in h.items()}
            out = bound[i](i, module, h)
            h = {t: out[t] for t in self.orders[i] or out if t in out}  # gnnbench's order: the same dropout masks
            if i < last:
                h = {t: model.activation(F, v) for t, v in h.items()}
        target = h[model.schema.target]
        return target if self.head is None else self.head(target)


def _per_relation(library, nn, model, initial, F, native):
    """One wrapper per layer over one layer per relation (PyG ``HeteroConv``, DGL ``HeteroGraphConv``)."""
    typed, hyper = native.typed, model.hyper
    relations = model.schema.relations
    modules, orders, convs_of = [], [], []
    for i, (in_dim, out_dim) in enumerate(model.layer_dims()):
        widths = model._widths(i)
        used = [k for k in range(len(relations)) if f"conv{i}.r{k}.bias" in initial]
        convs = {}
        for k in used:
            r = relations[k]
            sizes = {"in_src": widths[r.src], "in_dst": widths[r.dst], "heads": hyper.heads,
                     "head_width": hyper.hidden // hyper.heads, "in": in_dim, "out": out_dim}
            conv = build_quietly(lambda: _construct(native.layer, nn, model, sizes), F)
            load(conv, native_values(native.params, _layer_values(initial, f"conv{i}.r{k}.")), F)
            convs[k] = conv
        key = (lambda r: (r.src, r.name, r.dst)) if library == "pyg" else (lambda r: r.name)
        modules.append(build_quietly(lambda: getattr(nn, typed.wrapper)(
            {key(relations[k]): c for k, c in convs.items()}, **typed.wrapper_kwargs), F))
        orders.append(list(dict.fromkeys(relations[k].dst for k in used)))
        convs_of.append(convs)
    if library == "dgl" and len({r.name for r in relations}) != len(relations):
        raise UserError("dgl-native's HeteroGraphConv names each relation's layer by the relation's name alone, "
                        "so relation names must be unique")

    def bind(graph):
        num_dst, _ = typed_counts(graph)
        wrapper = _pyg_hetero(graph, relations, F) if library == "pyg" else _dgl_hetero(graph, relations, F)
        skips_empty = library == "dgl"  # HeteroGraphConv skips a relation with no edges (Note [typed natives])

        def call(i, module, h):
            out = {t: v.reshape(v.shape[0], -1)[:num_dst[t]] for t, v in wrapper(module, h).items() if num_dst[t]}
            for k, conv in convs_of[i].items():  # the biases the wrapper leaves out
                r = relations[k]
                skipped = r.src not in h or (skips_empty and graph.graphs[k].num_edges == 0)
                if skipped and r.dst in h and num_dst[r.dst]:
                    bias = conv.bias.reshape(1, -1).expand(num_dst[r.dst], -1)
                    out[r.dst] = bias if r.dst not in out else out[r.dst] + bias
            return out

        return call

    return modules, orders, bind


def _pyg_hetero(graph, relations, F):
    """PyG's typed graph: ``edge_index`` per edge type, local ids of its types; ``wrapper(module, h)`` runs a
    ``HeteroConv`` on the types present (on a block each type's output has its sources' rows; the caller keeps
    the destinations, its first rows)."""
    edge_index = {(r.src, r.name, r.dst): torch.from_numpy(np.stack(g.edges())).to(F.device)
                  for r, g in zip(relations, graph.graphs)}

    def wrapper(module, h):
        return module(h, {k: v for k, v in edge_index.items() if k[0] in h and k[2] in h})

    return wrapper


def _dgl_hetero(graph, relations, F):
    """DGL's typed graph (``dgl.heterograph``, or ``dgl.create_block`` for a sampled block); ``wrapper(module, h)``
    runs a ``HeteroGraphConv`` on it."""
    from .dgl_shim import dgl

    num_dst, num_src = typed_counts(graph)
    hg = (dgl.create_block(_dgl_edges(relations, graph.graphs), num_src_nodes=dict(num_src),
                           num_dst_nodes=dict(num_dst)) if is_block(graph) else dgl_heterograph(graph)).to(F.device)
    return lambda module, h: module(hg, h)


def dgl_heterograph(graph):
    """``graph`` (a :class:`~gnnbench.runtime.hetero.HeteroGraph`) as a ``dgl.heterograph``, each relation its
    canonical edge type ``(src, name, dst)``, on the CPU."""
    from .dgl_shim import dgl

    return dgl.heterograph(_dgl_edges(graph.relations, graph.graphs), num_nodes_dict=dict(graph.node_counts))


def _dgl_edges(relations, graphs) -> dict[tuple[str, str, str], tuple[torch.Tensor, torch.Tensor]]:
    """Each relation's ``(src, dst)`` by its canonical edge type, as DGL's constructors take them."""
    return {(r.src, r.name, r.dst): tuple(torch.from_numpy(a) for a in g.edges()) for r, g in zip(relations, graphs)}


def _homogeneous(library, nn, model, initial, F, native):
    """One layer per layer on the homogeneous form (PyG ``RGCNConv``, DGL ``RelGraphConv``)."""
    typed, hyper = native.typed, model.hyper
    relations = model.schema.relations
    bases = hyper.bases
    params_map = typed.bases_params if bases is not None else native.params
    modules = []
    for i, (in_dim, out_dim) in enumerate(model.layer_dims()):
        sizes = {"in": in_dim, "out": out_dim, "relations": len(relations), "bases": bases}
        conv = build_quietly(lambda: _construct(native.layer, nn, model, sizes,
                                                typed.bases_changes if bases is not None else None), F)
        load(conv, native_values(params_map, _layer_values(initial, f"conv{i}.")), F)
        modules.append(conv)

    def bind(graph):
        layout = _HomogeneousLayout(graph, relations)
        src, dst = layout.src, layout.dst
        edge_type = torch.from_numpy(layout.edge_type).to(F.device)
        if library == "pyg":
            edge_index = torch.from_numpy(np.stack([src, dst])).to(F.device)

            def run(module, x_all):
                if layout.whole:
                    return module(x_all, edge_index, edge_type)
                return module((x_all, x_all[:layout.num_dst]), edge_index, edge_type)
        else:
            from .dgl_shim import dgl

            s, d = torch.from_numpy(src), torch.from_numpy(dst)
            g = (dgl.graph((s, d), num_nodes=layout.num_src) if layout.whole else
                 dgl.create_block((s, d), num_src_nodes=layout.num_src, num_dst_nodes=layout.num_dst)).to(F.device)
            key = dst * len(relations) + layout.edge_type
            _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
            norm = torch.from_numpy((1.0 / counts[inverse]).reshape(-1, 1)).to(F.device, F.dtype)

            def run(module, x_all):
                return module(g, x_all, edge_type, norm)

        def call(i, module, h):
            return layout.split(run(module, layout.gather(h)))

        return call

    return modules, [None] * len(modules), bind  # None: the output's own order, the graph's types


class _HomogeneousLayout:
    """A typed graph or block in homogeneous form (Note [homogeneous form]) with a block's rule kept (Note [typed
    natives on blocks]): the sources are every type's destinations, in type order, then every type's other
    sources, so the destinations are the first rows. On a whole typed graph that is the homogeneous form itself
    (types one after the other), edges in its order: by destination, then relation, then source."""

    def __init__(self, graph, relations):
        num_dst, num_src = typed_counts(graph)
        self.types = list(num_dst)
        self.whole = not is_block(graph)
        self.dst_sizes = [num_dst[t] for t in self.types]
        self.num_dst = sum(self.dst_sizes)
        self.num_src = sum(num_src.values())
        dst_start = dict(zip(self.types, np.cumsum([0] + self.dst_sizes[:-1]).tolist()))
        others = [num_src[t] - num_dst[t] for t in self.types]
        other_start = dict(zip(self.types, (self.num_dst + np.cumsum([0] + others[:-1])).tolist()))
        self._num_dst = num_dst
        srcs, dsts, rels = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for k, (r, g) in enumerate(zip(relations, graph.graphs)):
            s, d = g.edges()
            own = s < num_dst[r.src]
            srcs.append(np.where(own, dst_start[r.src] + s, other_start[r.src] + s - num_dst[r.src]))
            dsts.append(dst_start[r.dst] + d)
            rels.append(np.full(s.shape[0], k, dtype=np.int64))
        src, dst, rel = (np.concatenate(a) for a in (srcs, dsts, rels))
        order = np.lexsort((src, rel, dst))
        self.src, self.dst, self.edge_type = src[order], dst[order], rel[order]

    def gather(self, h: dict[str, Any]):
        """The layer's input ``[num_src, F]`` from the features per type (a type absent from ``h`` has no
        sources here)."""
        width = next(iter(h.values())).shape[1]
        parts = [h[t] if t in h else next(iter(h.values())).new_zeros((0, width)) for t in self.types]
        own = [p[:n] for p, n in zip(parts, self.dst_sizes)]
        return torch.cat(own + [p[n:] for p, n in zip(parts, self.dst_sizes)])

    def split(self, out) -> dict[str, Any]:
        """The layer's output per type, the types without destinations left out (as gnnbench's model leaves
        them)."""
        return {t: v for t, v in zip(self.types, torch.split(out, self.dst_sizes)) if self._num_dst[t]}
