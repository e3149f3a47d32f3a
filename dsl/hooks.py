"""A spec's hooks (``prepare``, ``configure``, ``report``) checked against its kernels module (Note [hook check]).

Note [hook check]
    A spec names each hook's function in its kernels module. ``gnnbench gen``
    refuses a spec whose hook function is not defined there, or is bound to a
    literal (a number, a string, a list...), and ``gnnbench systems`` lists
    such a system as broken. Both read the module's source with :mod:`ast`
    and import nothing, so listing stays fast and a module's import-time work
    never runs; a module they cannot read that way (a compiled one, a
    ``from x import *``, a module ``__getattr__``) passes, and
    :meth:`~gnnbench.runtime.glue.SystemGlue.hook` checks again when the
    hook is called: a name that is missing or not callable then is one line
    naming the system, the hook and the module.
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from gnnbench.places import systems_root

__all__ = ["hook_problem", "hook_error", "find_kernels_module"]

_LITERALS = {ast.Constant: "a constant", ast.JoinedStr: "a constant", ast.List: "a list", ast.Tuple: "a tuple",
             ast.Dict: "a dict", ast.Set: "a set", ast.ListComp: "a list", ast.DictComp: "a dict",
             ast.SetComp: "a set"}


def find_kernels_module(module: str, folder: Path) -> tuple[bool, Path | None]:
    """Whether kernels module ``module`` of the system in ``folder`` exists, and its ``.py`` file, without importing it.

    A module in gnnbench's ``systems/`` (``gnnbench.systems.<name>.kernels``) or
    in the system's own folder (``<name>.kernels``, Note [external systems] in
    ``dsl/gen.py``) is looked for as a file: that folder's parent joins
    ``sys.path`` only when the system is loaded, and importing a package's
    ``__init__`` here would make listing slow. Any other module is looked up.
    """
    parts = module.split(".")
    if parts[:2] == ["gnnbench", "systems"] and len(parts) > 2:
        base = systems_root().joinpath(*parts[2:])
    elif parts[0] == folder.name:
        base = folder.parent.joinpath(*parts)
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False, None
        origin = spec.origin if spec is not None else None
        return spec is not None, Path(origin) if origin and origin.endswith(".py") else None
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return True, path
    return False, None


def _top_level(body: list[ast.stmt], names: dict[str, str | None]) -> bool:
    """Record each module-level name: None when it may be callable, else what literal it is; False if unknowable."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return False
                names[alias.asname or alias.name.split(".")[0]] = None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = _LITERALS.get(type(node.value))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                      *(h.body for h in getattr(node, "handlers", []))]
            if not all(_top_level(block, names) for block in blocks):
                return False
    return "__getattr__" not in names


def hook_problem(spec, spec_path: Path) -> str | None:
    """Why a hook the spec names cannot be called (Note [hook check]), or None when it can or cannot be told."""
    if not spec.hooks:
        return None
    module = spec.kernels_module
    _, source = find_kernels_module(module, Path(spec_path).resolve().parent)
    if source is None:
        return None
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None  # importing it says what is wrong, with its own message
    names: dict[str, str | None] = {}
    if not _top_level(tree.body, names):
        return None
    for hook, fn in spec.hooks:
        if fn not in names:
            return f"its {hook} hook '{fn}' is not defined in kernels module '{module}' ({source})"
        if names[fn] is not None:
            return f"its {hook} hook '{fn}' in kernels module '{module}' is not callable ({names[fn]}) ({source})"
    return None


def hook_error(system: str, hook: str, fn: str, module: str, value: object) -> str:
    """The one line for a hook found missing or not callable when it is called (Note [hook check])."""
    what = "is not defined" if value is _MISSING else f"is not callable (it is {value!r:.40})"
    return (f"system '{system}': its {hook} hook '{fn}' in kernels module '{module}' {what}; fix the module or the "
            f"spec's `{hook}` line")


_MISSING = object()
