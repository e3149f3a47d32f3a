"""The system API: the graph operators a model may call, declared once.

Every kernel system implements some of these operators; models call nothing
else on the graph. Shapes use ``N`` nodes, ``E`` edges (canonical CSR-by-
destination order, see :mod:`gnnbench.runtime.graph`), ``H`` heads and ``D`` features
per head. A single-head tensor ``[N, F]`` is passed as ``[N, 1, F]``.

========================  ==========================================  =====================
operator                  math (edge ``e = j -> i``)                   shapes
========================  ==========================================  =====================
``spmm(reduce=sum)``      ``out[i] = sum_e w[e,h] * x[j,h]``            x [N,H,D], weight [E,H] optional, out [N,H,D]
``spmm(reduce=mean)``     the sum divided by ``max(in_degree(i), 1)``   same
``spmm(reduce=max)``      ``out[i] = max_e w[e,h] * x[j,h]``, 0 if none  same
``sddmm(op=dot)``         ``out[e,h] = sum_d src[j,h,d] * dst[i,h,d]``  src, dst [N,H,D], out [E,H]
``sddmm(op=add)``         ``out[e,h] = src[j,h] + dst[i,h]``            src, dst [N,H], out [E,H]
``edge_softmax``          softmax of ``scores[e,h]`` over the in-edges  scores [E,H], out [E,H]
                          of each destination ``i``
``gat_aggregate``         ``a = edge_softmax(leaky_relu(sddmm_add(      x [N,H,D], score_src [N,H],
                          score_src, score_dst)))``, then               score_dst [N,H], out [N,H,D]
                          ``spmm(x, a, reduce=sum)``
``typed_aggregate``       ``out[i] = sum_e norm[e,h] * x[j,h] @        x [S,H,D], weight [R,D,K],
                          weight[etype[e]]``                           norm [E,H], etype [E], out [N,H,K]
========================  ==========================================  =====================

A system that does not implement ``gat_aggregate`` gets the composition above
from its own ``sddmm``, ``edge_softmax`` and ``spmm``; one without ``typed_aggregate``
gets one ``spmm`` per relation (:func:`gnnbench.frameworks.composed.typed_aggregate`).

Note [typed aggregation]
    ``typed_aggregate`` is relational aggregation on the homogeneous form (Note [homogeneous form] in
    gnnbench/runtime/hetero.py): every edge ``e = j -> i`` carries its relation ``etype[e]`` and a norm
    ``norm[e, h]`` (R-GCN's ``1 / |N_r(i)|``), and ``out[i] = sum_e norm[e] x[j] W[etype[e]]``: R-GCN's whole
    relational sum in one call, instead of ``R`` spmm-and-matmul pairs. It is the unit fused relational kernels
    (Hector, Seastar, DGL's ``RelGraphConv`` on ``segment_mm``) compute; ``gather_mm`` alone would materialise the
    ``E x K`` messages they exist to avoid (docs/relational.md says why this form was chosen). Its backward
    rules (api.gnn): ``grad x`` is the same loop on the transposed view with ``W[r]^T``
    (``typed_aggregate_backward``), ``grad weight[r] = sum over r's edges of norm[e] x[j]^T grad_out[i]``
    (``typed_weight_backward``, which reads ``weight`` for its shape ``R`` only; a relation without edges gets
    zeros). ``norm`` has no gradient: R-GCN's is a constant of the graph. ``etype`` is declared ``indexes R``, so
    the boundary refuses a relation index beyond ``weight``'s before any kernel runs.

Note [kernel calling convention]
    A kernel is a plain function ``kernel(graph, *inputs, *outputs, *saves,
    *workspaces, **attrs)`` in the order its spec declares them. ``graph`` is a
    :class:`~gnnbench.runtime.graph.GraphView` (forward or transposed, as the spec
    says); every array is a zero-copy view (NumPy on CPU by default, or
    framework tensors when the spec says ``arrays torch``) of memory the
    framework allocated. Absent optional inputs are ``None``. Declared attributes
    (``attr reduce in {sum, mean}``) come as keywords; attributes pinned in
    ``implements sddmm(op=dot)`` do not (the kernel is specialised for them). The kernel writes
    its outputs in place and returns nothing: it never allocates a result.

Note [NaN policy]
    Special values propagate; no operator drops or hides one, in the forward
    or in any gradient, and the result never depends on the order of the
    edges within a row. Per operator, for edge ``e = j -> i``:

    * ``spmm(reduce=sum|mean)``: IEEE arithmetic on the sum. A NaN message
      makes ``out[i]`` NaN; ``+inf`` and ``-inf`` messages in one row give NaN,
      one of them alone gives that infinity. ``grad x = A^T grad_out`` and
      ``grad weight[e] = x[j] . grad_out[i]`` follow the same arithmetic (a NaN
      in ``x[j]`` reaches ``grad weight`` of ``j``'s edges, not ``grad x``).
    * ``spmm(reduce=max)``: a NaN message is the maximum, as in ``torch.amax``
      and ``numpy.maximum``: ``out[i]`` is NaN wherever any of row ``i``'s
      messages is NaN, whether it comes first or last. The gradient goes to
      one winning edge per element: the lowest canonical edge id among the
      row's NaN messages, else among the messages equal to the maximum.
      ``+inf`` wins like any value; an empty row gives 0.
    * ``sddmm(op=dot|add)``: IEEE arithmetic per edge, gradients likewise.
    * ``edge_softmax``: a NaN or ``+inf`` score makes every output of its row
      NaN (``exp(inf - inf)``), as ``torch.softmax`` does; a ``-inf`` score
      gets weight 0 while its row has a finite score. The row maximum is
      subtracted before ``exp``, so finite scores up to the dtype's range
      never overflow. Gradients: ``out * (grad_out - sum(out * grad_out))``.
    * ``gat_aggregate``: the composition it stands for, so the rules above.
    * ``typed_aggregate``: IEEE arithmetic on the sum of products, as ``spmm(reduce=sum)`` with a weight.

    ``gnnbench verify`` checks this on every system with the ``NaN/inf`` cases
    of :mod:`gnnbench.check.conformance` (Note [hard values]), against the float64
    ``reference``, which implements it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Operator", "OPERATORS", "ATTRIBUTE_VALUES"]


@dataclass(frozen=True)
class Operator:
    """An operator of the system API.

    Args:
        name: the name models call it by.
        inputs: input names in call order; a trailing ``?`` marks an optional one.
        outputs: output names.
        attrs: attribute name -> allowed values, or a type name (``"float"``)
            for a free numeric attribute.

    :data:`OPERATORS` (name -> operator) is derived from the operators
    ``gnnbench/api.gnn`` declares, the one statement of their signatures.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, tuple[str, ...] | str] = field(default_factory=dict)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.rstrip("?") for i in self.inputs)

    def is_optional(self, name: str) -> bool:
        return f"{name}?" in self.inputs


