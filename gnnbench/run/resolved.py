"""A run configuration resolved once: :class:`ResolvedRun`, what a :class:`~gnnbench.run.config.RunConfig` means.

Note [a run resolved once]
    A :class:`~gnnbench.run.config.RunConfig` names a run (Note [one run
    configuration]); resolving it looks up the model's class, applies the
    configuration's overrides to the model's default hyperparameters, bounds
    the epochs by a target's limit (Note [time to accuracy]), checks what
    needs the model (epochs above the warm-ups, ``--normalisation`` for GCN
    only), and builds the ``hyperparameters`` column the row stores whatever
    the run's outcome. :meth:`ResolvedRun.of` does it once in a process, and
    what needs the result takes the :class:`ResolvedRun`: the checks before
    any worker starts (:mod:`gnnbench.run.preflight`), both loops
    (:func:`gnnbench.run.harness.train`, :func:`gnnbench.run.sampled.train_sampled`)
    and the row (:func:`gnnbench.run.record.run_record`). Before, the
    preflight, the sampled loop (twice), the record and the harness each
    resolved the configuration again, and the record and the sampled loop
    imported back into the harness to do so.

    The batching settings (``batching``, ``fanouts``, ``batch_size``,
    ``sampler``, ``accuracy_method``) are the configuration's as given; a sampled run's checks
    against the model and the dataset are :func:`gnnbench.run.sampled.check_sampled`'s.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gnnbench.errors import UserError

__all__ = ["ResolvedRun", "resolve_hyperparameters", "stored_hyperparameters"]


@dataclass(frozen=True)
class ResolvedRun:
    """One run as it will train (Note [a run resolved once]).

    Args:
        config (RunConfig): the run as named.
        model_cls (type): the model's class (:data:`gnnbench.models.MODELS`).
        hyper: the model's hyperparameters with the configuration's overrides (``hidden``, ``layers``, ``lr``,
            ``epochs``, ...).
        stored (dict): the row's ``hyperparameters`` column, as JSON keeps it.
    """

    config: Any
    model_cls: type
    hyper: Any
    stored: Mapping[str, Any]

    @classmethod
    def of(cls, config) -> "ResolvedRun":
        """Resolve ``config``.

        Raises:
            UserError: an unknown model, or settings the model cannot take (one line each).
        """
        model_cls, hyper = resolve_hyperparameters(config)
        return cls(config, model_cls, hyper, json.loads(json.dumps(stored_hyperparameters(config, hyper))))

    @property
    def sampled(self) -> bool:
        """It trains on sampled mini-batches (Note [sampled batching] in gnnbench.run.sampled)."""
        return self.config.batching == "sampled"


def resolve_hyperparameters(config):
    """``(model class, hyperparameters)`` of ``config``: the model's defaults with its overrides (Note [a run
    resolved once]; :meth:`ResolvedRun.of` is how the run's modules call it).

    Raises:
        UserError: an unknown model, ``--normalisation`` for a model without one, or no epoch left to time.
    """
    from gnnbench.models import get_model
    from gnnbench.run.config import ACCURACY_METHODS
    from gnnbench.run.target import check_target, epochs_limit

    model_cls = get_model(config.model)
    hyper = model_cls.defaults
    check_target(config, hyper.epochs)  # Note [time to accuracy]: with a target, the epochs are its limit
    epochs = epochs_limit(config, hyper.epochs) if config.target_accuracy is not None else config.epochs
    overrides = {k: v for k, v in (("hidden", config.hidden), ("heads", config.heads), ("layers", config.layers),
                                   ("lr", config.lr), ("epochs", epochs), ("normalisation", config.normalisation),
                                   ("bases", getattr(config, "bases", None))) if v is not None}
    if config.normalisation is not None and hyper.normalisation is None:
        raise UserError(f"--normalisation applies to GCN only; model '{config.model}' has no normalisation option")
    if getattr(config, "bases", None) is not None and not getattr(model_cls, "basis_decomposition", False):
        raise UserError(f"--bases applies to R-GCN only (its basis decomposition); model '{config.model}' has no "
                        f"bases")
    hyper = replace(hyper, **overrides)
    if config.accuracy_method != ACCURACY_METHODS[0] and config.batching != "sampled":
        raise UserError(f"--accuracy-method {config.accuracy_method} scores mini-batches of sampled neighbours, so "
                        f"it needs --batching sampled; a full-graph run scores every node over all its neighbours")
    if hyper.epochs <= config.warmup:
        raise UserError(f"--epochs ({hyper.epochs}) must exceed --warmup ({config.warmup}) so that some epochs are "
                        f"timed")
    return model_cls, hyper


def stored_hyperparameters(config, hyper) -> dict[str, Any]:
    """The ``hyperparameters`` column of a run of ``config`` with ``hyper``: the one place that builds it."""
    from gnnbench.run.config import ACCURACY_METHODS, SAMPLED_ONLY

    stored = {**hyper.as_dict(), "warmup": config.warmup, "dtype": config.dtype, "index_dtype": config.index_dtype,
              "selection": config.selection, "system_options": dict(config.system_options)}
    # each only when not the default, so rows stored before these fields keep their identity
    if config.fallback:
        stored["fallback"] = config.fallback
    if config.mode != "train":
        stored["mode"] = config.mode
    if config.cpus is not None:  # Note [pinned runs]
        stored["cpus"] = config.cpus
    if not config.tune:
        stored["tune"] = False
    if config.target_accuracy is not None:  # Note [time to accuracy]; the limit is hyper's epochs
        stored.update(target_accuracy=config.target_accuracy, eval_every=_whole(config.eval_every or 1))
    if config.batching != "full":  # Note [sampled batching] in gnnbench.run.sampled
        stored["batching"] = config.batching
        for name in SAMPLED_ONLY:  # the default scoring only when named: rows before it keep their identity
            value = getattr(config, name)
            if name == "relation_fanouts":  # only when given: rows before it keep their identity
                if value:
                    stored[name] = {relation: list(f) for relation, f in value}
            elif name != "accuracy_method" or value != ACCURACY_METHODS[0]:
                stored[name] = list(value) if isinstance(value, tuple) else value
    return stored


def _whole(value: float) -> float:
    return int(value) if float(value).is_integer() else value
