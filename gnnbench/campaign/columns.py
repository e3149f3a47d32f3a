"""The columns a campaign's table may declare, each by name (Note [campaign declares its tables]).

A column turns an :class:`~gnnbench.campaign.entries.Entry` into a cell, given the entry of the table's
baseline system in the same section and row group (``None`` when that has no successful run). Times are in
milliseconds with one decimal, per-run costs in seconds with two, memory in MiB with one; a failed entry
shows ``-`` everywhere but ``status``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gnnbench.campaign import to_target
from gnnbench.campaign.entries import Entry

__all__ = ["Column", "COLUMNS", "CHECKED_RUN_EPOCHS", "check_share", "ratio_text", "epoch_text", "paired_ratio_text", "comparison_of", "header"]


@dataclass(frozen=True)
class Column:
    """A declared column: its header (``{baseline}`` filled in), whether it is a number (right-aligned), whether
    it reads the baseline, and how an entry becomes its cell."""

    header: str
    numeric: bool
    cell: Callable[[Entry, Entry | None], str]
    needs_baseline: bool = False
    #: reads the entry's paired comparison against the table's (first) baseline (Note [decided tables])
    paired: bool = False


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f}"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def epoch_text(entry: Entry) -> str:
    """The epoch figure in ms, ``(! reason)`` when it is unsteady across or within processes."""
    p = entry.processes
    if not len(p):
        return _ms(entry.median("epoch_time_median_s"))
    unsteady = [r for r in p.instability() if not r.endswith("needed") and not r.startswith("1 process")]
    return _ms(p.median) + (f" (! {unsteady[0]})" if unsteady else "")


def ratio_text(baseline: Entry, entry: Entry) -> str:
    """``baseline``'s epoch over ``entry``'s (above 1: ``entry`` is faster) with its 95 % interval from the
    two-level bootstrap over processes (:func:`gnnbench.core.statistics.speedup`), ``1.09x [1.01, 1.17]``."""
    from gnnbench.core.statistics import speedup

    a, b = baseline.processes, entry.processes
    if not len(a) or not len(b):
        return f"{baseline.epoch / entry.epoch:.2f}x"
    ratio, low, high = speedup(a, b)
    return f"{ratio:.2f}x" + ("" if low is None else f" [{low:.2f}, {high:.2f}]")


def _when_ok(cell: Callable[[Entry], str]) -> Callable[[Entry, Entry | None], str]:
    return lambda e, base: cell(e) if e.ok else "-"


def _against(cell: Callable[[Entry, Entry], str]) -> Callable[[Entry, Entry | None], str]:
    return lambda e, base: cell(e, base) if e.ok and base is not None and base.ok else "-"


def _share(e: Entry, base: Entry, name: str) -> str:
    mine, theirs = e.median(name), base.median(name)
    return "-" if mine is None or not theirs else f"{mine / theirs:.2f}"


def _rest(e: Entry) -> str:
    kernel = e.median("kernel_median_s")
    return "-" if kernel is None or e.epoch is None else _ms(e.epoch - kernel)


def _bound(e: Entry, base: Entry) -> str:
    """The baseline's rest (epoch minus kernels) plus this row's kernel time.

    Note [values in the framework share]
        On ``floor``'s row (benchmarks/bound_systems: every SpMM replaced by
        isplib's unweighted row mean, the least SpMM work an epoch can hold)
        this is the bound on what any kernel system can reach in this loop: the
        framework's share on the real model's numbers with the cheapest SpMMs.
        floor's own epoch is no such bound: it computes wrong numbers on
        purpose, and the framework's share depends on the numbers. GIN sums
        over the power-law graph: its logits reach about 1e5, and the loss's
        softmax then underflows in about 0.4M of its 1M entries every epoch,
        23k of them to subnormals, which cost a microcode assist in every
        multiply of the backward that reads one; floor's means keep the logits
        near 10 and make no subnormals, so floor's rest came out 8 % below
        isplib's for GIN while their kernel times matched. The bound takes the
        baseline's (isplib's) rest as it is, so what isplib costs outside its
        kernels counts against the framework, not against isplib.
    """
    kernel, base_kernel = e.median("kernel_median_s"), base.median("kernel_median_s")
    if kernel is None or base_kernel is None or base.epoch is None:
        return "-"
    return _ms(base.epoch - base_kernel + kernel)


def _relations_run_as(e: Entry) -> str:
    """How a relational run aggregated its relations, read from its row: ``typed_aggregate kernel`` (one fused call
    per layer, Note [R-GCN on the typed operator] in models/rgcn.py), ``typed_aggregate composed`` (the operator
    composed of the system's spmm, ``extra.composed``: Note [declared dispatch]), ``per relation`` (the existing
    operators on each relation's view, Note [relations on the existing operators]) or ``native layers`` (a peer's
    own heterogeneous layers, no system kernels)."""
    extra = e.latest.get("extra") or {}
    if "typed_aggregate" in (extra.get("composed") or ()):
        return "typed_aggregate composed"
    kernels = extra.get("kernel_median_s_by_kernel") or {}
    if any(name.startswith("typed_") for name in kernels):
        return "typed_aggregate kernel"
    return "per relation" if kernels else "native layers"


def _status(e: Entry, base: Entry | None) -> str:
    row = e.latest
    if e.ok:
        return "ok"
    error = str(row.get("error") or "").splitlines()
    return f"{row.get('status')}: {error[0]}" if error else str(row.get("status"))


def _stability(e: Entry, base: Entry | None) -> str:
    p = e.processes
    return (p.note() or "") if e.ok and len(p) else ""


def paired_ratio_text(session) -> str:
    """A comparison's figure, the baseline's time over the system's from its rounds, and its interval over rounds:
    ``1.12x [1.06, 1.19]`` (Note [decided tables])."""
    v = session.verdict()
    if v.rounds == 0:
        return "no rounds"
    return f"{v.speedup:.2f}x" + ("" if v.low is None else f" [{v.low:.2f}, {v.high:.2f}]")


def _paired(cell: Callable[[Any], str]) -> Callable[[Entry, Entry | None], str]:
    return lambda e, base: "-" if e.comparison is None else cell(e.comparison)


def _budget(session) -> str:
    """An undecided comparison's budget, and why it stopped short of it when it did (Note [how a comparison
    ends] in gnnbench/results/paired.py); ``-`` for a decided one."""
    from gnnbench.results.paired import duration

    if session.stopped == "decided":
        return "-"
    why = {"failed": " (a process failed)", "cut short": " (cut short)"}.get(session.stopped, "")
    return (duration(session.budget_s) if session.budget_s is not None else "not recorded") + why


def _minutes(session) -> str:
    return "-" if session.elapsed_s is None else f"{session.elapsed_s / 60:.1f}"


#: a run-time check is read as a share of a run this many epochs long (issues 35 and 56): it runs once a run,
#: whatever the run's length, so a campaign times a few epochs and sets the check against their median
CHECKED_RUN_EPOCHS = 200


def _check(row: Any, which: str) -> dict[str, Any]:
    """The row's ``opening`` check (``extra.run_check``) or its ``closing`` one (``extra.run_check.closing``), each
    ``{}`` when absent (Note [run-time check] and Note [closing check] in gnnbench/check/run_check.py)."""
    opening = (row.get("extra") or {}).get("run_check") or {}
    return opening if which == "opening" else (opening.get("closing") or {})


def _check_median(e: Entry, which: str, key: str = "seconds") -> float | None:
    import numpy as np

    values = [float(v) for v in (_check(r, which).get(key) for r in e.runs) if isinstance(v, (int, float))]
    return float(np.median(values)) if values else None


def check_share(check_s: float, epoch_s: float) -> float:
    """A check's share of a run of :data:`CHECKED_RUN_EPOCHS` epochs of ``epoch_s``, the whole check counted."""
    return check_s / (check_s + CHECKED_RUN_EPOCHS * epoch_s)


