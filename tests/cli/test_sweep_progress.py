"""The sweep's progress display (gnnbench.cli.sweep._SweepProgress) on a terminal and off one."""
from __future__ import annotations

import io
import re
from types import SimpleNamespace

from gnnbench.cli.sweep import _SweepProgress
from gnnbench.progress import progress
from gnnbench.run.sweep import SweepEvent


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _task(name: str):
    return SimpleNamespace(describe=lambda: f"{name} gcn karate torch seed=0")


_EVENTS = [SweepEvent("start", _task("a"), None, 0, 3, 0.0, None),
           SweepEvent("finish", _task("a"), {"status": "ok", "epoch_time_median_s": 0.002}, 1, 3, 1.0, 2.0),
           SweepEvent("meanwhile", _task("b"), None, 2, 3, 1.0, 1.0),
           SweepEvent("start", _task("c"), None, 2, 3, 1.0, 1.0),
           SweepEvent("finish", _task("c"), {"status": "crashed", "error": "worker died\x1b[31m"}, 3, 3, 2.0, 0.0)]


def test_off_a_terminal_each_event_is_one_plain_line():
    out = io.StringIO()
    with progress(None, "sweep", stream=out, plain_steps=True) as bar:
        for event in _EVENTS:
            _SweepProgress(bar)(event)
    assert out.getvalue() == (
        "[0/3] running a gcn karate torch seed=0 (time left unknown yet)\n"
        "[1/3] ok a gcn karate torch seed=0: 2.00 ms/epoch (2s left)\n"
        "[2/3] already stored by another sweep: b gcn karate torch seed=0\n"
        "[2/3] running c gcn karate torch seed=0 (1s left)\n"
        "[3/3] crashed c gcn karate torch seed=0: worker died\\x1b[31m (0s left)\n")


def test_on_a_terminal_failures_and_other_sweeps_stay_above_the_bar():
    out = _Terminal()
    with progress(None, "sweep", stream=out, plain_steps=True) as bar:
        for event in _EVENTS:
            _SweepProgress(bar)(event)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert bar.live and bar.done == 3 and bar.total == 3 and "3/3" in text
    assert "[3/3] crashed c gcn karate torch seed=0: worker died\\x1b[31m" in text
    assert "[2/3] already stored by another sweep: b gcn karate torch seed=0" in text
    assert "ok a gcn" not in text  # a success is not kept on screen
