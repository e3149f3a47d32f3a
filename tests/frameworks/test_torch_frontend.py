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
