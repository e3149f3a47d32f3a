"""Loss and score per task (datasets/objective.py): multi-label BCE from existing operators, ROC-AUC as OGB."""
import numpy as np
import pytest
import torch

from gnnbench.datasets.dataset import build_dataset, symmetric_graph
from gnnbench.datasets.objective import Objective
from gnnbench.frameworks import get_frontend


def _multilabel(n=40, tasks=5, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random((n, tasks)) < 0.4).astype(np.int64)
    masks = [np.arange(n) % 3 == k for k in range(3)]
    graph = symmetric_graph(np.arange(n - 1), np.arange(1, n), n)
    return build_dataset("ml", graph, rng.random((n, 3)), labels, *masks, tasks, task="multilabel"), rng


def test_multilabel_loss_is_bce_with_logits():
    ds, rng = _multilabel()
    F = get_frontend("torch", "cpu", "float64")
    logits = torch.tensor(rng.standard_normal((ds.num_nodes, ds.num_classes)) * 3, requires_grad=True)
    loss = Objective(F, ds).loss(logits)
    train = torch.from_numpy(ds.train_mask)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        logits[train], torch.from_numpy(ds.labels[ds.train_mask]).double())
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert logits.grad is not None and logits.grad[~train].abs().sum() == 0


def test_multilabel_score_is_ogb_rocauc():
    from sklearn.metrics import roc_auc_score

    ds, rng = _multilabel()
    F = get_frontend("torch", "cpu", "float32")
    scores = rng.standard_normal((ds.num_nodes, ds.num_classes)).astype(np.float32)
    got = Objective(F, ds).scores(torch.from_numpy(scores))
    m = ds.test_mask
    want = np.mean([roc_auc_score(ds.labels[m, t], scores[m, t]) for t in range(ds.num_classes)])
    assert got["test"] == pytest.approx(want)
    assert Objective(F, ds).metric == "rocauc"


def test_multilabel_loss_in_tensorflow_matches_torch():
    pytest.importorskip("tensorflow")
    ds, rng = _multilabel()
    logits = rng.standard_normal((ds.num_nodes, ds.num_classes))
    tf_loss = Objective(get_frontend("tensorflow", "cpu", "float64"), ds).loss(
        get_frontend("tensorflow", "cpu", "float64").tensor(logits))
    torch_loss = Objective(get_frontend("torch", "cpu", "float64"), ds).loss(torch.from_numpy(logits))
    assert float(tf_loss.numpy()) == pytest.approx(float(torch_loss), rel=1e-12)


def test_rocauc_agrees_with_ogbs_evaluator():
    pytest.importorskip("ogb")
    from ogb.nodeproppred import Evaluator

    from gnnbench.datasets.ogb import rocauc

    rng = np.random.default_rng(1)
    labels = (rng.random((60, 112)) < 0.2).astype(np.int64)
    labels[:, 0] = 0  # a task with one class only is skipped by both
    scores = rng.standard_normal((60, 112))
    want = Evaluator("ogbn-proteins").eval({"y_true": labels, "y_pred": scores})["rocauc"]
    assert rocauc(labels, scores) == pytest.approx(want)
