"""``gnnbench run --repeat N``: a line per process as it finishes, then the spread of their medians.

The processes run through :func:`gnnbench.cli.run.run_repeated` (Note [repetitions] in
:mod:`gnnbench.run.repeat`), driven by ``gnnbench.cli.run``; this module only renders them (and imports
nothing of ``run``'s, so the two do not import each other). ``--json`` prints each stored row as one
JSON object per line instead, and no summary, so that the output stays one row per line.
"""
from __future__ import annotations

from gnnbench.core.measurement import Measurement
from gnnbench.core.stability import SPREAD_LIMIT
from gnnbench.text import printable


__all__ = ["process_line", "spread_summary", "unit"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def unit(config) -> str:
    """An inference run times forward passes where a training run times epochs (Note [inference mode])."""
    return "pass" if config.mode == "inference" else "epoch"


def process_line(row: dict, index: int, total: int, unit: str = "epoch") -> str:
    """One process's figure: its median and IQR with the noise mark, or its status and error; where it is stored."""
    head = f"process {index + 1}/{total}: "
    stored = f" (stored as run {row['id']})" if row.get("id") is not None else ""
    if row.get("status") != "ok":
        return f"{head}{row.get('status')}: {printable(row.get('error'))}{stored}"
    m = Measurement.from_row(row)
    return f"{head}{unit} {_ms(m.median)} ms median, IQR {_ms(m.iqr)} ms {m.warning}".rstrip() + stored


def spread_summary(config, spread, unit: str = "epoch") -> str:
    """The configuration's figure over processes: the median of process medians, their range, and their
    spread (stdev / mean) flagged past :data:`~gnnbench.core.stability.SPREAD_LIMIT` (Note [stability
    thresholds])."""
    what = f"{config.system} {config.model} on {config.dataset}"
    ok = len(spread.medians)
    if not ok:
        return f"{what}: none of {spread.processes} processes succeeded"
    failed = f" ({spread.processes - ok} of {spread.processes} processes did not succeed)" if ok < spread.processes \
        else ""
    text = (f"{what}: {unit} {_ms(spread.median)} ms median of {ok} process median{'s' if ok > 1 else ''}{failed}, "
            f"min-max {_ms(spread.low)}-{_ms(spread.high)} ms, ")
    if spread.spread is None:
        return text + "spread between processes needs two that succeeded"
    flag = f" (! unstable: above {SPREAD_LIMIT:.0%})" if spread.unstable else ""
    return text + f"spread {spread.spread:.1%} (stdev/mean of process medians){flag}"
