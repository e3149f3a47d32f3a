"""docs/walkthrough.md, executed: every `bash` block's commands and every `# file:` block, in order.

The page is split into fenced blocks. A ``python`` block whose first line is
``# file: PATH`` is written to PATH; a ``bash`` block runs line by line
(``export K=V`` sets the environment, ``gnnbench ...`` calls the CLI in
this process, ``$PWD`` is the test's folder); ``text`` blocks are shown only.
The whole walkthrough trains and verifies, so it waits for ``FULL_TEST=1``;
the fast test runs it up to `gen` and checks the SciPy kernels' SpMM cases.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from gnnbench.cli import main as cli

WALKTHROUGH = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


@pytest.fixture(autouse=True)
def _fresh_import_state(monkeypatch):
    """Each walkthrough starts as a newcomer's session: its system is not yet importable from an earlier one."""
    import sys

    from gnnbench.runtime.registry import forget_systems

    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m == "scipy_csr" or m.startswith("scipy_csr.")]:
        del sys.modules[name]
    forget_systems()


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(WALKTHROUGH.read_text(encoding="utf-8"))]


def perform(folder: Path, monkeypatch, capsys, stop_after: str | None = None) -> dict[str, str]:
    """Run the page's steps in ``folder``; returns each command's printed output."""
    monkeypatch.chdir(folder)
    outputs: dict[str, str] = {}
    for language, body in blocks():
        if language == "python" and body.startswith("# file: "):
            path = folder / body.splitlines()[0].removeprefix("# file: ").strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            continue
        if language != "bash":
            continue
        for line in body.splitlines():
            line = line.replace("$PWD", str(folder))
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").partition("=")
                monkeypatch.setenv(key, value)
                continue
            words = shlex.split(line)
            assert words[0] == "gnnbench", f"the walkthrough runs gnnbench commands only: {line}"
            status = cli(words[1:])
            out = capsys.readouterr()
            assert status == 0, f"`{line}` exited {status}:\n{out.out}\n{out.err}"
            outputs[line] = out.out
            if stop_after and line.startswith(stop_after):
                return outputs
    return outputs


def test_the_gat_step_borrows_from_reference():
    steps = [body for language, body in blocks() if language == "bash" and "--fallback reference" in body]
    assert steps and "--model gat" in steps[0], "step 4 runs `run --model gat --fallback reference`"


def test_walkthrough_up_to_gen_and_its_spmm_kernels(tmp_path, monkeypatch, capsys):
    outputs = perform(tmp_path, monkeypatch, capsys, stop_after="gnnbench gen")
    spec = (tmp_path / "my_systems" / "scipy_csr" / "scipy_csr.gnn").read_text()
    assert len(spec.splitlines()) <= 15 and "provides spmm_sum" in spec
    assert "glue up to date" in list(outputs.values())[-1]
    assert cli(["verify", "--system", "scipy_csr", "--operator", "spmm", "--fast", "--no-e2e", "--no-store"]) == 0


@pytest.mark.slow
def test_walkthrough_end_to_end(tmp_path, monkeypatch, capsys):
    outputs = perform(tmp_path, monkeypatch, capsys)
    gat = outputs["gnnbench run --system scipy_csr --model gat --fallback reference --epochs 30"]
    assert "fallback   edge_softmax, sddmm(op=add) ran on reference" in gat
    table = outputs["gnnbench compare --format markdown --baseline reference --model gcn"]
    assert "scipy_csr" in table and "reference" in table and table.lstrip().startswith("|")
