"""Tests of gnnbench.progress: plain lines off a terminal, a rich bar on one."""
from __future__ import annotations

import io

from gnnbench.progress import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_only_log_lines_are_written():
    out = io.StringIO()
    with progress(3, "sweep", stream=out) as bar:
        bar.advance(description="a")
        bar.log("failed b: boom")
        bar.advance()
    assert not bar.live and bar.done == 2 and out.getvalue() == "failed b: boom\n"


def test_plain_steps_write_one_line_each():
    out = io.StringIO()
    with progress(2, "run", stream=out, plain_steps=True) as bar:
        bar.advance(description="gcn on cora")
        bar.advance(description="gat on cora")
    assert out.getvalue() == "[1/2] gcn on cora\n[2/2] gat on cora\n"


def test_on_a_terminal_rich_draws_a_bar():
    out = _Terminal()
    with progress(2, "epochs", stream=out) as bar:
        bar.advance()
        bar.log("[not markup]")
        bar.advance()
    text = out.getvalue()
    assert bar.live and "2/2" in text and "[not markup]" in text


def test_update_sets_the_count_and_total_without_a_step_line():
    out = io.StringIO()
    with progress(None, "sweep", stream=out, plain_steps=True) as bar:
        bar.update(2, total=5)
        bar.advance(description="c")
    assert (bar.done, bar.total) == (3, 5) and out.getvalue() == "[3/5] c\n"