def _operators() -> dict[str, Operator]:
    """Every operator declared in ``gnnbench/api.gnn``, in declaration order (one per name: an operator declared
    once per attribute value, like ``sddmm(op=dot)`` and ``sddmm(op=add)``, has one signature of names)."""
    from gnnbench.dsl.system_api import system_api

    api = system_api()
    out: dict[str, Operator] = {}
    for name in dict.fromkeys(o.name for o in api.operators):
        signatures = {(tuple(p.name + ("?" if p.optional else "") for p in decl.inputs),
                       tuple(p.name for p in decl.outputs)) for decl in api.operator(name)}
        if len(signatures) != 1:
            raise ValueError(f"gnnbench/api.gnn declares operator '{name}' with different argument names "
                             f"{sorted(signatures)}; give every declaration of it the same names")
        [(inputs, outputs)] = signatures
        out[name] = Operator(name, inputs, outputs, api.operator_attrs(name))
    return out


_DERIVED: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """:data:`OPERATORS` (name -> :class:`Operator`) and :data:`ATTRIBUTE_VALUES` (every enumerated attribute
    ``(operator, attribute)`` -> its allowed values, for error messages), derived from ``gnnbench/api.gnn`` on
    first use.

    Lazily, because parsing the API costs about a third of a second, and every ``gnnbench`` command builds
    its argument parser (``verify --operator``) whether it needs the operators or not.
    """
    if name not in ("OPERATORS", "ATTRIBUTE_VALUES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _DERIVED:
        operators = _operators()
        _DERIVED["OPERATORS"] = operators
        _DERIVED["ATTRIBUTE_VALUES"] = {(op.name, attr): values for op in operators.values()
                                        for attr, values in op.attrs.items() if isinstance(values, tuple)}
    return _DERIVED[name]
