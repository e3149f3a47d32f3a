"""What generated glue registers, framework-neutral: a system and its graphs.

A system's generated ``systems/<name>/_glue.py`` holds only what is
particular to it, framework-neutral: one :class:`SystemDeclaration` (its kernel
functions, the kernels it declares itself, its deviations). Each
``_glue_<framework>.py`` beside it binds that declaration through its
framework runtime's :func:`bind_system`, which builds one :class:`SystemGlue`
(named ``SYSTEM``), so a system that runs under two frameworks states its
declaration once. The declarations of the
standard kernels and their backward rules come from the system API
(``gnnbench/api.gnn``, parsed once per process), already parsed: nothing
reads spec text per call. :class:`BoundGraph` pairs a graph with the system's
prepared format, so ``prepare`` runs once per graph orientation and its time
is measured apart from epochs.

Note [guarded glue]
    ``gnnbench verify`` routes a system's kernel calls through a guard by
    replacing ``_run`` in the system's framework glue module
    (``_glue_<framework>.py``, ``conformance.guarded``).
    So every kernel call of an operator goes through
    :meth:`OperatorCall.run`, which looks ``_run`` up in that module at call
    time, and each ``OperatorImpl.apply`` is a bound method of an
    :class:`OperatorCall` whose ``__module__`` names that glue module.

Note [saved for backward]
    A forward keeps for its backward only what the rules that will run read
    (:meth:`KernelPlan.saved_for`), decided from which inputs need a gradient
    at the time of the call: torch's ``ctx.needs_input_grad``, or whether
    TensorFlow's tape records the input. ``spmm``'s rules read ``x`` only for
    the gradient of the edge weight; keeping it for every call (the former
    rule) held the ``[N, hidden]`` features GCN and SAGE transform before
    aggregating from forward to backward, which DGL's ``copy_u`` frees at
    once. At 64M edges that put isplib's SAGE peak 1.20x dgl-native's
    (``results/scaling.md``). The TensorFlow bridge also drops the inputs
    from the context its backward closes over, for the same reason.
"""
from __future__ import annotations

import importlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from gnnbench.runtime.boundary import ArgDecl, KernelDecl
from gnnbench.runtime.graph import Graph, GraphView

__all__ = ["SystemDeclaration", "SystemGlue", "OperatorImpl", "BoundGraph", "KernelPlan", "GradPlan", "OperatorCall",
           "bind_system"]


@dataclass(frozen=True)
class OperatorImpl:
    """One kernel implementing an operator for some attribute values."""

    operator: str
    kernel: str
    attrs: dict[str, Any]                    # attr -> allowed values (tuple) or a type name
    apply: Callable                           # apply(graph, attrs, *inputs) -> outputs

    def accepts(self, attrs: dict[str, Any]) -> bool:
        for name, allowed in self.attrs.items():
            if isinstance(allowed, tuple) and attrs.get(name) not in allowed:
                return False
        return True


@dataclass
class SystemGlue:
    """A system as the harness and the frontend see it."""

    name: str
    version: str
    framework: str
    kernels_module: str
    spec_path: str
    operators: dict[str, list[OperatorImpl]]
    hooks: dict[str, str] = field(default_factory=dict)
    _module: Any = None

    @property
    def module(self):
        if self._module is None:
            self._module = importlib.import_module(self.kernels_module)
        return self._module

    def hook(self, name: str) -> Callable | None:
        """The spec's ``name`` hook (prepare, configure, report), or None.

        Raises:
            UserError: the kernels module has no such function, or it is not callable (Note [hook check]).
        """
        from gnnbench.errors import UserError
        from gnnbench.dsl.hooks import _MISSING, hook_error

        fn_name = self.hooks.get(name)
        if not fn_name:
            return None
        fn = getattr(self.module, fn_name, _MISSING)
        if not callable(fn):
            raise UserError(hook_error(self.name, name, fn_name, self.kernels_module, fn))
        return fn

    def find(self, operator: str, attrs: dict[str, Any]) -> OperatorImpl | None:
        for impl in self.operators.get(operator, ()):
            if impl.accepts(attrs):
                return impl
        return None

    def implemented(self) -> list[str]:
        """Human-readable list, e.g. ``spmm(reduce=sum|mean)``."""
        out = []
        for op, impls in self.operators.items():
            for impl in impls:
                attrs = ", ".join(f"{n}={'|'.join(v) if isinstance(v, tuple) else v}" for n, v in impl.attrs.items())
                out.append(f"{op}({attrs})")
        return out


_FLOATS = ("float", "f32", "f64")


def _decl(system: str, kernel, fn: Callable) -> KernelDecl:
    """The boundary's declaration of a parsed kernel (a :class:`gnnbench.dsl.spec.KernelSpec`)."""
    def args(role: str) -> tuple[ArgDecl, ...]:
        return tuple(ArgDecl(p.name, p.dtype, p.shape, p.optional, p.zero, p.indexes)
                     for p in kernel.params if p.role == role)

    attrs = {a.name: a.values if a.values is not None else a.type for a in kernel.attrs}
    return KernelDecl(system, kernel.name, fn, args("input"), args("output"), args("saves"), args("workspace"), attrs)