def _check_share(e: Entry, which: str) -> str:
    seconds, epoch = _check_median(e, which), e.epoch
    return "-" if seconds is None or epoch is None else f"{100 * check_share(seconds, epoch):.2f} %"


def _checks(e: Entry, base: Entry | None) -> str:
    """The latest run's opening and closing checks' statuses, a failed run's too: a check that failed is why."""
    return "/".join(_check(e.latest, which).get("status", "-") for which in ("opening", "closing"))


def _field(name: str) -> Column:
    from gnnbench.campaign.entries import field_of

    return Column(name, False, lambda e, base: str(e[name] if e[name] is not None else field_of(e.latest, name)))


def _phase(name: str) -> Callable[[Entry], str]:
    return lambda e: _ms(e.median(name))


def _kernel_share(e: Entry) -> str:
    """The kernels' share of the epoch, ``41 %``: the median kernel seconds over the epoch figure."""
    kernel = e.median("kernel_median_s")
    return "-" if kernel is None or not e.epoch else f"{100 * kernel / e.epoch:.0f} %"


def _target_part(key: str) -> Callable[[Entry], str]:
    return lambda e: to_target.part_text(e, key)


#: every column a table may declare, by name
COLUMNS: dict[str, Column] = {
    **{name: _field(name) for name in ("system", "model", "dataset", "edges", "framework", "allocator",
                                       "batching", "mode", "sampler", "options")},
    "epoch ms": Column("epoch ms", True, _when_ok(epoch_text)),
    "pass ms": Column("pass ms", True, _when_ok(epoch_text)),  # an inference run's "epoch" is one forward pass
    "forward ms": Column("forward ms", True, _when_ok(_phase("forward_median_s"))),
    "backward ms": Column("backward ms", True, _when_ok(_phase("backward_median_s"))),
    "optimizer ms": Column("optimizer ms", True, _when_ok(_phase("optimizer_median_s"))),
    "sample ms": Column("sample ms", True, _when_ok(_phase("sample_median_s"))),
    "gather ms": Column("gather ms", True, _when_ok(_phase("gather_median_s"))),
    "block prepare ms": Column("block prepare ms", True, _when_ok(_phase("block_prepare_median_s"))),
    "kernel ms": Column("kernel ms", True, _when_ok(_phase("kernel_median_s"))),
    "rest ms": Column("rest ms", True, _when_ok(_rest)),
    "prepare s": Column("prepare s", True, _when_ok(lambda e: _s(e.median("prepare_time_s")))),
    "tune s": Column("tune s", True, _when_ok(lambda e: _s(e.median("tune_time_s")))),
    "peak MiB": Column("peak MiB", True, _when_ok(lambda e: _mib(e.median("peak_memory_bytes")))),
    "held MiB": Column("held MiB", True, _when_ok(lambda e: _mib(e.extra_median("held_bytes")))),
    "seeds/s": Column("seeds/s", True, _when_ok(lambda e: f"{e.median('seeds_per_s'):.0f}"
                                                if e.median("seeds_per_s") is not None else "-")),
    "M edges/s": Column("M edges/s", True, _when_ok(lambda e: f"{e.median('edges_per_s') / 1e6:.3f}"
                                                    if e.median("edges_per_s") is not None else "-")),
    "test accuracy": Column("test accuracy", True, _when_ok(lambda e: f"{e.median('test_accuracy'):.3f}"
                                                            if e.median("test_accuracy") is not None else "-")),
    "vs baseline": Column("vs {baseline} [95% interval]", True, _against(lambda e, b: ratio_text(b, e)),
                          needs_baseline=True),
    "prepare ratio": Column("prepare vs {baseline}", True,
                            _against(lambda e, b: _share(e, b, "prepare_time_s")), needs_baseline=True),
    "memory ratio": Column("memory vs {baseline}", True,
                           _against(lambda e, b: _share(e, b, "peak_memory_bytes")), needs_baseline=True),
    "baseline rest + kernel ms": Column("{baseline} rest + kernel ms", True, _against(_bound),
                                        needs_baseline=True),
    # a sampled epoch per batch, and the kernels' share of it
    "batch ms": Column("batch ms", True, _when_ok(lambda e: _ms(e.per_batch("epoch_time_median_s")))),
    "kernel share": Column("kernel share", True, _when_ok(_kernel_share)),
    # time to a target accuracy over seeds (Note [time to target in tables] in gnnbench/campaign/to_target.py)
    "seeds reached": Column("seeds reached", True, _when_ok(to_target.reached_text)),
    "epochs to target": Column("epochs to target", True, _when_ok(to_target.epochs_text)),
    "time to target s": Column("time to target s", True, _when_ok(to_target.figure_text)),
    **{f"target {word} s": Column(f"{word} s", True, _when_ok(_target_part(key))) for key, word in to_target.PARTS},
    "time to target vs baseline": Column("{baseline} / system to target [95% interval over seeds]", True,
                                         _against(to_target.speedup_text), needs_baseline=True),
    "converges early": Column("converges early vs {baseline}", False,
                              _against(to_target.convergence_text), needs_baseline=True),
    "allocator used": Column("allocator used", False, lambda e, base: str(e.latest.get("allocator"))),
    "processes": Column("processes", True, lambda e, base: str(len(e.processes) or len(e.runs))),
    "relations run as": Column("relations run as", False, _when_ok(_relations_run_as)),
    "status": Column("status", False, _status),
    "stability": Column("stability", False, _stability),
    # the run-time checks' cost (campaigns/bench_run_check.toml)
    "checks": Column("checks (opening/closing)", False, _checks),
    "opening check s": Column("opening s", True, _when_ok(lambda e: _s(_check_median(e, "opening")))),
    "first forward s": Column("of which first forward s", True,
                              _when_ok(lambda e: _s(_check_median(e, "opening", "forward_seconds")))),
    "closing check s": Column("closing s", True, _when_ok(lambda e: _s(_check_median(e, "closing")))),
    "opening share": Column(f"opening share of {CHECKED_RUN_EPOCHS} epochs", True,
                            _when_ok(lambda e: _check_share(e, "opening"))),
    "closing share": Column(f"closing share of {CHECKED_RUN_EPOCHS} epochs", True,
                            _when_ok(lambda e: _check_share(e, "closing"))),
    # a comparison decided in paired rounds (Note [decided tables])
    "verdict": Column("verdict", False, _paired(lambda s: s.verdict().word), paired=True),
    "paired vs baseline": Column("{baseline} / system, paired [95% interval]", True, _paired(paired_ratio_text),
                                 paired=True),
    "rounds (processes)": Column("rounds (processes)", True,
                                 _paired(lambda s: f"{s.verdict().rounds} ({s.processes})"), paired=True),
    "minutes": Column("minutes", True, _paired(_minutes), paired=True),
    "budget": Column("budget if undecided", False, _paired(_budget), paired=True),
}


