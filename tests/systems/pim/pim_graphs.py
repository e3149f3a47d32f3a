"""Shared fixtures of the pim tests: awkward graphs, dense references, edited machine files."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from gnnbench.runtime.graph import Graph
from gnnbench.systems.pim.machine import DEFAULT_MACHINE_PATH, load_machine


def tricky_graph(n: int = 40, seed: int = 0, index_dtype=np.int64) -> Graph:
    """Random edges plus a hub (node 0, both directions), duplicates, self loops, isolated nodes 35+."""
    rng = np.random.default_rng(seed)
    live = min(n, 35)
    src = list(rng.integers(1, live, 80))
    dst = list(rng.integers(1, live, 80))
    src += list(range(1, live)) + [0] * (live - 1)  # hub in and out
    dst += [0] * (live - 1) + list(range(1, live))
    src += [5, 5, 7, 3, 4]  # duplicates (5->6 twice more) and self loops 3, 4
    dst += [6, 6, 8, 3, 4]
    return Graph.from_edges(np.array(src), np.array(dst), n, index_dtype)


def hub_graph(n: int, hub_degree: int) -> Graph:
    """Node 0 receives from ``hub_degree`` sources (with repeats when ``hub_degree >= n``)."""
    src = np.arange(hub_degree) % (n - 1) + 1
    return Graph.from_edges(src, np.zeros(hub_degree, dtype=np.int64), n)


def dense(view, weight: np.ndarray | None = None, head: int = 0) -> np.ndarray:
    """``A[row, col] = sum of w[eid, head]`` over the view's stored positions, float64."""
    a = np.zeros((view.num_rows, view.num_cols))
    rows = np.repeat(np.arange(view.num_rows), np.diff(np.asarray(view.indptr, dtype=np.int64)))
    eid = np.arange(view.num_edges) if view.edge_ids is None else np.asarray(view.edge_ids)
    w = np.ones(view.num_edges) if weight is None else np.asarray(weight, dtype=np.float64)[eid, head]
    np.add.at(a, (rows, np.asarray(view.indices)), w)
    return a


def reference_spmm(view, x: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """``out[:, h, :] = A_w[h] @ x[:, h, :]`` in float64 (weight ``[E, 1]`` broadcasts over heads)."""
    n, heads, _ = x.shape
    out = np.zeros((view.num_rows, heads, x.shape[2]))
    for h in range(heads):
        wh = 0 if weight is None or weight.shape[1] == 1 else h
        out[:, h, :] = dense(view, weight, wh) @ np.asarray(x[:, h, :], dtype=np.float64)
    return out


def machine_file(tmp_path: Path, name: str = "machine.toml", **changes) -> Path:
    """A copy of the default machine file with ``key = value`` lines replaced (TOML literals)."""
    text = DEFAULT_MACHINE_PATH.read_text()
    for key, value in changes.items():
        if key == "dpus_per_rank":
            text = text.replace("# dpus_per_rank = [...]", f"dpus_per_rank = {value}")
            continue
        # the first match is the parameter; [citations] comes last
        text, count = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text, count=1)
        assert count == 1, key
    path = tmp_path / name
    path.write_text(text)
    return path


def small_machine(tmp_path: Path, **changes):
    """Load :func:`machine_file` (host merge priced from the file's tables, so results are exact)."""
    return load_machine(machine_file(tmp_path, **{"merge": '"table"', **changes}))