@dataclass(frozen=True)
class GradPlan:
    """One backward rule, ready to run: ``grad targets = callee(args, attrs) [transposed]``."""

    targets: tuple[int, ...]             # indices of the inputs whose gradients the callee's outputs are
    callee: KernelDecl
    transposed: bool
    args: tuple[str, ...]                # names of inputs, outputs, saves or grad_<output>
    bound: tuple[tuple[str, Any], ...]   # callee attributes the rule fixes
    inherited: tuple[str, ...]           # callee attributes taken from the operator call's

    def attrs(self, caller: dict[str, Any]) -> dict[str, Any]:
        out = dict(self.bound)
        out.update((name, caller[name]) for name in self.inherited)
        return out


@dataclass(frozen=True)
class KernelPlan:
    """An operator-implementing kernel with everything its forward and backward need."""

    decl: KernelDecl
    rules: tuple[GradPlan, ...]
    saved: tuple[str, ...]               # tensors the backward uses, saved by the forward
    ungradable: tuple[int, ...]          # float inputs no rule differentiates

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.decl.outputs)

    def tensors(self, inputs: Sequence[Any], results: Sequence[Any]) -> dict[str, Any]:
        """Inputs, outputs and saves of one forward call by name."""
        named = dict(zip((d.name for d in self.decl.inputs), inputs))
        named.update(zip((d.name for d in (*self.decl.outputs, *self.decl.saves)), results))
        return named

    def active_rules(self, needs: Sequence[bool]) -> tuple[GradPlan, ...]:
        """The rules a backward runs: those whose targets include an input that ``needs`` a gradient."""
        return tuple(rule for rule in self.rules if any(needs[i] for i in rule.targets))

    def saved_for(self, needs: Sequence[bool]) -> tuple[str, ...]:
        """What a forward must keep for a backward where ``needs[i]`` says whether input ``i`` needs a gradient.

        Only the tensors that :meth:`active_rules` read, in :attr:`saved`'s
        order: an unweighted SpMM keeps no ``x`` for the weight gradient it
        will never compute (Note [saved for backward]).
        """
        read = {a for rule in self.active_rules(needs) for a in rule.args}
        return tuple(n for n in self.saved if n in read)

    def integer_outputs(self, results: Sequence[Any]) -> list[Any]:
        return [r for r, d in zip(results, self.decl.outputs) if d.dtype not in _FLOATS]

    def no_gradient(self, index: int) -> NotImplementedError:
        return NotImplementedError(f"{self.decl.qualname} declares no gradient for '{self.decl.inputs[index].name}'")


def _plan(system: str, kernel, specs: dict, decls: dict[str, KernelDecl]) -> KernelPlan:
    inputs = [p.name for p in kernel.params if p.role == "input"]
    rules = []
    for g in kernel.grads:
        callee = specs[g.call.kernel]
        bound = g.call.attr_bindings
        rules.append(GradPlan(
            tuple(inputs.index(t) for t in g.targets), decls[callee.name], g.call.transposed, g.call.refs,
            tuple((a.name, bound[a.name]) for a in callee.attrs if a.name in bound),
            tuple(a.name for a in callee.attrs if a.name not in bound)))
    referenced = {r for g in kernel.grads for r in g.call.refs}
    saved = tuple(p.name for p in kernel.params if p.role in ("input", "output", "saves") and p.name in referenced)
    covered = {t for g in kernel.grads for t in g.targets}
    ungradable = tuple(i for i, p in enumerate(p for p in kernel.params if p.role == "input")
                       if p.name not in covered and p.dtype in _FLOATS)
    return KernelPlan(decls[kernel.name], tuple(rules), saved, ungradable)


class OperatorCall:
    """One operator-implementing kernel of a system, callable as ``apply(graph, attrs, *inputs)``.

    ``bridge(call, graph, attrs, inputs)`` is the framework's differentiable
    call (a ``torch.autograd.Function`` or a ``tf.custom_gradient``); it calls
    kernels through :meth:`run`. See Note [guarded glue].
    """

    def __init__(self, module: str, plan: KernelPlan, arrays: str, bridge: Callable):
        self.__module__ = module
        self.plan, self.arrays, self._bridge = plan, arrays, bridge

    def run(self, decl: KernelDecl, view: GraphView, inputs: Sequence[Any], attrs: dict[str, Any]):
        return sys.modules[self.__module__]._run(decl, view, inputs, attrs, self.arrays)

    def apply(self, graph, attrs: dict[str, Any], *inputs):
        return self._bridge(self, graph, attrs, inputs)

    def gradients(self, graph, attrs: dict[str, Any], tensors: dict[str, Any], needs: Sequence[bool]) -> list[Any]:
        """The backward of one call, for either framework's bridge: one gradient (or None) per input.

        Runs each rule that :meth:`KernelPlan.active_rules` picks on its view of
        ``graph``; ``tensors`` names what the rules read (the forward's saves
        and ``grad_<output>``). An input that needs a gradient no rule gives
        raises :meth:`KernelPlan.no_gradient`.
        """
        plan = self.plan
        grads: list[Any] = [None] * len(needs)
        for rule in plan.active_rules(needs):
            results = self.run(rule.callee, graph.view(rule.transposed), tuple(tensors[a] for a in rule.args),
                               rule.attrs(attrs))
            for i, r in zip(rule.targets, results):
                grads[i] = r
        for i in plan.ungradable:
            if needs[i]:
                raise plan.no_gradient(i)
        return grads

    def __repr__(self) -> str:
        return f"OperatorCall({self.plan.decl.qualname})"


