"""Note [DGL import shim]: DGL 2.1.0 imports under torch 2.13 without writing into $HOME."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

if importlib.util.find_spec("dgl") is None:
    pytest.skip("DGL is not installed (pip install dgl==2.1.0 pandas)", allow_module_level=True)


def test_shim_imports_dgl_without_notice_or_config(tmp_path):
    env = dict(os.environ, DGLDEFAULTDIR=str(tmp_path), HOME=str(tmp_path))
    env.pop("DGLBACKEND", None)
    code = ("import sys, threading; from gnnbench.peers.dgl_shim import dgl; import dgl.nn, dgl.ops; "
            "print(dgl.__version__, dgl.backend.backend_name, 'outdated' in sys.modules, threading.active_count())")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # Note [ogb's version check]: dgl.data's import of OGB starts no thread asking PyPI
    assert proc.stdout.split() == ["2.1.0", "pytorch", "False", "1"]
    assert "backend not selected" not in proc.stderr
    assert not (tmp_path / "config.json").exists()


def test_graphbolt_stub_explains_itself():
    from gnnbench.peers.dgl_shim import GRAPHBOLT_STUB

    assert sys.modules["dgl.graphbolt"] is GRAPHBOLT_STUB
    with pytest.raises(AttributeError, match="gnnbench replaces dgl.graphbolt with a stub"):
        GRAPHBOLT_STUB.FusedCSCSamplingGraph