def comparison_of(entry: Entry, sessions, fields, baseline: str):
    """The paired comparison a decided table shows on ``entry``'s line.

    Note [decided tables]
        A campaign that decides (Note [deciding campaigns] in
        gnnbench/run/ab.py) publishes, per comparison, what ``gnnbench ab``
        would print: the ``verdict`` (faster, slower, same or undecided),
        ``paired vs baseline`` (the baseline's time over the system's from
        the rounds, with its interval over rounds: Note [paired rounds] in
        gnnbench/core/sequential.py), ``rounds (processes)``, ``minutes`` and,
        when undecided, the ``budget`` it ran out of. Each is rebuilt from the
        committed rows alone (:func:`gnnbench.results.paired.paired_rounds`),
        never from what the run printed. A table line is a configuration
        of the system (its ``rows`` fields); its comparison is the session
        whose system rows have that line's fields and whose baseline is the
        table's, the latest that ended (:func:`gnnbench.results.paired.latest`).
        The sessions are rebuilt from all of the page's rows, so a table may
        show the judged systems alone (``where = { system = "isplib" }``)
        and still read the baseline's processes.
    """
    from gnnbench.campaign.entries import field_of
    from gnnbench.core.sequential import SYSTEM
    from gnnbench.results.paired import latest, pairing

    def shows(session) -> bool:
        own = [r for r in session.rows if pairing(r).get("role") == SYSTEM]
        return (session.system == entry["system"] and session.baseline == baseline and bool(own)
                and all(field_of(own[0], f) == entry[f] for f in fields))

    return latest(s for s in sessions if shows(s))


def header(name: str, baseline: Any) -> str:
    """A declared column's header, its baseline named."""
    return COLUMNS[name].header.format(baseline=baseline)
