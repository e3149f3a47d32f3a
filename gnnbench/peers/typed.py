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
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ..errors import UserError
from ._layers import build_quietly, load, native_values

__all__ = ["build_typed"]


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
    native = getattr(model, library)
    typed = native.typed
    build = _per_relation if typed.form == "per_relation" else _homogeneous
    modules, call, orders = build(library, nn, model, graph, initial, F, native)
    params = {f"conv{i}.{name}": p for i, m in enumerate(modules) for name, p in m.named_parameters()}
    head = None
    if typed.head is not None:
        hidden, classes = initial["lin.weight"].shape
        head = build_quietly(lambda: torch.nn.Linear(hidden, classes), F)
        load(head, native_values(typed.head, initial), F)
        params.update({f"head.{name}": p for name, p in head.named_parameters()})
    target, last = model.schema.target, len(modules) - 1

    def forward(training: bool):
        for m in modules:
            m.train(training)
        h = dict(x)
        for i, module in enumerate(modules):
            if i or model.input_dropout:
                h = {t: F.dropout(v, model.hyper.dropout, training) for t, v in h.items()}
            out = call(i, module, h)
            h = {t: out[t] for t in orders[i] if t in out}  # gnnbench's order: the same dropout masks
            if i < last:
                h = {t: model.activation(F, v) for t, v in h.items()}
        return h[target] if head is None else head(h[target])

    return params, forward


def _per_relation(library, nn, model, graph, initial, F, native):
    """One wrapper per layer over one layer per relation (PyG ``HeteroConv``, DGL ``HeteroGraphConv``)."""
    typed, hyper = native.typed, model.hyper
    relations = graph.relations
    modules, orders, empty_biases = [], [], []
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
        empty_biases.append([(relations[k].dst, convs[k]) for k in used if graph.graphs[k].num_edges == 0])
    if library == "pyg":
        edge_index = {(r.src, r.name, r.dst): torch.from_numpy(np.stack(g.edges())).to(F.device)
                      for r, g in zip(relations, graph.graphs)}

        def call(i, module, h):
            return module(h, {k: v for k, v in edge_index.items() if k[0] in h and k[2] in h})
    else:
        from .dgl_shim import dgl

        if len({r.name for r in relations}) != len(relations):
            raise UserError("dgl-native's HeteroGraphConv names each relation's layer by the relation's name alone, "
                            "so relation names must be unique")
        data = {(r.src, r.name, r.dst): tuple(torch.from_numpy(a) for a in g.edges())
                for r, g in zip(relations, graph.graphs)}
        hg = dgl.heterograph(data, num_nodes_dict=dict(graph.node_counts)).to(F.device)

        def call(i, module, h):
            out = {t: v.reshape(v.shape[0], -1) for t, v in module(hg, h).items()}
            for t, conv in empty_biases[i]:  # HeteroGraphConv skips an empty relation (Note [typed natives])
                if t in h:
                    bias = conv.bias.reshape(1, -1).expand(graph.node_counts[t], -1)
                    out[t] = bias if t not in out else out[t] + bias
            return out
    return modules, call, orders


def _homogeneous(library, nn, model, graph, initial, F, native):
    """One layer per layer on the homogeneous form (PyG ``RGCNConv``, DGL ``RelGraphConv``)."""
    typed, hyper = native.typed, model.hyper
    form = graph.homogeneous()
    types = list(graph.node_types)
    bases = hyper.bases
    params_map = typed.bases_params if bases is not None else native.params
    modules = []
    for i, (in_dim, out_dim) in enumerate(model.layer_dims()):
        sizes = {"in": in_dim, "out": out_dim, "relations": len(graph.relations), "bases": bases}
        conv = build_quietly(lambda: _construct(native.layer, nn, model, sizes,
                                                typed.bases_changes if bases is not None else None), F)
        load(conv, native_values(params_map, _layer_values(initial, f"conv{i}.")), F)
        modules.append(conv)
    src, dst = form.graph.edges()
    edge_type = torch.from_numpy(form.edge_type).to(F.device)
    if library == "pyg":
        edge_index = torch.from_numpy(np.stack([src, dst])).to(F.device)

        def run(module, x_all):
            return module(x_all, edge_index, edge_type)
    else:
        from .dgl_shim import dgl

        g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=form.graph.num_nodes).to(F.device)
        key = dst * len(graph.relations) + form.edge_type
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        norm = torch.from_numpy((1.0 / counts[inverse]).reshape(-1, 1)).to(F.device, F.dtype)

        def run(module, x_all):
            return module(g, x_all, edge_type, norm)
    sizes_of = [int(n) for n in np.diff(form.offsets)]

    def call(i, module, h):
        out = run(module, torch.cat([h[t] for t in types]))
        return dict(zip(types, torch.split(out, sizes_of)))

    return modules, call, [types] * len(modules)
