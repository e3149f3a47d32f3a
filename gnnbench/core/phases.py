"""What a run times per epoch, declared once: :data:`PHASES`.

Note [phases by name]
    Each timed phase is one :class:`Phase`: its name, a line saying what it
    times, the loops that have it (:data:`FULL`, the full-graph loop of
    :mod:`gnnbench.run.harness`; :data:`SAMPLED`, the mini-batch loop of
    :mod:`gnnbench.run.sampled`), whether an inference pass has it, and its
    row columns (``{name}_median_s`` and ``{name}_times`` unless it says
    otherwise). Everything else reaches a phase by its name and derives what it
    lists from here: the row's columns (:class:`~gnnbench.results.row.RunResult`
    checks the columns it declares against this, and gives a phase it does not
    declare its two columns at the end), the loops' timers (``phases.lap("gather")``
    in :class:`~gnnbench.run.loop.Phases`), the sampled-phases figure, the
    lines ``gnnbench run`` prints and :meth:`Measurement.from_row
    <gnnbench.core.measurement.Measurement.from_row>`. Before, the phases crossed
    from the loop to the row as positions (``totals[3]``, a ``[:4]`` slice) and
    their list was restated in six files, so adding one meant finding all six.

    The *step* phases run one after the other in every step (a full-graph epoch,
    or a batch), in the order declared, and an epoch is their sum. ``epoch`` and
    ``kernel`` are timed per epoch too but are no step: the epoch spans the
    steps, and the kernels' time lies inside the forward, backward and optimizer
    phases (Note [kernel time]).

    A phase added here shows in a new results store's table; a store made by an
    earlier version gets its columns from an upgrade step in
    :mod:`gnnbench.results.store` (Note [schema versions]).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Phase", "PHASES", "FULL", "SAMPLED", "phase", "steps"]

#: the full-graph loop (:func:`gnnbench.run.harness.train`)
FULL = "full"
#: the mini-batch loop over sampled blocks (:func:`gnnbench.run.sampled.train_sampled`)
SAMPLED = "sampled"


@dataclass(frozen=True)
class Phase:
    """One timed phase (Note [phases by name]).

    Args:
        name (str): how every other module names it.
        description (str): what it times, one line.
        loops (tuple): of :data:`FULL` and :data:`SAMPLED`, the loops that time it.
        inference (bool): an inference pass times it too (default: ``True``).
        step (bool): one of a step's phases, summed into the epoch (default: ``True``).
        median, samples (str, optional): its row columns (default: ``{name}_median_s``, ``{name}_times``).
        iqr (str, optional): its interquartile-range column (default: none).
    """

    name: str
    description: str
    loops: tuple[str, ...]
    inference: bool = True
    step: bool = True
    median: str = ""
    samples: str = ""
    iqr: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.loops) - {FULL, SAMPLED}
        if unknown:
            raise ValueError(f"phase {self.name!r}: unknown loop(s) {sorted(unknown)}; choose among {FULL}, {SAMPLED}")
        object.__setattr__(self, "median", self.median or f"{self.name}_median_s")
        object.__setattr__(self, "samples", self.samples or f"{self.name}_times")

    @property
    def label(self) -> str:
        """Its name as printed and drawn (``block prepare``)."""
        return self.name.replace("_", " ")


#: every timed phase; the step phases in the order a step runs them (Note [phases by name])
PHASES: tuple[Phase, ...] = (
    Phase("epoch", "one epoch (an inference pass in inference mode), its steps end to end", (FULL, SAMPLED),
          step=False, median="epoch_time_median_s", iqr="epoch_time_iqr_s"),
    Phase("sample", "the sampler draws a batch's blocks", (SAMPLED,)),
    Phase("gather", "a batch's input features and its seeds' labels into framework tensors", (SAMPLED,)),
    Phase("block_prepare", "each block of a batch as a graph, and the system's prepare hook on it", (SAMPLED,)),
    Phase("forward", "the forward pass, the loss with it", (FULL, SAMPLED)),
    Phase("backward", "the backward pass", (FULL, SAMPLED), inference=False),
    Phase("optimizer", "the optimizer's step", (FULL, SAMPLED), inference=False),
    Phase("kernel", "inside the system's own kernels, during the forward, backward and optimizer phases",
          (FULL, SAMPLED), step=False),
)


def phase(name: str) -> Phase:
    """The declared phase ``name``.

    Raises:
        KeyError: no phase has that name (the message names those that do).
    """
    for p in PHASES:
        if p.name == name:
            return p
    raise KeyError(f"no timed phase {name!r}; the phases are {', '.join(p.name for p in PHASES)}")


def steps(loop: str, mode: str = "train") -> tuple[Phase, ...]:
    """The step phases ``loop`` times in ``mode`` (``train`` or ``inference``), in the order they run."""
    return tuple(p for p in PHASES if p.step and loop in p.loops and (mode == "train" or p.inference))
