"""Runs kernels under PyTorch: one autograd bridge for every operator, and one kernel call.

A generated ``_glue_torch.py`` passes its system's declaration to
:func:`bind_system`; each operator the system implements then runs through :class:`_Bridge`, a ``torch.autograd.Function``
driven by the kernel's :class:`~gnnbench.runtime.glue.KernelPlan` (its backward rules
as data), and every kernel call goes through :func:`run`: check, allocate,
hand out views, call. See Note [producer-only] in :mod:`gnnbench.runtime.boundary`.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np
import torch

from gnnbench.runtime.boundary import KernelDecl, TensorFacts, allocation_plan, check_call, check_inputs, graph_symbols
from gnnbench.runtime.glue import OperatorCall, bind_system as _bind_system
from gnnbench.runtime.graph import GraphView
from gnnbench.runtime.kernel_clock import call_kernel, spmm_work

__all__ = ["run", "facts", "to_view", "bind_system"]

_NUMPY_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32",
                torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16",
                torch.bool: "bool", torch.uint8: "uint8", torch.int16: "int16", torch.int8: "int8"}
_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64}


def facts(t: Any) -> TensorFacts:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(t).__name__}")
    return TensorFacts(_NUMPY_NAMES.get(t.dtype, str(t.dtype)), tuple(t.shape), t.device.type, t.is_contiguous())


def _value_range(t: torch.Tensor) -> tuple[int, int]:
    return int(t.min()), int(t.max())


def to_view(t: torch.Tensor, arrays: str):
    """A zero-copy view for the kernel: NumPy through DLPack, or the detached tensor."""
    t = t.detach()
    if arrays == "numpy":
        return np.from_dlpack(t)
    return t


def run(kernel: KernelDecl, view: GraphView, inputs: Sequence[Any], attrs: dict[str, Any],
        arrays: str = "numpy") -> tuple[torch.Tensor, ...]:
    """Call ``kernel`` on ``view``; return its outputs followed by its saves.

    Raises:
        BoundaryError: an input breaks the kernel's declaration, or an
            attribute value is outside its declared set.
    """
    device = next((t.device for t in inputs if isinstance(t, torch.Tensor)), torch.device("cpu"))
    check_call(kernel, attrs, arrays, device.type)
    env = graph_symbols(view)
    float_dtype = check_inputs(kernel, inputs, facts, env, device.type, _value_range)
    results, args = [], []
    for decl, shape, dtype in allocation_plan(kernel, env, float_dtype):
        alloc = torch.zeros if decl.zero else torch.empty
        t = alloc(shape, dtype=_TORCH_DTYPES[dtype], device=device)
        results.append(t)
        args.append(to_view(t, arrays))
    in_views = [None if t is None else to_view(t, arrays) for t in inputs]
    kwargs = {name: attrs[name] for name in kernel.attrs}
    call_kernel(kernel.name, kernel.fn, (view, *in_views, *args), kwargs,  # Note [kernel time]
                spmm_work(kernel, view, env, float_dtype))  # Note [spmm work]
    keep = len(kernel.outputs) + len(kernel.saves)
    return tuple(results[:keep])


class _Bridge(torch.autograd.Function):
    """Forward: the operator's kernel. Backward: its gradient rules, each a kernel call."""

    @staticmethod
    def forward(ctx, call: OperatorCall, graph, attrs, *inputs):
        plan = call.plan
        results = call.run(plan.decl, graph.view(), inputs, attrs)
        ctx.call, ctx.graph, ctx.attrs = call, graph, attrs
        ctx.saved_names = plan.saved_for(ctx.needs_input_grad[3:])
        if ctx.saved_names:
            named = plan.tensors(inputs, results)
            ctx.save_for_backward(*(named[n] for n in ctx.saved_names))
        outputs = results[:len(plan.decl.outputs)]
        integer = plan.integer_outputs(outputs)
        if integer:
            ctx.mark_non_differentiable(*integer)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        call, plan = ctx.call, ctx.call.plan
        # ctx.saved_tensors raises once the graph is freed, even when nothing was saved: read it only if needed
        tensors = dict(zip(ctx.saved_names, ctx.saved_tensors)) if ctx.saved_names else {}
        tensors.update((f"grad_{n}", g.contiguous()) for n, g in zip(plan.output_names, grad_outputs))
        grads = call.gradients(ctx.graph, ctx.attrs, tensors, ctx.needs_input_grad[3:])
        return (None, None, None, *grads)


def _bridge(call: OperatorCall, graph, attrs: dict[str, Any], inputs: Sequence[Any]):
    return _Bridge.apply(call, graph, attrs, *inputs)


#: What a generated ``_glue_torch.py`` calls: :func:`gnnbench.runtime.glue.bind_system` for PyTorch.
bind_system = functools.partial(_bind_system, framework="torch", bridge=_bridge)
