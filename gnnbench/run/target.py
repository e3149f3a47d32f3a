"""Time to accuracy: train until validation accuracy reaches a target, evaluated at fixed intervals, timed apart.

Note [time to accuracy]
    An epoch time compares kernels; it does not say which system trains a
    usable model sooner when systems differ in arithmetic (a quantised
    aggregation may need more epochs), in loop (a sampled epoch is cheaper
    than a full-graph one, and each needs its own number of them) or in
    preparation (paid once, worth it only over a whole run). MLPerf's answer
    is time to train: train to a stated validation accuracy, evaluated at
    fixed intervals, and time loading, training and evaluation.

    With ``--target-accuracy A`` a run trains until its validation accuracy,
    evaluated every ``--eval-every`` epochs, reaches ``A``, or until
    ``--max-epochs`` (warm-ups included) have run. It stops at the first
    evaluation at or above ``A`` that follows a timed epoch, so that a run
    reaching ``A`` during its warm-ups still has epoch figures; the time to
    accuracy is taken at the first evaluation that reached ``A`` whatever
    follows. The row's
    ``extra.time_to_accuracy`` (:class:`TimeToAccuracy`) records whether it
    reached ``A``, after how many epochs (fractional for sampled runs, whose
    evaluations may fall inside an epoch), the validation curve (accuracy
    at each evaluation) and the time to the target in parts:

    * ``train_s``: every training epoch until the evaluation that reached
      the target, warm-ups included (they train the model too), as the loop
      timed them, so the same clock as the epoch figures;
    * ``eval_s``: those evaluations, timed apart, never inside an epoch's
      figure;
    * ``prepare_s`` and ``tune_s``: the system's preparation and its
      first-use tuning, as the row's ``prepare_time_s`` and ``tune_time_s``;
    * ``seconds``: their sum, the figure compared. A first-use JIT compile
      (``extra.compile_time_s``) is left out: numba's disk cache pays it once
      per machine, not once per run.

    Everything else is as without a target: the run-time check before the
    epochs, the warm-ups excluded from the epoch statistics, the seeds, the
    accuracy at the best-validation evaluation. A row without a target has no
    such record and is stored exactly as before; the target, the interval
    and the limit enter the row's hyperparameters (so its provenance) only
    when a target is set.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from gnnbench.errors import UserError
from gnnbench.results.row import TimeToAccuracy

__all__ = ["TimeToAccuracy", "TargetTracker", "target_tracker", "check_target", "epochs_limit", "MAX_EVALUATIONS"]

#: the most evaluations ``--eval-every`` may imply over a run's epochs: each one scores every validation node (a
#: forward pass over the graph at least), so past this a run would be its evaluations, and at ``1e-12`` it would
#: never end
MAX_EVALUATIONS = 100_000


def check_target(config, model_epochs: int) -> None:
    """The target's flags agree with each other and with the run (one :class:`UserError` line otherwise)."""
    if config.target_accuracy is None:
        for name, value in (("--max-epochs", config.max_epochs), ("--eval-every", config.eval_every)):
            if value is not None:
                raise UserError(f"{name} applies only with --target-accuracy (got {name} {value:g})")
        return
    if config.mode != "train":
        raise UserError("--target-accuracy needs training (--mode train): inference passes do not learn")
    limit = epochs_limit(config, model_epochs)
    if limit <= config.warmup:
        raise UserError(f"--max-epochs ({limit}) must exceed --warmup ({config.warmup}) so that some epochs are timed")
    every = config.eval_every if config.eval_every is not None else 1
    if config.batching == "full" and every != int(every):
        raise UserError(f"--eval-every must be a whole number of epochs for full-graph training (got {every:g}); "
                        "fractions of an epoch apply to --batching sampled")
    if every > limit:
        raise UserError(f"--eval-every ({every:g}) exceeds the run's {limit} epochs: the target would never be "
                        "evaluated")
    if limit / every > MAX_EVALUATIONS:
        raise UserError(f"--eval-every {every:g} means {limit / every:.3g} evaluations in the run's {limit} epochs, "
                        f"more than {MAX_EVALUATIONS:,}: each scores every validation node; evaluate less often")


def epochs_limit(config, model_epochs: int) -> int:
    """The most epochs a run with a target trains: ``--max-epochs``, else ``--epochs``, else the model's."""
    return config.max_epochs or config.epochs or model_epochs


@dataclass
class TargetTracker:
    """Accumulates a run's training and evaluation time and its validation curve until the target is reached.

    The loop calls :meth:`trained` after every training epoch (or batch) with its seconds and the epochs
    trained so far, asks :meth:`due` whether an evaluation falls there, and reports it with :meth:`evaluated`,
    which says whether the run may stop.
    """

    target: float
    every: float
    max_epochs: int
    train_s: float = 0.0
    eval_s: float = 0.0
    curve: list[list[float]] = field(default_factory=list)
    reached_at: tuple[float, float, float] | None = None  # (epochs, train_s, eval_s) when reached
    _next: float = 0.0

    def __post_init__(self) -> None:
        self._next = self.every

    def trained(self, seconds: float) -> None:
        self.train_s += seconds

    def due(self, epochs_done: float) -> bool:
        """An evaluation is due once ``epochs_done`` reaches the next multiple of the interval (with a tolerance
        for fractions of an epoch summed from batches)."""
        return epochs_done + 1e-9 >= self._next

    def evaluated(self, epochs_done: float, val_accuracy: float, seconds: float) -> bool:
        """Records one evaluation; True once the target is reached (the run may stop)."""
        self.eval_s += seconds
        # six places: an accuracy is a ratio of counts, which float32 scores miss by ~1e-7 (7/10 as 0.69999999)
        val = round(float(val_accuracy), 6)
        self.curve.append([_tidy(epochs_done), val])
        if self._next <= epochs_done + 1e-9:  # the next multiple of the interval after now, in one step
            self._next = (math.floor((epochs_done + 1e-9) / self.every) + 1) * self.every
        if self.reached_at is None and val >= self.target:
            self.reached_at = (epochs_done, self.train_s, self.eval_s)
        return self.reached_at is not None

    def record(self, prepare_s: float | None, tune_s: float | None) -> TimeToAccuracy:
        reached = self.reached_at is not None
        epochs, train_s, eval_s = self.reached_at if reached else (None, None, None)
        seconds = None
        if reached:
            seconds = train_s + eval_s + (prepare_s or 0.0) + (tune_s or 0.0)
        return TimeToAccuracy(target=self.target, reached=reached,
                              epochs=None if epochs is None else _tidy(epochs), seconds=seconds, train_s=train_s,
                              eval_s=eval_s, prepare_s=prepare_s, tune_s=tune_s, max_epochs=self.max_epochs,
                              eval_every=_tidy(self.every), curve=self.curve)


def _tidy(value: float) -> float:
    """A whole number of epochs as an int (``12``, not ``12.0``), else rounded to six places."""
    return int(value) if math.isclose(value, round(value)) else round(value, 6)


def target_tracker(config, hyper, dataset) -> "TargetTracker | None":
    """A :class:`~gnnbench.run.target.TargetTracker` for a run with a target, else None (Note [time to
    accuracy]); a dataset without validation nodes has no accuracy to reach (one line, exit status 2)."""
    if config.target_accuracy is None:
        return None
    if not dataset.val_mask.any():
        raise UserError(f"--target-accuracy needs validation labels, and dataset '{config.dataset}' has no "
                        "validation nodes")
    return TargetTracker(config.target_accuracy, config.eval_every or 1, hyper.epochs)
