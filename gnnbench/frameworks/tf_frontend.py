"""The frontend op set under TensorFlow: the same names and semantics as the PyTorch one.

Models in ``gnnbench.models`` run unchanged on this class (see
:class:`~gnnbench.frameworks.torch_frontend.TorchFrontend` for the contract).
Graph operators go to the system's generated ``_glue_tensorflow.py``, whose
``tf.custom_gradient`` functions call the same kernels as the PyTorch glue.

Note [TensorFlow training step]
    TensorFlow has no ``loss.backward()``: gradients come from a
    ``tf.GradientTape`` that recorded the forward pass. The harness's loop is
    ``zero_grad -> forward -> backward(loss) -> step``, so :meth:`zero_grad`
    opens a tape (recording starts there, like torch's autograd graph being
    built during the forward), :meth:`backward` closes it and computes the
    gradients of every parameter (the tape replays the recorded ops
    backwards: the *backward* phase), and :meth:`step` applies Adam. Each
    phase does its own work, so the harness's forward / backward / optimizer
    split means the same thing under both frameworks.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up banner is not a result

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
# torch is a core dependency and the array type of `arrays torch` systems: imported with the
# frontend, as under PyTorch, so that its import never lands in a run's timed `prepare`
import torch  # noqa: E402
from tensorflow.python.eager import context as _eager_context  # noqa: E402
from tensorflow.python.eager import record as _record  # noqa: E402

from ..errors import UnavailableError, UserError  # noqa: E402
from . import composed  # noqa: E402
from gnnbench.runtime.fallback import find_operator  # noqa: E402
from gnnbench.runtime.glue import BoundGraph  # noqa: E402

__all__ = ["TensorFlowFrontend", "Adam"]


def _reshaped(x, shape):
    """``tf.reshape(x, shape)`` whose gradient keeps ``x``'s shape only.

    The tape keeps the input of ``tf.expand_dims``, ``tf.squeeze`` and
    ``tf.reshape`` for their gradients, which read only its shape: around an
    spmm that held the ``[N, F]`` features and the aggregation's output until
    the backward, as a forward that saves too much would (Note [saved for
    backward] in :mod:`gnnbench.runtime.glue`); GAT's head reshapes held
    ``[N, H * D]`` tensors the same way.
    """
    before = x.shape

    @tf.custom_gradient
    def reshape(t):
        with _record.stop_recording():  # else the tape records this reshape too, and keeps t for it
            out = tf.reshape(t, shape)
        return out, lambda grad: tf.reshape(tf.convert_to_tensor(grad), before)

    return reshape(x)


class Adam:
    """Adam with L2 weight decay added to the gradient, as ``torch.optim.Adam`` computes it.

    .. math::
        g \\leftarrow g + \\lambda p, \\quad m \\leftarrow m + (1-\\beta_1)(g - m), \\quad
        v \\leftarrow \\beta_2 v + (1-\\beta_2) g^2, \\\\
        p \\leftarrow p - \\frac{\\eta}{1-\\beta_1^t} \\cdot
            \\frac{m}{\\sqrt{v} / \\sqrt{1-\\beta_2^t} + \\epsilon}

    written out by hand (not ``tf.keras.optimizers.Adam``, whose epsilon sits
    elsewhere and whose weight decay is decoupled) so both frameworks train
    with the same optimizer. A parameter without a gradient is skipped, as in
    torch.

    Args:
        params: name -> ``tf.Variable``.
        lr: learning rate :math:`\\eta`.
        weight_decay: L2 coefficient :math:`\\lambda` (default: 0).
        betas: :math:`(\\beta_1, \\beta_2)` (default: (0.9, 0.999)).
        eps: :math:`\\epsilon` (default: 1e-8).
    """

    def __init__(self, params: dict[str, tf.Variable], lr: float, weight_decay: float = 0.0,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = list(params.values())
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.exp_avg = [tf.Variable(tf.zeros_like(p), trainable=False) for p in self.params]
        self.exp_avg_sq = [tf.Variable(tf.zeros_like(p), trainable=False) for p in self.params]
        # torch counts steps per parameter (one without a gradient keeps its count); float64 so
        # that the bias corrections are computed in double precision, as torch does in Python
        self.steps = [tf.Variable(0.0, dtype=tf.float64, trainable=False) for _ in self.params]
        self.grads: list[Any] | None = None
        self.tape: tf.GradientTape | None = None
        # one traced function for every parameter: a handful of eager ops per parameter would
        # cost more than the update itself; only the gradients are arguments (tracing cost)
        self._update = tf.function(self._update_all, autograph=False)

    def step(self) -> None:
        if self.grads is None:
            raise RuntimeError("Adam.step() before backward(loss): no gradients to apply")
        self._update([None if g is None else tf.convert_to_tensor(g) for g in self.grads])

    def _update_all(self, grads) -> None:
        beta1, beta2 = self.betas
        for p, g, m, v, t in zip(self.params, grads, self.exp_avg, self.exp_avg_sq, self.steps):
            if g is None:
                continue
            t = t.assign_add(1.0)
            step_size = tf.cast(self.lr / (1.0 - beta1 ** t), p.dtype)
            bias_correction2_sqrt = tf.cast(tf.sqrt(1.0 - beta2 ** t), p.dtype)
            if self.weight_decay:
                g = g + self.weight_decay * p
            m.assign_add((1 - beta1) * (g - m))
            v.assign(v * beta2 + (1 - beta2) * g * g)
            p.assign_sub(step_size * (m / (tf.sqrt(v) / bias_correction2_sqrt + self.eps)))


class TensorFlowFrontend:
    """TensorFlow implementation of the frontend op set.

    Args:
        device: ``"cpu"`` (or ``"cuda"`` with a GPU build of TensorFlow and a GPU).
        dtype: float dtype of features and parameters (``"float32"`` or ``"float64"``).
    """

    name = "tensorflow"

    def __init__(self, device: str = "cpu", dtype: str = "float32"):
        if device == "cuda" and not tf.config.list_physical_devices("GPU"):
            raise UnavailableError("TensorFlow sees no GPU here (tensorflow-cpu is CPU-only); "
                                   "use --device cpu or install a GPU build of TensorFlow")
        if device not in ("cpu", "cuda"):
            raise UserError(f"unknown device '{device}'; choose one of: cpu, cuda")
        self.device = device
        self._device_name = "/GPU:0" if device == "cuda" else "/CPU:0"
        self.dtype = tf.as_dtype(dtype)
        self._seed, self._dropout_calls = 0, 0
        self._recording: Adam | None = None
        self._loss_indices: dict[tuple[int, int], tuple] = {}   # see nll_loss

    @property
    def version(self) -> str:
        return tf.__version__

    # ---------------------------------------------------------------- setup
    def seed(self, seed: int) -> None:
        """Seed TensorFlow and the dropout stream: dropout call ``k`` uses the stateless seed ``(seed, k)``."""
        tf.random.set_seed(seed)
        self._seed, self._dropout_calls = int(seed), 0

    def set_threads(self, threads: int) -> None:
        """Intra-op threads of TensorFlow and of torch, whose pool runs ``arrays torch`` systems' kernels.

        TensorFlow fixes its pools when its runtime starts (before the first op).
        torch is set too because under TensorFlow the kernels of ``arrays torch``
        systems (reference, mkl) are torch ops: left at torch's default, their
        OpenMP pool would compete with TensorFlow's for the same cores, which
        the PyTorch frontend's ``torch.set_num_threads`` avoids.
        """
        torch.set_num_threads(threads)
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
        except RuntimeError:
            current = tf.config.threading.get_intra_op_parallelism_threads()
            if current != threads:
                raise UserError(f"TensorFlow already runs with {current or 'default'} intra-op threads and "
                                f"cannot switch to {threads} in this process; run the task in a fresh "
                                "process (without --in-process)") from None

    def tensor(self, array: np.ndarray) -> tf.Tensor:
        array = np.ascontiguousarray(array)
        with tf.device(self._device_name):
            t = tf.constant(array)  # always a copy that TensorFlow owns
            if t.dtype.is_floating and t.dtype != self.dtype:
                t = tf.cast(t, self.dtype)
        return t

    def parameter(self, array: np.ndarray) -> tf.Variable:
        return tf.Variable(self.tensor(array), trainable=True)

    def graph_tensor(self, graph: BoundGraph, name: str, array: np.ndarray) -> tf.Tensor:
        """A constant derived from the graph (e.g. GCN edge weights), created once per graph."""
        key = (self.name, name)
        if key not in graph.tensors:
            graph.tensors[key] = self.tensor(array)
        return graph.tensors[key]

    def sync(self) -> None:
        """Wait for pending ops (eager CPU ops already ran when they returned; async executors did not)."""
        _eager_context.async_wait()

    # ---------------------------------------------------------------- dense ops
    def matmul(self, x, w):
        return tf.matmul(x, w)

    def linear(self, x, w, b):
        """``x @ w + b`` (Note [fused dense ops] in ``torch_frontend.py``)."""
        return tf.nn.bias_add(tf.matmul(x, w), b)

    def add(self, a, b):
        return a + b

    def mul(self, a, b):
        return a * b

    def mul_add(self, a, b, c):
        """``a * b + c`` (Note [fused dense ops] in ``torch_frontend.py``)."""
        return a * b + c

    def reshape(self, x, shape):
        return _reshaped(x, shape)  # the tape keeps no input for a reshape's gradient

    def take(self, x, index: int):
        """``x[index]`` along the first axis (a relation's weight of a stacked ``[R, in, out]``)."""
        return tf.gather(x, index)

    def concat(self, xs):
        """The tensors one after the other along the first axis."""
        return tf.concat(list(xs), 0)

    def rows(self, x, start: int, stop: int):
        """``x[start:stop]`` along the first axis."""
        return x[start:stop]

    def sum(self, x, axis: int):
        return tf.reduce_sum(x, axis)

    def mean(self, x, axis: int):
        return tf.reduce_mean(x, axis)

    def relu(self, x, overwrite: bool = False):
        """``max(x, 0)``; ``overwrite`` is PyTorch's (Note [activation in place] in torch_frontend.py): TensorFlow's
        tensors are immutable."""
        return tf.nn.relu(x)

    def elu(self, x):
        return tf.nn.elu(x)

    def leaky_relu(self, x, slope: float):
        return tf.nn.leaky_relu(x, alpha=slope)

    def dropout(self, x, p: float, training: bool):
        """Inverted dropout (kept values scaled by ``1 / (1 - p)``), seeded per call; see :meth:`seed`."""
        if p <= 0 or not training:
            return x
        from .dropout import dropout_mask  # Note [framework-neutral dropout]: the torch frontend's masks

        dtype = np.float64 if x.dtype == tf.float64 else np.float32
        mask = dropout_mask(self._seed, self._dropout_calls, tuple(x.shape), p, dtype)
        self._dropout_calls += 1
        return x * tf.convert_to_tensor(mask)

    def log_softmax(self, x):
        return tf.nn.log_softmax(x, axis=-1)

    def nll_loss(self, log_probs, labels, mask):
        """Mean of ``-log_probs[i, labels[i]]`` over the nodes in ``mask``.

        The ``(i, labels[i])`` pairs of a (labels, mask) pair are computed once:
        ``tf.boolean_mask`` costs some 40 eager ops forward and backward, a
        cached ``gather_nd`` three, and per-op dispatch dominates small graphs.
        """
        key = (id(labels), id(mask))
        cached = self._loss_indices.get(key)
        if cached is None or cached[0] is not labels or cached[1] is not mask:
            rows = tf.where(mask)[:, 0]
            pairs = tf.stack([rows, tf.cast(tf.gather(labels, rows), tf.int64)], axis=1)
            cached = self._loss_indices[key] = (labels, mask, pairs)
        return -tf.reduce_mean(tf.gather_nd(log_probs, cached[2]))

    def accuracy(self, logits, labels, mask) -> float:
        if not int(tf.reduce_sum(tf.cast(mask, tf.int64))):
            return float("nan")
        pred = tf.argmax(tf.boolean_mask(logits, mask), axis=-1, output_type=labels.dtype)
        return float(tf.reduce_mean(tf.cast(pred == tf.boolean_mask(labels, mask), tf.float32)))

    def to_float(self, x) -> float:
        return float(x.numpy())

    # ---------------------------------------------------------------- training
    def optimizer(self, params: dict[str, Any], lr: float, weight_decay: float) -> Adam:
        """Adam with L2 weight decay added to the gradient (``torch.optim.Adam`` semantics)."""
        return Adam(params, lr=lr, weight_decay=weight_decay)

    def zero_grad(self, optimizer: Adam) -> None:
        """Drop the last gradients and start recording the forward pass (Note [TensorFlow training step])."""
        self._close_tape()
        optimizer.grads = None
        optimizer.tape = tf.GradientTape()
        optimizer.tape.__enter__()
        self._recording = optimizer

    def backward(self, loss) -> None:
        """Gradients of ``loss`` for the parameters of the optimizer whose tape recorded it."""
        optimizer = self._recording
        if optimizer is None or optimizer.tape is None:
            raise RuntimeError("backward(loss) needs the forward recorded: call zero_grad(optimizer) before "
                               "the forward pass (see Note [TensorFlow training step])")
        tape = optimizer.tape
        self._close_tape()
        optimizer.grads = tape.gradient(loss, optimizer.params)

    def step(self, optimizer: Adam) -> None:
        optimizer.step()

    def no_grad(self):
        """Pause the open tape, if any: nothing inside is recorded."""
        tape = self._recording.tape if self._recording is not None else None
        return tape.stop_recording() if tape is not None else contextlib.nullcontext()

    def _close_tape(self) -> None:
        if self._recording is not None and self._recording.tape is not None:
            self._recording.tape.__exit__(None, None, None)
            self._recording.tape = None
        self._recording = None

    # ---------------------------------------------------------------- graph ops
    def _call(self, graph: BoundGraph, operator: str, attrs: dict, *inputs):
        """Run ``operator`` on the system's kernel, or its fallback's (Note [fallback accounting])."""
        impl, bound = find_operator(graph, operator, attrs)
        return impl.apply(bound, attrs, *inputs)

    def spmm(self, graph: BoundGraph, x, weight=None, reduce: str = "sum"):
        """``out[i] = reduce_{j->i} w_ij x_j``; ``x`` is ``[N, F]`` or ``[N, H, D]``, ``weight`` ``[E]`` or ``[E, H]``."""
        flat = len(x.shape) == 2
        x3 = _reshaped(x, (x.shape[0], 1, x.shape[1])) if flat else x
        w = _reshaped(weight, (weight.shape[0], 1)) if weight is not None and len(weight.shape) == 1 else weight
        out = self._call(graph, "spmm", {"reduce": reduce}, x3, w)
        return _reshaped(out, (out.shape[0], out.shape[2])) if flat else out

    def sddmm(self, graph: BoundGraph, src, dst, op: str = "dot"):
        return self._call(graph, "sddmm", {"op": op}, src, dst)

    def edge_softmax(self, graph: BoundGraph, scores):
        return self._call(graph, "edge_softmax", {}, scores)

    def gat_aggregate(self, graph: BoundGraph, x, score_src, score_dst, negative_slope: float = 0.2):
        """Softmax-attention aggregation (:func:`gnnbench.frameworks.composed.gat_aggregate`)."""
        return self.operator("gat_aggregate", graph, x, score_src, score_dst, negative_slope=float(negative_slope))

    def operator(self, name: str, graph: BoundGraph, *inputs, **attrs):
        """Operator ``name`` of the system API: the system's kernel, or its composition (Note [declared
        dispatch] in :mod:`gnnbench.frameworks.composed`)."""
        return composed.dispatch(self, graph, name, attrs, inputs)

    def __getattr__(self, name: str):
        """``F.typed_aggregate(graph, ...)`` and every other declared operator without a method of its own."""
        return composed.declared_operator(self, name)

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)
