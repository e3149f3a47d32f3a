"""The frontend op set under PyTorch: what models in ``gnnbench.models`` may call.

Models are written once against this small surface (dense layers,
activations, dropout, loss) plus the system API's graph operators, which go
to the system's generated glue. The TensorFlow frontend implements the same
names.

Note [fused dense ops]
    The loop's share outside the kernels is the same code for every system,
    and it bounds every system's epoch (``results/bench_training.md``), so
    the op set offers the fused forms a library layer would use:
    ``linear(x, w, b) = x @ w + b`` (``torch.addmm``, as ``nn.Linear`` and
    DGL's layers do) and ``mul_add(a, b, c) = a * b + c`` (``torch.addcmul``).
    Each saves one full ``[N, F]`` pass and one temporary per call against
    ``add(matmul(x, w), b)``, in the forward and in the backward. Only
    rounding may differ from the unfused forms (the bias is added inside the
    product's accumulation). TensorFlow composes them from its own ops.
    ``benchmarks/studies/bench_loop_share.py`` measures what each saves.

Note [loss without a gather]
    The training loss averages over the training rows only. Gathering them
    (``log_probs[mask]``) costs a ``nonzero`` over the mask, a copy of the
    kept rows, and in the backward a zero-filled ``[N, C]`` gradient plus a
    scatter; ``nonzero`` is a two-pass parallel op whose time grows sharply
    when the cores are shared. Giving the other rows the ignored label
    instead (``nll_loss(..., ignore_index)``) computes the same mean in one
    pass, and its backward writes the zeros directly. At 131,072 rows it took
    half the time of the gather on this machine, forward and backward
    (``benchmarks/studies/bench_loop_share.py``).

Note [activation in place]
    ``relu(x, overwrite=True)`` writes the result into ``x`` (``relu_``)
    instead of a new ``[N, F]`` tensor, as PyG's and DGL's examples do with
    ``inplace=True``: one allocation fewer, one ``[N, F]`` tensor fewer
    alive at the peak, and a write into memory the cache already holds.
    Autograd allows it only when no backward still needs ``x``'s old
    values, so it happens only while autograd records (training), on a
    tensor that is no view, made by an op whose backward saves neither its
    result nor memory the result shares (``add``, ``addcmul``, ``addmm``:
    the last op of GCN's, SAGE's and GIN's convolutions). Any other ``x``
    (a kernel's output, which its bridge may save; the features; anything
    under ``no_grad``, inference passes included) gets a new tensor as
    before. The caller promises that nothing reads ``x`` afterwards: the
    model stack passes ``overwrite=True`` for a convolution's output,
    which nothing else holds (models/base.py). TensorFlow has no in-place
    ops and ignores the flag.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as TF

from gnnbench.runtime.fallback import find_operator
from gnnbench.runtime.glue import BoundGraph
from . import composed
from .dropout import dropout_apply, dropout_mask

__all__ = ["TorchFrontend"]

#: the label of rows outside the loss's mask (Note [loss without a gather])
_IGNORED = -100


#: the autograd nodes whose backward reads neither their result nor an input they share memory with, so that
#: an in-place op on their result leaves every saved tensor intact (Note [activation in place])
_RESULT_NOT_SAVED = frozenset({"AddBackward0", "AddcmulBackward0", "AddmmBackward0"})


def _may_overwrite(x) -> bool:
    """Whether ``x`` is a fresh result of autograd's own that nothing saved (Note [activation in place])."""
    return (torch.is_grad_enabled() and x.requires_grad and x._base is None and x.grad_fn is not None
            and x.grad_fn.name() in _RESULT_NOT_SAVED)


class _Dropout(torch.autograd.Function):
    """``x * mask`` with the mask drawn on the fly, forward and backward (Note [fused dropout])."""

    @staticmethod
    def forward(ctx, x, seed: int, call: int, p: float):
        x = x.contiguous()
        out = torch.empty_like(x)
        dropout_apply(seed, call, x.detach().numpy(), p, out.numpy())
        ctx.key = (seed, call, p)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        grad_x = torch.empty_like(grad)
        dropout_apply(ctx.key[0], ctx.key[1], grad.numpy(), ctx.key[2], grad_x.numpy())
        return grad_x, None, None, None


