"""What a dataset asks of training: the loss and the reported score, for single- and multi-label tasks.

The harness trains every dataset through one :class:`Objective`, so a
multi-label dataset (ogbn-proteins, Note [multi-label task]) needs no
special case there, and no new operator in either framework frontend.

Note [binary cross-entropy from log_softmax]
    For a logit ``x``, ``log_softmax([x/2, -x/2]) = [log sigmoid(x),
    log sigmoid(-x)]`` exactly (the two entries differ by ``x``), and
    ``log_softmax`` is numerically stable in every frontend. So the ``[N, T]``
    logits are reshaped to ``[N*T, 1]``, multiplied by the constant ``[[1/2,
    -1/2]]`` and passed through ``log_softmax`` and ``nll_loss`` with target
    class 0 for a positive label and 1 for a negative one: the mean over the
    training nodes' ``T`` tasks is ``BCEWithLogits`` (PyTorch's
    ``binary_cross_entropy_with_logits``), built from operators both the
    PyTorch and the TensorFlow frontend already have.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.errors import UserError

from .dataset import Dataset

__all__ = ["Objective", "SPLITS", "to_numpy"]

SPLITS = ("train", "val", "test")


def to_numpy(x: Any) -> np.ndarray:
    """A framework tensor's values as a host NumPy array."""
    detach = getattr(x, "detach", None)
    if detach is not None:  # torch
        return detach().cpu().numpy()
    return np.asarray(x)


class Objective:
    """Loss and score of ``dataset`` in frontend ``F``.

    Multi-class: ``nll_loss(log_softmax(logits))`` and accuracy. Multi-label:
    mean binary cross-entropy with logits over the tasks (Note [binary
    cross-entropy from log_softmax]) and ROC-AUC averaged over tasks, as OGB
    scores ogbn-proteins.

    Attributes:
        metric: ``"accuracy"`` or ``"rocauc"``; the score's name for the row.
    """

    def __init__(self, F: Any, dataset: Dataset):
        self.F = F
        self.multilabel = dataset.task == "multilabel"
        self.metric = "rocauc" if self.multilabel else "accuracy"
        masks = {name: np.asarray(getattr(dataset, f"{name}_mask")) for name in SPLITS}
        if self.multilabel:
            tasks = dataset.num_classes
            self._labels = np.asarray(dataset.labels)
            self._masks = masks
            # target class 0 = positive (log sigmoid(x)), 1 = negative
            self._targets = F.tensor((1 - self._labels).reshape(-1))
            self._train = F.tensor(np.repeat(masks["train"], tasks))
            self._halves = F.tensor(np.array([[0.5, -0.5]], dtype=np.float32))
        else:
            self._targets = F.tensor(dataset.labels)
            self._split_masks = {name: F.tensor(m) for name, m in masks.items()}
            self._train = self._split_masks["train"]

    def loss(self, logits: Any) -> Any:
        """The training loss of ``[N, C]`` (or ``[N, T]``) logits, a scalar tensor."""
        F = self.F
        if not self.multilabel:
            return F.nll_loss(F.log_softmax(logits), self._targets, self._train)
        pairs = F.matmul(F.reshape(logits, (-1, 1)), self._halves)
        return F.nll_loss(F.log_softmax(pairs), self._targets, self._train)

    def scores(self, logits: Any) -> dict[str, float]:
        """Accuracy (or ROC-AUC) on each split, as fractions in ``[0, 1]``."""
        if not self.multilabel:
            return {name: self.F.accuracy(logits, self._targets, m) for name, m in self._split_masks.items()}
        from .ogb import rocauc

        out = to_numpy(logits)
        result = {}
        for name, m in self._masks.items():
            try:
                result[name] = rocauc(self._labels[m], out[m])
            except (RuntimeError, ValueError, UserError):  # no task with both classes in this split
                result[name] = float("nan")
        return result
