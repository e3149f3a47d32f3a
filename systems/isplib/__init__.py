"""isplib: auto-tuned CPU SpMM kernels in numba, after iSpLib (Hoque Anik and Azad, 2024).

* :mod:`.kernels` -- the standard kernel set (spmm_sum ... edge_softmax_backward) and the fused typed
  aggregation (:mod:`.typed_numba`);
* :func:`prepare` / :func:`describe_tuning` -- per-graph state built before training;
* :func:`tune` -- time the SpMM variants on a graph and cache the winners;
* :func:`patch_pyg` / :func:`unpatch_pyg` / :func:`pyg_patched` -- make PyG's
  GCNConv, SAGEConv and GINConv use isplib's SpMM on sparse adjacencies::

      from gnnbench.systems import isplib
      isplib.patch_pyg()

Importing this package is cheap: numba is imported, and kernels compiled or
loaded from the disk cache, only when first used (:func:`warm_up` does it
ahead of time).
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["prepare", "describe_tuning", "IsplibGraph", "warm_up", "tune", "TuneResult", "Variant",
           "patch_pyg", "unpatch_pyg", "pyg_patched", "kernels"]

_LAZY = {
    "prepare": "prepared", "describe_tuning": "prepared", "IsplibGraph": "prepared",
    "warm_up": "kernels", "tune": "tuning", "TuneResult": "tuning", "Variant": "variant",
    "patch_pyg": "pyg_patch", "unpatch_pyg": "pyg_patch", "pyg_patched": "pyg_patch",
}


def __getattr__(name: str) -> Any:
    if name == "kernels":
        return importlib.import_module(f"{__name__}.kernels")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