class TorchFrontend:
    """PyTorch implementation of the frontend op set.

    Args:
        device: ``"cpu"`` or ``"cuda"``.
        dtype: float dtype of features and parameters (``"float32"`` or ``"float64"``).
    """

    name = "torch"

    def __init__(self, device: str = "cpu", dtype: str = "float32"):
        self.device = torch.device(device)
        self.dtype = getattr(torch, dtype)
        self._seed, self._dropout_calls = 0, 0
        self._targets: tuple | None = None  # the last (key, labels, mask, targets) of nll_loss

    @property
    def version(self) -> str:
        return torch.__version__

    # ---------------------------------------------------------------- setup
    def seed(self, seed: int) -> None:
        """Seed torch and the dropout stream (Note [framework-neutral dropout] in ``dropout.py``)."""
        torch.manual_seed(seed)
        self._seed, self._dropout_calls = int(seed), 0

    def set_threads(self, threads: int) -> None:
        torch.set_num_threads(threads)

    def tensor(self, array: np.ndarray) -> torch.Tensor:
        array = np.ascontiguousarray(array)
        if not array.flags.writeable:  # the dataset's arrays are read-only; the framework owns a copy
            array = array.copy()
        t = torch.from_numpy(array)
        if t.is_floating_point():
            t = t.to(self.dtype)
        return t.to(self.device)

    def parameter(self, array: np.ndarray) -> torch.Tensor:
        return self.tensor(array).requires_grad_(True)

    def graph_tensor(self, graph: BoundGraph, name: str, array: np.ndarray) -> torch.Tensor:
        """A constant derived from the graph (e.g. GCN edge weights), created once per graph."""
        key = (self.name, name)
        if key not in graph.tensors:
            graph.tensors[key] = self.tensor(array)
        return graph.tensors[key]

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    # ---------------------------------------------------------------- dense ops
    def matmul(self, x, w):
        return x @ _column_major(w)

    def linear(self, x, w, b):
        """``x @ w + b`` as one ``addmm`` (Note [fused dense ops])."""
        return torch.addmm(b, x, _column_major(w))

    def add(self, a, b):
        return a + b

    def mul(self, a, b):
        return a * b

    def mul_add(self, a, b, c):
        """``a * b + c`` as one ``addcmul`` (Note [fused dense ops])."""
        return torch.addcmul(c, a, b)

    def reshape(self, x, shape):
        return x.reshape(shape)

    def take(self, x, index: int):
        """``x[index]`` along the first axis (a relation's weight of a stacked ``[R, in, out]``)."""
        return x[index]

    def concat(self, xs):
        """The tensors one after the other along the first axis."""
        return torch.cat(list(xs))

    def rows(self, x, start: int, stop: int):
        """``x[start:stop]`` along the first axis."""
        return x[start:stop]

    def sum(self, x, axis: int):
        return x.sum(axis)

    def mean(self, x, axis: int):
        return x.mean(axis)

    def relu(self, x, overwrite: bool = False):
        """``max(x, 0)``; with ``overwrite``, in ``x``'s own memory where autograd allows (Note [activation in
        place])."""
        if overwrite and _may_overwrite(x):
            return torch.relu_(x)
        return TF.relu(x)

    def elu(self, x):
        return TF.elu(x)

    def leaky_relu(self, x, slope: float):
        return TF.leaky_relu(x, slope)

    def dropout(self, x, p: float, training: bool):
        """Inverted dropout with the framework-neutral mask of this call (see :meth:`seed`).

        On the CPU the mask is drawn on the fly, in the forward and again in
        the backward (Note [fused dropout]); elsewhere it is a tensor.
        """
        if p <= 0 or not training:
            return x
        call = self._dropout_calls
        self._dropout_calls += 1
        if x.device.type == "cpu":
            return _Dropout.apply(x, self._seed, call, float(p))
        dtype = np.float64 if x.dtype == torch.float64 else np.float32
        return x * torch.from_numpy(dropout_mask(self._seed, call, tuple(x.shape), p, dtype)).to(x.device)

    def log_softmax(self, x):
        return TF.log_softmax(x, dim=-1)

    def nll_loss(self, log_probs, labels, mask):
        """Mean negative log-likelihood over the rows where ``mask`` holds (Note [loss without a gather]).

        The targets with the other rows ignored are made once per ``(labels, mask)`` pair, not every epoch: a
        loop passes the same two tensors each time, unchanged (their version counters say so)."""
        key = (id(labels), labels._version, id(mask), mask._version)
        if self._targets is None or self._targets[0] != key:
            self._targets = (key, labels, mask, torch.where(mask, labels, _IGNORED))  # keeps both alive: ids stay
        return TF.nll_loss(log_probs, self._targets[3], ignore_index=_IGNORED)

    def accuracy(self, logits, labels, mask) -> float:
        pred = logits[mask].argmax(-1)
        return float((pred == labels[mask]).float().mean()) if int(mask.sum()) else float("nan")

    def to_float(self, x) -> float:
        return float(x.detach())

    # ---------------------------------------------------------------- training
    def backward(self, loss) -> None:
        loss.backward()

    def optimizer(self, params: dict[str, Any], lr: float, weight_decay: float):
        """Adam with L2 weight decay added to the gradient (``torch.optim.Adam`` semantics)."""
        return torch.optim.Adam(list(params.values()), lr=lr, weight_decay=weight_decay)

    def zero_grad(self, optimizer) -> None:
        optimizer.zero_grad(set_to_none=True)

    def step(self, optimizer) -> None:
        optimizer.step()

    def no_grad(self):
        return torch.no_grad()

    # ---------------------------------------------------------------- graph ops
    def _call(self, graph: BoundGraph, operator: str, attrs: dict, *inputs):
        """Run ``operator`` on the system's kernel, or its fallback's (Note [fallback accounting])."""
        impl, bound = find_operator(graph, operator, attrs)
        return impl.apply(bound, attrs, *inputs)

    def spmm(self, graph: BoundGraph, x, weight=None, reduce: str = "sum"):
        """``out[i] = reduce_{j->i} w_ij x_j``; ``x`` is ``[N, F]`` or ``[N, H, D]``, ``weight`` ``[E]`` or ``[E, H]``."""
        flat = x.dim() == 2
        x3 = x.unsqueeze(1) if flat else x
        w = weight.unsqueeze(1) if weight is not None and weight.dim() == 1 else weight
        out = self._call(graph, "spmm", {"reduce": reduce}, x3.contiguous(), None if w is None else w.contiguous())
        return out.squeeze(1) if flat else out

    def sddmm(self, graph: BoundGraph, src, dst, op: str = "dot"):
        return self._call(graph, "sddmm", {"op": op}, src.contiguous(), dst.contiguous())

    def edge_softmax(self, graph: BoundGraph, scores):
        return self._call(graph, "edge_softmax", {}, scores.contiguous())

    def gat_aggregate(self, graph: BoundGraph, x, score_src, score_dst, negative_slope: float = 0.2):
        """Softmax-attention aggregation (:func:`gnnbench.frameworks.composed.gat_aggregate`)."""
        return self.operator("gat_aggregate", graph, x, score_src, score_dst, negative_slope=float(negative_slope))

    def operator(self, name: str, graph: BoundGraph, *inputs, **attrs):
        """Operator ``name`` of the system API: the system's kernel, or its composition (Note [declared
        dispatch] in :mod:`gnnbench.frameworks.composed`)."""
        return composed.dispatch(self, graph, name, attrs, inputs, as_input=torch.Tensor.contiguous)

    def __getattr__(self, name: str):
        """``F.typed_aggregate(graph, ...)`` and every other declared operator without a method of its own."""
        return composed.declared_operator(self, name)

    def to_numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()


def _column_major(w):
    """A parameter matrix ``w`` as a column-major view of a copy, the layout ``nn.Linear`` hands ``mm``.

    Note [weights column-major]
        autograd's ``mm`` backward picks the weight gradient's layout from the
        weight's strides: for a row-major ``w`` (``[in, out]``, as models
        declare it) it computes ``x^T @ grad``, for a column-major one
        ``(grad^T @ x)^T``. Same sum, but MKL runs the first far slower when
        ``out`` is narrow: ``[64, N] @ [N, 8]`` took about 5x the time of
        ``[8, N] @ [N, 64]`` at N = 2^17 on this CPU, which made every kernel
        system's SAGE and GIN backward slower than the natives', whose
        ``nn.Linear`` weights are ``[out, in]`` and reach ``mm`` transposed
        (issue 55). A copy of a parameter is a few KiB; activations (not leaf
        parameters) keep their layout.
    """
    if w.dim() == 2 and w.is_leaf and w.requires_grad and w.is_contiguous() and torch.is_grad_enabled():
        return w.t().contiguous().t()
    return w