@dataclass(frozen=True)
class SystemDeclaration:
    """What a system's generated ``_glue.py`` declares, for every framework alike.

    Args:
        name, version: the spec's.
        spec_path: the spec the glue was generated from, as shown in messages.
        kernels_module: the module holding the kernel functions and hooks.
        arrays: what the kernels take (``"numpy"``, ``"torch"``, ...).
        hooks: hook name (``prepare``, ``tune``, ...) -> function name in ``kernels_module``.
        floats: ``"f32"``/``"f64"`` when the system narrows ``float``, else None.
        kernels: kernel name -> function, every kernel the system has.
        custom: the kernels the system declares itself (parsed ``KernelSpec``
            literals); every other kernel is the system API's standard one.
    """

    name: str
    version: str
    spec_path: str
    kernels_module: str
    arrays: str
    hooks: dict[str, str]
    floats: str | None
    kernels: dict[str, Callable]
    custom: tuple = ()


def bind_system(module: str, declaration: SystemDeclaration, *, framework: str, bridge: Callable) -> SystemGlue:
    """Build a system's :class:`SystemGlue` for one framework from its declaration.

    Args:
        module: the binding module's ``__name__``, whose ``_run`` every kernel
            call looks up (Note [guarded glue]).
        declaration: the system's :class:`SystemDeclaration`.
        framework: ``"torch"`` or ``"tensorflow"``.
        bridge: the framework runtime's differentiable call.
    """
    from gnnbench.dsl.system_api import standard_kernel

    d = declaration
    name, kernels, custom, floats, arrays = d.name, d.kernels, d.custom, d.floats, d.arrays
    own = {k.name: k for k in custom}
    try:
        specs = {n: own[n] if n in own else standard_kernel(n, floats) for n in kernels}
    except KeyError as err:
        raise RuntimeError(f"the glue of system '{name}' names kernel {err} that the system API does not "
                           f"declare; regenerate it with `gnnbench gen {name}`") from None
    decls = {n: _decl(name, specs[n], fn) for n, fn in kernels.items()}
    operators: dict[str, list[OperatorImpl]] = {}
    for n, k in specs.items():
        if k.implements:
            call = OperatorCall(module, _plan(name, k, specs, decls), arrays, bridge)
            operators.setdefault(k.implements, []).append(
                OperatorImpl(k.implements, n, dict(k.dispatch_attrs()), call.apply))
    return SystemGlue(name, d.version, framework, d.kernels_module, d.spec_path, operators, dict(d.hooks))


class BoundGraph:
    """A graph bound to one system: views carry the system's prepared format.

    Args:
        graph: the graph.
        system: the system's glue.
        tensors: framework tensors derived from the graph (e.g. GCN edge weights),
            created by the frontend once.
    """

    def __init__(self, graph: Graph, system: SystemGlue):
        self.graph, self.system = graph, system
        self.prepare_time_s = 0.0
        self._views: dict[bool, GraphView] = {}
        self.tensors: dict[str, Any] = {}
        #: operators that ran composed from others on this graph (Note [declared dispatch])
        self.composed: set[str] = set()

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_edges(self) -> int:
        return self.graph.num_edges

    @property
    def num_src(self) -> int:
        """Source rows of ``x`` (``num_nodes`` unless the graph is a sampled block, Note [blocks])."""
        return self.graph.num_src

    @property
    def num_dst(self) -> int:
        """Destination rows of an aggregation's output (``num_nodes``)."""
        return self.graph.num_dst

    def view(self, transposed: bool = False) -> GraphView:
        view = self._views.get(transposed)
        if view is None:
            view = self.graph.view(transposed)
            prepare = self.system.hook("prepare")
            if prepare is not None:
                start = time.perf_counter()
                view = view.with_prepared(prepare(view))
                self.prepare_time_s += time.perf_counter() - start
            self._views[transposed] = view
        return view

    def prepare(self) -> float:
        """Build both orientations now; returns the seconds ``prepare`` took."""
        self.view(False)
        self.view(True)
        return self.prepare_time_s
