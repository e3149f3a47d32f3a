"""docs/out-of-tree.md stays true: its commands parse, its example package matches it, its walkthrough runs."""
from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from gnnbench.cli import build_parser
from gnnbench.cli import main as cli
from tests.out_of_tree import EXAMPLE, installed_example

DOC = Path(__file__).resolve().parents[2] / "docs" / "out-of-tree.md"


def _commands(section: str | None = None) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    if section is not None:
        text = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    lines = re.findall(r"^\$ (?:\S+=\S+ )?gnnbench (.+)$", text, flags=re.M)
    return [shlex.split(line) for line in lines]


def test_every_command_in_the_doc_parses():
    commands = _commands()
    assert len(commands) >= 8
    parser = build_parser()
    for argv in commands:
        parser.parse_args([a.replace("~", "/tmp") for a in argv])  # exits 2 on a flag that no longer exists


def test_the_example_package_declares_the_entry_point_the_doc_shows():
    import tomllib

    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["gnnbench.systems"] == {"extsp": "extsp"}
    assert (EXAMPLE / "extsp" / "extsp.gnn").is_file() and (EXAMPLE / "extsp" / "kernels.py").is_file()
    assert 'extsp = "extsp"' in DOC.read_text()


@pytest.mark.slow
def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch, capsys):
    site = tmp_path / "site"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))  # isolated workers see the package
    monkeypatch.setenv("GNNBENCH_RESULTS", str(tmp_path / "walk.sqlite"))
    with installed_example(site):
        assert cli(["gen", "extsp"]) == 0
        codes = [cli(argv) for argv in _commands("The walkthrough")]
    out = capsys.readouterr().out
    assert codes == [0, 0, 0, 1, 0, 0]   # the GAT run without --fallback is skipped
    assert "extsp gat on karate: skipped: system 'extsp' does not implement sddmm(op=add)" in out
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("|")]
    assert ["f", "karate", "gat", "torch", "extsp", "passed"] in [r[:6] for r in rows]
