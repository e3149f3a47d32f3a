"""gnnbench/frameworks/torch_frontend.py: the PyTorch frontend's tensors, dropout stream and training ops."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.frameworks.dropout import dropout_mask
from gnnbench.frameworks.torch_frontend import TorchFrontend


def test_tensors_take_the_frontend_dtype_and_copy_read_only_arrays():
    F = TorchFrontend(dtype="float64")
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    array.flags.writeable = False
    t = F.tensor(array)
    assert t.dtype == torch.float64 and t.shape == (2, 3)
    t[0, 0] = 9.0  # the framework owns a copy
    assert array[0, 0] == 0.0
    assert F.tensor(np.array([1, 2], dtype=np.int64)).dtype == torch.int64  # indices keep their type
    assert F.parameter(np.ones((2, 2))).requires_grad


def test_dropout_follows_the_framework_neutral_stream_and_is_off_in_eval():
    F = TorchFrontend()
    F.seed(5)
    x = torch.ones(30, 20)
    first, second = F.dropout(x, 0.5, True), F.dropout(x, 0.5, True)
    assert torch.equal(first, torch.from_numpy(dropout_mask(5, 0, (30, 20), 0.5)))
    assert torch.equal(second, torch.from_numpy(dropout_mask(5, 1, (30, 20), 0.5)))
    assert torch.equal(F.dropout(x, 0.5, False), x)


def test_loss_accuracy_and_an_optimizer_step():
    F = TorchFrontend()
    w = F.parameter(np.zeros((3, 2), dtype=np.float32))
    x = F.tensor(np.eye(3, dtype=np.float32))
    labels, mask = torch.tensor([0, 1, 1]), torch.tensor([True, True, False])
    opt = F.optimizer({"w": w}, lr=0.1, weight_decay=0.0)
    F.zero_grad(opt)
    loss = F.nll_loss(F.log_softmax(F.matmul(x, w)), labels, mask)
    assert F.to_float(loss) == pytest.approx(np.log(2))
    F.backward(loss)
    F.step(opt)
    assert F.accuracy(F.matmul(x, w), labels, mask) == 1.0  # one step moved both rows to their labels


def test_fused_dropout_backward_is_the_same_mask_and_saves_no_tensor():
    F = TorchFrontend()
    F.seed(2)
    x = torch.randn(40, 9, requires_grad=True)
    out = F.dropout(x, 0.4, True)
    mask = torch.from_numpy(dropout_mask(2, 0, (40, 9), 0.4))
    assert torch.equal(out, x.detach() * mask)
    assert out.grad_fn.saved_tensors == ()  # Note [fused dropout]: the backward redraws the mask
    out.backward(torch.full((40, 9), 3.0))
    assert torch.equal(x.grad, 3.0 * mask)


def test_fused_dense_ops_match_their_unfused_forms_with_gradients():
    F = TorchFrontend(dtype="float64")
    g = torch.Generator().manual_seed(0)
    x, w, b, s = (torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
                  for shape in ((7, 5), (5, 3), (3,), (7, 1)))
    for fused, unfused in ((lambda: F.linear(x, w, b), lambda: F.add(F.matmul(x, w), b)),
                           (lambda: F.mul_add(F.matmul(x, w), s, b), lambda: F.add(F.mul(F.matmul(x, w), s), b))):
        grads = []
        for form in (fused, unfused):
            for t in (x, w, b, s):
                t.grad = None
            out = form()
            out.square().sum().backward()
            grads.append((out.detach(), *(t.grad for t in (x, w, b, s))))
        for a, c in zip(*grads):
            assert (a is None) == (c is None)
            if a is not None:
                torch.testing.assert_close(a, c, rtol=1e-12, atol=1e-12)


def test_loss_over_masked_rows_matches_the_gathered_rows_with_gradients():
    F = TorchFrontend(dtype="float64")
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(9, 4, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 3, 1, 2, 2, 0, 1, 3, 0])
    mask = torch.tensor([True, False, True, True, False, False, True, True, False])
    loss = F.nll_loss(F.log_softmax(logits), labels, mask)
    (grad,) = torch.autograd.grad(loss, logits)
    expected = torch.nn.functional.nll_loss(torch.log_softmax(logits, -1)[mask], labels[mask])
    (expected_grad,) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(loss, expected, rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-14, atol=1e-14)
    assert torch.all(grad[~mask] == 0)
    assert torch.isnan(F.nll_loss(F.log_softmax(logits), labels, torch.zeros(9, dtype=torch.bool)))


# ---------------------------------------------------------------- Note [activation in place]

def _fresh(op: str):
    """A training-time result of ``op`` and the parameter it came from."""
    w = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4).requires_grad_(True)
    s = torch.full((3, 1), 2.0, dtype=torch.float64)
    b = torch.full((4,), -0.5, dtype=torch.float64)
    made = {"addcmul": lambda: torch.addcmul(b, w, s), "add": lambda: w + b,
            "addmm": lambda: torch.addmm(b, s.expand(3, 3).contiguous(), w),
            "exp": lambda: w.exp(), "view": lambda: (w + b)[:2], "leaf": lambda: w.detach()}[op]
    return made(), w


@pytest.mark.parametrize("op", ["addcmul", "add", "addmm"])
def test_relu_overwrites_a_convolutions_last_result_and_its_gradient_is_unchanged(op):
    F = TorchFrontend(dtype="float64")
    x, w = _fresh(op)
    y = F.relu(x, overwrite=True)
    assert y.data_ptr() == x.data_ptr()  # no new tensor
    (y * torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    in_place = w.grad.clone()
    w.grad = None
    x, w = _fresh(op)
    (F.relu(x) * torch.arange(x.numel(), dtype=x.dtype).reshape(x.shape)).sum().backward()
    assert torch.equal(in_place, w.grad)


@pytest.mark.parametrize("op", ["exp", "view", "leaf"])
def test_relu_makes_a_new_tensor_where_autograd_needs_the_old_values(op):
    x, _ = _fresh(op)
    before = x.detach().clone()
    y = TorchFrontend(dtype="float64").relu(x, overwrite=True)
    assert y.data_ptr() != x.data_ptr() and (x.detach() == before).all()


def test_relu_never_overwrites_without_autograd():
    x, _ = _fresh("addcmul")
    with torch.no_grad():
        x = x.detach() + 0  # an inference pass's temporary: indistinguishable from the features
        before = x.clone()
        TorchFrontend(dtype="float64").relu(x, overwrite=True)
    assert torch.equal(x, before)


def test_the_loss_targets_are_made_once_per_labels_and_mask(monkeypatch):
    from gnnbench.frameworks import torch_frontend

    made = []
    where = torch.where
    monkeypatch.setattr(torch_frontend.torch, "where", lambda *a: made.append(1) or where(*a))
    F = torch_frontend.TorchFrontend(dtype="float64")
    log_probs = torch.log_softmax(torch.linspace(-2, 2, 12, dtype=torch.float64).reshape(4, 3), -1)
    labels, mask = torch.tensor([0, 1, 2, 1]), torch.tensor([True, False, True, True])
    first = F.nll_loss(log_probs, labels, mask)
    assert torch.equal(F.nll_loss(log_probs, labels, mask), first) and len(made) == 1
    expected = -(log_probs[0, 0] + log_probs[2, 2] + log_probs[3, 1]) / 3
    assert torch.allclose(first, expected)
    mask[3] = False  # changed in place: its version moves on, the targets are made again
    assert torch.allclose(F.nll_loss(log_probs, labels, mask), -(log_probs[0, 0] + log_probs[2, 2]) / 2)
    assert len(made) == 2
