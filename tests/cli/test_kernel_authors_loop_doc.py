"""docs/kernel-authors-loop.md stays true: every gnnbench command it shows parses with today's flags.

The loop itself (history, compare --by build, regressions, report over a three-commit repository)
runs in tests/run/test_history.py and tests/results/test_report_browser.py.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from gnnbench.cli import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "kernel-authors-loop.md"


def test_every_command_in_the_doc_parses():
    lines = re.findall(r"^\$ gnnbench ([^;\n]+)", DOC.read_text(encoding="utf-8"), flags=re.M)
    commands = [shlex.split(line.split("#", 1)[0]) for line in lines]
    assert {c[0] for c in commands} >= {"new-system", "verify", "run", "history", "compare", "regressions", "report"}
    parser = build_parser()
    for argv in commands:
        parser.parse_args(argv)  # exits (SystemExit) on an unknown flag
