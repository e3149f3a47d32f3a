"""gnnbench/__main__.py: ``python -m gnnbench`` is the ``gnnbench`` command, exit status included."""
from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_cli_and_passes_its_exit_status():
    help_run = subprocess.run([sys.executable, "-m", "gnnbench", "--help"], capture_output=True, text=True,
                              timeout=120)
    assert help_run.returncode == 0 and "sweep" in help_run.stdout
    bad = subprocess.run([sys.executable, "-m", "gnnbench", "run", "--system", "nosuch", "--model", "gcn"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown system 'nosuch'" in bad.stderr
