"""Runs kernels under TensorFlow: one ``tf.custom_gradient`` bridge for every operator, and one kernel call.

A generated ``_glue_tensorflow.py`` passes its system's declaration to
:func:`bind_system`; each operator the system implements then runs through :func:`_bridge`, driven by the kernel's
:class:`~gnnbench.runtime.glue.KernelPlan` like the PyTorch runtime's, with
:class:`GradContext` for what ``torch.autograd.Function`` gives that one
(``needs_input_grad``, absent optional inputs). Every kernel call goes through
:func:`run`: check, allocate, hand out DLPack views, call. See Note
[producer-only] in :mod:`gnnbench.runtime.boundary`.

Note [TensorFlow buffers]
    TensorFlow tensors are immutable to TensorFlow: it may hand one buffer to
    several tensors (``tf.identity`` and ``tf.reshape`` alias their input,
    eager mode gives every ``tf.constant(0.0)`` the same buffer, the tape
    fills missing gradients from a cache of zeros). Writing into such a
    buffer would change every tensor sharing it. So every output, save and
    workspace is a *fresh* buffer from ``tf.raw_ops.Empty`` (``init=True``
    zero-fills it for ``= 0`` outputs), which no other tensor has seen, and
    the system writes into it before TensorFlow hands it to anyone.

    NumPy makes read-only arrays of TensorFlow's (unversioned) DLPack
    capsules, so :func:`_writable` re-exposes the same address writable. Inputs
    get writable views too, exactly as under PyTorch: a compiled kernel then
    sees the same array types under both frameworks, which bit-for-bit
    equality needs (numba specialises on read-only-ness, and a ``fastmath``
    kernel compiled for read-only arrays rounded differently in isplib's and
    dgnn's ``edge_sum``). A kernel must not write into its inputs under either
    framework; ``gnnbench verify``'s guarded runtime checks that.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import record as _record

from gnnbench.runtime.boundary import KernelDecl, TensorFacts, allocation_plan, check_call, check_inputs, graph_symbols
from ..errors import BoundaryError
from gnnbench.runtime.glue import OperatorCall, bind_system as _bind_system
from gnnbench.runtime.graph import GraphView
from gnnbench.runtime.kernel_clock import call_kernel, spmm_work

__all__ = ["run", "facts", "to_view", "allocate", "data_pointer", "GradContext", "bind_system"]

_TF_DTYPES = {"float32": tf.float32, "float64": tf.float64, "int32": tf.int32, "int64": tf.int64}


def _device_type(t: tf.Tensor) -> str:
    """``"cpu"`` or ``"cuda"`` from a TensorFlow device string such as ``/job:localhost/.../device:CPU:0``."""
    kind = t.device.rsplit("/device:", 1)[-1].split(":", 1)[0].upper() if t.device else "CPU"
    return "cuda" if kind == "GPU" else kind.lower()


def _as_tensor(t: Any) -> Any:
    """Dense ``tf.Tensor`` for a variable or ``tf.IndexedSlices`` (a gather's gradient); others unchanged."""
    if t is None or (isinstance(t, tf.Tensor) and not isinstance(t, tf.Variable)):
        return t
    if isinstance(t, (tf.Variable, tf.IndexedSlices)):
        return tf.convert_to_tensor(t)
    raise TypeError(f"expected a tf.Tensor, got {type(t).__name__}; convert it with tf.convert_to_tensor first")


def facts(t: Any) -> TensorFacts:
    """Dtype, shape and device of a TensorFlow tensor.

    TensorFlow tensors are dense row-major buffers by construction (no
    strides), so they are always contiguous; :func:`to_view` still checks the
    DLPack view it receives.
    """
    if not isinstance(t, tf.Tensor):
        raise TypeError(f"expected a tf.Tensor, got {type(t).__name__}")
    return TensorFacts(t.dtype.name, tuple(int(d) for d in t.shape), _device_type(t), True)


def _value_range(t: tf.Tensor) -> tuple[int, int]:
    return int(tf.reduce_min(t)), int(tf.reduce_max(t))


class _WritableAlias:
    """Exposes an address as a writable ``__array_interface__`` and keeps its owner alive."""

    def __init__(self, readonly: np.ndarray):
        self._owner = readonly                       # holds the DLPack capsule, which holds the tf buffer
        self.__array_interface__ = dict(readonly.__array_interface__, data=(data_pointer(readonly), False))


def _writable(readonly: np.ndarray) -> np.ndarray:
    """A writable array over the same memory (see Note [TensorFlow buffers]); no copy."""
    return np.asarray(_WritableAlias(readonly))


def data_pointer(a: Any) -> int:
    """Address of the first element of a NumPy array, a torch tensor or a TensorFlow tensor (via DLPack)."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    if isinstance(a, tf.Tensor):
        return data_pointer(np.from_dlpack(a))
    return int(a.data_ptr())


def _checked(view: Any, kernel: KernelDecl | None, name: str) -> Any:
    contiguous = view.flags.c_contiguous if isinstance(view, np.ndarray) else view.is_contiguous()
    if not contiguous:
        where = kernel.qualname if kernel is not None else "tensorflow"
        raise BoundaryError(where, name, f"arrives through DLPack with strides {_strides(view)}, not dense "
                            "row-major; kernels receive zero-copy views of contiguous memory only "
                            "(pass a fresh tensor, e.g. tf.identity of a tf.transpose result)")
    return view


def _strides(view: Any) -> tuple[int, ...]:
    return tuple(view.strides) if isinstance(view, np.ndarray) else tuple(view.stride())


def to_view(t: Any, arrays: str, writable: bool = False, kernel: KernelDecl | None = None, name: str = "*"):
    """A zero-copy DLPack view of ``t`` for the kernel: NumPy, or a torch tensor for ``arrays torch``.

    Args:
        t: the tensor (anything exporting ``__dlpack__``).
        arrays: ``"numpy"`` or ``"torch"`` (the spec's ``arrays`` line).
        writable: whether to re-expose NumPy's read-only view of a TensorFlow
            capsule as writable (see Note [TensorFlow buffers]).
        kernel, name: named in the error when the view is not contiguous.

    Raises:
        BoundaryError: the view is not contiguous.
    """
    if arrays == "numpy":
        view = _checked(np.from_dlpack(t), kernel, name)
        return _writable(view) if writable and not view.flags.writeable else view
    import torch

    capsule = tf.experimental.dlpack.to_dlpack(t) if isinstance(t, tf.Tensor) else t.__dlpack__()
    return _checked(torch.from_dlpack(capsule), kernel, name)


def allocate(shape: tuple[int, ...], dtype: str, zero: bool, device: str = "cpu") -> tf.Tensor:
    """A fresh buffer no other tensor shares (Note [TensorFlow buffers]); zero-filled when ``zero``."""
    # the shape goes in as one int64 array: a Python list would cost a Pack op per call
    dims = np.asarray(shape, dtype=np.int64).reshape(len(shape))
    if device == "cpu" and not _has_gpu():  # nowhere else to go: skip the device scope's cost
        return tf.raw_ops.Empty(shape=dims, dtype=_TF_DTYPES[dtype], init=zero)
    with tf.device("/GPU:0" if device == "cuda" else "/CPU:0"):
        return tf.raw_ops.Empty(shape=dims, dtype=_TF_DTYPES[dtype], init=zero)


@functools.lru_cache(maxsize=None)
def _has_gpu() -> bool:
    return bool(tf.config.list_logical_devices("GPU"))


def run(kernel: KernelDecl, view: GraphView, inputs: Sequence[Any], attrs: dict[str, Any],
        arrays: str = "numpy") -> tuple[tf.Tensor, ...]:
    """Call ``kernel`` on ``view``; return its outputs followed by its saves.

    Raises:
        BoundaryError: an input breaks the kernel's declaration, or an
            attribute value is outside its declared set.
    """
    inputs = [_as_tensor(t) for t in inputs]
    device = next((_device_type(t) for t in inputs if t is not None), "cpu")
    check_call(kernel, attrs, arrays, device)
    env = graph_symbols(view)
    float_dtype = check_inputs(kernel, inputs, facts, env, device, _value_range)
    results, args = [], []
    for decl, shape, dtype in allocation_plan(kernel, env, float_dtype):
        t = allocate(shape, dtype, decl.zero, device)
        results.append(t)
        args.append(to_view(t, arrays, writable=True, kernel=kernel, name=decl.name))
    # writable like the PyTorch runtime's: see Note [TensorFlow buffers] for why
    in_views = [None if t is None else to_view(t, arrays, writable=True, kernel=kernel, name=decl.name)
                for decl, t in zip(kernel.inputs, inputs)]
    kwargs = {name: attrs[name] for name in kernel.attrs}
    call_kernel(kernel.name, kernel.fn, (view, *in_views, *args), kwargs,  # Note [kernel time]
                spmm_work(kernel, view, env, float_dtype))  # Note [spmm work]
    keep = len(kernel.outputs) + len(kernel.saves)
    return tuple(results[:keep])


class GradContext:
    """What one call of a generated ``tf.custom_gradient`` function knows, shaped like torch's ``ctx``.

    ``tf.custom_gradient`` takes tensors only, so absent optional inputs
    (``None``) are left out of its arguments and put back by :meth:`inputs`;
    the gradient function returns one gradient per present input
    (:meth:`present_grads`). ``needs_input_grad`` has torch's layout
    (``graph``, ``attrs``, then one flag per input), so the compiler's
    gradient rules are shared by both templates; a flag is whether the tape
    records that input (TensorFlow's own test for recording an op), so a
    constant such as GCN's edge weights costs no gradient kernel.

    Args:
        graph: the :class:`~gnnbench.runtime.glue.BoundGraph`.
        attrs: the operator's attribute values.
        inputs: the operator's inputs in spec order, ``None`` for absent ones.
    """

    def __init__(self, graph, attrs: dict[str, Any], inputs: Sequence[Any]):
        self.graph, self.attrs = graph, attrs
        inputs = [_as_tensor(t) for t in inputs]
        self._present = [i for i, t in enumerate(inputs) if t is not None]
        self._count = len(inputs)
        self.present = [inputs[i] for i in self._present]
        self.needs_input_grad = (False, False, *(
            t is not None and t.dtype.is_floating and _record.should_record_backprop([t]) for t in inputs))

    def inputs(self, present: Sequence[tf.Tensor]) -> list[Any]:
        """All inputs in spec order, ``None`` where absent."""
        full: list[Any] = [None] * self._count
        for i, t in zip(self._present, present):
            full[i] = t
        return full

    def present_grads(self, *grads: Any) -> list[Any]:
        """The gradients of the present inputs, in the order ``tf.custom_gradient`` passed them."""
        return [grads[i] for i in self._present]

    @staticmethod
    def dense(grad: Any) -> Any:
        """An upstream gradient as a dense tensor (a gather's gradient arrives as ``tf.IndexedSlices``)."""
        return _as_tensor(grad)


def _bridge(call: OperatorCall, graph, attrs: dict[str, Any], inputs: Sequence[Any]):
    """The operator's kernel as a ``tf.custom_gradient`` function; its backward runs the gradient rules."""
    plan = call.plan
    ctx = GradContext(graph, attrs, inputs)

    @tf.custom_gradient
    def forward(*present):
        full = ctx.inputs(present)
        results = call.run(plan.decl, graph.view(), full, attrs)
        needs = ctx.needs_input_grad[2:]
        named = plan.tensors(full, results)
        # the closure keeps alive what it holds: only what the backward will read (Note [saved for backward])
        saved = {n: named[n] for n in plan.saved_for(needs)}
        outputs = results[:len(plan.decl.outputs)]

        def backward(*grad_outputs):
            tensors = dict(saved)
            tensors.update((f"grad_{n}", ctx.dense(g)) for n, g in zip(plan.output_names, grad_outputs))
            return ctx.present_grads(*call.gradients(ctx.graph, ctx.attrs, tensors, needs))

        return (outputs[0] if len(outputs) == 1 else tuple(outputs)), backward

    present, ctx.present = ctx.present, ()  # the backward holds ctx: it must not hold the inputs too
    return forward(*present)


#: What a generated ``_glue_tensorflow.py`` calls: :func:`gnnbench.runtime.glue.bind_system` for TensorFlow.
bind_system = functools.partial(_bind_system, framework="tensorflow", bridge=_bridge)
