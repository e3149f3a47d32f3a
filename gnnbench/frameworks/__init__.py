"""Framework adapters: the frontend op set and the kernel-call runtime per framework."""
from __future__ import annotations

import importlib
import importlib.util

from ..errors import UnavailableError, UserError

__all__ = ["FRAMEWORKS", "get_frontend", "framework_available"]

#: framework name -> (module, class, import name of the package it needs, install hint)
FRAMEWORKS = {
    "torch": ("gnnbench.frameworks.torch_frontend", "TorchFrontend", "torch", "pip install torch==2.13.0"),
    "tensorflow": ("gnnbench.frameworks.tf_frontend", "TensorFlowFrontend", "tensorflow",
                   "pip install 'gnnbench[tf]'"),
}


def framework_available(name: str) -> str | None:
    """``None`` if the framework can be used here, else why not."""
    if name not in FRAMEWORKS:
        return f"unknown framework '{name}'; choose one of: {', '.join(FRAMEWORKS)}"
    _, _, package, hint = FRAMEWORKS[name]
    if importlib.util.find_spec(package) is None:
        return f"framework '{name}' is not installed ({hint})"
    return None


def get_frontend(name: str, device: str = "cpu", dtype: str = "float32"):
    if name not in FRAMEWORKS:
        raise UserError(f"unknown framework '{name}'; choose one of: {', '.join(FRAMEWORKS)}")
    reason = framework_available(name)
    if reason:
        raise UnavailableError(reason)
    module, cls, _, _ = FRAMEWORKS[name]
    try:
        frontend_cls = getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as err:
        raise UnavailableError(f"framework '{name}' has no frontend in this gnnbench ({err})") from None
    return frontend_cls(device=device, dtype=dtype)
