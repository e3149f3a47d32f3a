"""Native baselines: each peer library's own model, run through gnnbench's training loop.

A kernel system replaces gnnbench's graph operators and keeps gnnbench's
model; a native baseline keeps nothing but the loop: ``pyg-native`` builds the
model from PyG's ``GCNConv``/``GATConv``/``GINConv``/``SAGEConv`` and
``dgl-native`` from DGL's ``GraphConv``/``GATConv``/``GINConv``/``SAGEConv``,
with gnnbench's hyperparameters and initial parameter values. Timing the
same library both ways (``pyg`` vs ``pyg-native``, ``dgl`` vs ``dgl-native``)
shows what each framework's own layer machinery costs in time and memory
(``campaigns/bench_overhead.toml``).

Note [native model parity]
    A native model computes the same function as gnnbench's model of the
    same name, from the same starting point, wherever the library allows:

    * hyperparameters: ``model.hyper`` (layers, hidden width, heads,
      dropout); the harness applies lr, weight decay and epochs;
    * parameters: copied from ``initial_params`` (``GNN.init_params``), with
      ``torch.nn.Linear`` weights transposed (``[out, in]`` versus gnnbench's
      ``[in, out]``), into the layer each model declares for the library and
      as its declaration maps them (Note [native counterparts] in
      models/native.py), so the initial forward pass equals ``reference``'s
      (``tests/peers/test_native.py``);
    * structure: dropout on every layer's input (``F.dropout``, the same RNG
      stream as gnnbench's models), the model's activation between layers,
      no activation after the last, GAT heads concatenated, attention
      dropout off;
    * graph: the harness's graph as is (self loops already added for GCN
      and GAT); neither library adds self loops again.

    What cannot be removed is listed in each module's docstring.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from ..errors import UnavailableError, UserError

__all__ = ["build_native", "declares", "NativeBaseline"]


def build_native(system: str, model, graph, initial_params: dict, F, x: Any = None
                 ) -> tuple[dict[str, Any], Callable[[bool], Any]]:
    """The native model of ``system`` for ``model``, ready for the harness's training loop.

    Args:
        system (str): ``pyg-native`` or ``dgl-native`` (:data:`gnnbench.runtime.registry.NATIVE_SYSTEMS`).
        model (gnnbench.models.GNN): the gnnbench model whose function to reproduce
            (its ``name``, ``hyper``, ``layer_dims()`` and ``activation``).
        graph (gnnbench.runtime.graph.Graph): the graph the model aggregates over.
        initial_params (dict[str, np.ndarray]): ``model.init_params(seed)``.
        F: the torch frontend (device, dtype, dropout, activations).
        x: node features ``[N, in_dim]`` as a frontend tensor.

    Returns:
        ``(params, forward)``: the trainable tensors by name (``conv0.lin.weight``, ...)
        and ``forward(training) -> logits [N, classes]``.
    """
    from gnnbench.runtime.registry import NATIVE_SYSTEMS

    if system not in NATIVE_SYSTEMS:
        raise UserError(f"unknown native baseline '{system}'; choose one of: {', '.join(NATIVE_SYSTEMS)}")
    if x is None:
        raise UserError(f"build_native('{system}', ...) needs the node features: call it as "
                        f"build_native(system, model, graph, initial_params, F, x)")
    _torch_only(system, getattr(F, "name", "torch"))
    module = importlib.import_module(NATIVE_SYSTEMS[system]["module"])
    return module.build(model, graph, initial_params, F, x)


def declares(system: str, model) -> bool:
    """Whether ``model`` (a :class:`~gnnbench.models.GNN` or its class) declares the layer native baseline
    ``system`` builds it from (its ``COUNTERPART`` attribute: ``pyg``, ``dgl``)."""
    from gnnbench.runtime.registry import NATIVE_SYSTEMS

    return getattr(model, importlib.import_module(NATIVE_SYSTEMS[system]["module"]).COUNTERPART, None) is not None


def _torch_only(system: str, framework: str) -> None:
    if framework != "torch":
        raise UnavailableError(f"'{system}' runs under the torch framework only (got {framework})")


class NativeBaseline:
    """A native baseline as a :class:`~gnnbench.runtime.sut.SystemUnderTest`: the peer library's own model.

    Its preparation is the model's construction on the graph (timed); on sampled blocks, its library's own
    block objects (``build_blocks`` of its module). It has no kernels of its own to time, no tuner and no
    sections of its own.
    """

    times_kernels = False

    def __init__(self, config):
        self.config = config
        self._built: tuple[dict[str, Any], Callable[[bool], Any]] | None = None

    def load(self) -> None:
        from gnnbench.models import get_model
        from gnnbench.runtime.registry import native_configure
        from gnnbench.runtime.sut import configure_options

        from ._layers import counterpart

        _torch_only(self.config.system, self.config.framework)
        # a model that declares no layer for this library is refused before anything is measured
        counterpart(get_model(self.config.model), self._module().COUNTERPART, self.config.system)
        configure_options(native_configure(self.config.system), self.config.system, self.config.system_options)
        # The library's import (about 2 s for torch_geometric.nn, 1 s for dgl here) is loading, as a kernel
        # system's import is: left to the first build it would be timed as the baseline's preparation.
        self._module().layer_library()

    def _module(self):
        from gnnbench.runtime.registry import NATIVE_SYSTEMS

        return importlib.import_module(NATIVE_SYSTEMS[self.config.system]["module"])

    def prepare(self, model, graph, initial, F, x) -> None:
        self._built = build_native(self.config.system, model, graph, initial, F, x)

    def model(self, model, initial, F, x):
        return self._built

    def checked_graph(self) -> None:
        return None  # its own layers, no system kernels to check (Note [run-time check])

    def tuner(self):
        return None

    def blocks(self, model, initial, F) -> "_NativeBlocks":
        return _NativeBlocks(*self._module().build_blocks(model, initial, F))

    def sections(self, **_: Any) -> dict[str, Any]:
        return {}


class _NativeBlocks:
    """A native baseline on sampled blocks (a :class:`~gnnbench.runtime.sut.BlockModel`): its library's own
    block objects (DGL ``create_block``, PyG ``edge_index``) and layers, from its module's ``build_blocks``."""

    checks_kernels = False  # its own layers, no system kernels to check (Note [run-time check on blocks])

    def __init__(self, params: dict[str, Any], to_blocks: Callable, forward: Callable):
        self.params, self._to_blocks, self._forward = params, to_blocks, forward

    def prepare(self, graphs):
        return self._to_blocks(graphs)

    def whole(self, graph, layers: int):
        return self._to_blocks([graph] * layers)

    def forward(self, prepared, x, training: bool):
        return self._forward(prepared, x, training)

    def tune(self, prepared, budget_s: float, log) -> float:
        return 0.0  # no tuner
