"""Tests of gnnbench.cli._run_progress: a run's events as a transient bar on a terminal, nothing elsewhere."""
from __future__ import annotations

import io
import re

from gnnbench.cli._run_progress import RunBar, phase_text, run_progress
from gnnbench.progress import progress
from gnnbench.run.events import RunEvent

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_phases_in_words():
    assert [phase_text(e) for e in (RunEvent("prepare"), RunEvent("tune", text="budget 1.4 s"),
                                    RunEvent("epoch", 2, 200, 5), RunEvent("epoch", 6, 200, 5),
                                    RunEvent("log", text="x"))] == [
        "preparing", "tuning on first use (budget 1.4 s)", "warm-up 2/5", "epoch 1/195", None]


def test_off_a_terminal_there_is_no_display():
    out = io.StringIO()
    with run_progress("isplib gcn sbm", stream=out) as display:
        assert display is None
    assert out.getvalue() == ""


def test_on_a_terminal_the_bar_follows_the_epochs_and_tuner_lines_stay():
    out = _Terminal()
    with run_progress("isplib gcn sbm", stream=out) as display:
        for event in (RunEvent("prepare"), RunEvent("epoch", 1, 4, 1), RunEvent("tune", text="budget 1.0 s"),
                      RunEvent("log", text="isplib: tuning 1/1 \x1b[2Jkey"), RunEvent("epoch", 2, 4, 1)):
            display(event)
        assert display.bar.done == 2 and display.bar.total == 4
        assert display.bar.description == "isplib gcn sbm: epoch 1/3"
    text = _plain(out.getvalue())
    assert "isplib: tuning 1/1 \\x1b[2Jkey" in text  # a system's text cannot drive the terminal


def test_in_a_sweep_the_bar_keeps_counting_runs():
    with progress(3, "sweep", stream=_Terminal()) as bar:
        RunBar(bar, "pyg gcn cora", count=False)(RunEvent("epoch", 7, 200, 5))
        assert bar.done == 0 and bar.description == "pyg gcn cora: epoch 2/195"


def test_gnnbench_run_off_a_terminal_prints_nothing_extra(capsys):
    from gnnbench.cli import main

    assert main(["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "3", "--warmup", "1",
                 "--allocator", "system", "--no-store", "--in-process"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("reference 1.0 / gcn on sbm:")
