"""The system API as the compiler and the runtime see it: ``gnnbench/api.gnn``, parsed once.

A system's ``provides`` line names standard kernels or operators; this module
expands it into the standard kernels' declarations (their backward kernels
included) that the system then has. Generated glue names its kernels, and the
runtime looks their declarations up here: nothing re-reads spec text per call.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from gnnbench.places import api_spec_path

from .check import did_you_mean
from .spec import ApiSpec, KernelSpec, Location, SpecError
from .syntax import parse_api

__all__ = ["system_api", "standard_kernels", "standard_kernel"]



@lru_cache(maxsize=None)
def system_api() -> ApiSpec:
    """The parsed, checked system API (cached: parsed once per process).

    Its locations read ``gnnbench/api.gnn:LINE:COL`` wherever the package lives.
    """
    path = api_spec_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError(f"cannot read the system API: {err}", Location(str(path), 0, 0)) from None
    return parse_api(text, "gnnbench/api.gnn")


@lru_cache(maxsize=None)
def standard_kernel(name: str, floats: str | None = None) -> KernelSpec:
    """Standard kernel ``name`` of the API, its ``float`` arguments made ``floats`` when given."""
    k = system_api().kernel(name)
    if k is None:
        raise KeyError(name)
    if floats:
        k = replace(k, params=tuple(replace(p, dtype=floats) if p.dtype == "float" else p for p in k.params))
    return k


def standard_kernels(provides: tuple[str, ...], floats: str | None = None, where: Location | None = None,
                     text: str = "") -> tuple[KernelSpec, ...]:
    """The standard kernels a ``provides`` line names, with every kernel their backward rules call.

    A name is a standard kernel (``spmm_sum``) or an operator (``spmm``: all
    its standard kernels). Raises :class:`SpecError` at ``where`` for any
    other name, suggesting the nearest.
    """
    api = system_api()
    wanted: list[str] = []
    for name in provides:
        if api.kernel(name) is not None:
            wanted.append(name)
        elif api.operator(name):
            wanted += [k.name for k in api.kernels if k.implements == name]
        else:
            choices = sorted({o.name for o in api.operators} | {k.name for k in api.kernels})
            context = ""
            lines = text.splitlines()
            if where is not None and 0 < where.line <= len(lines):
                context = f"{lines[where.line - 1]}\n{' ' * max(where.column - 1, 0)}^"
            raise SpecError(f"`provides {name}`: the system API has no standard kernel or operator '{name}'"
                            f"{did_you_mean(name, choices)}; choose from: {', '.join(choices)}", where, context)
    seen: list[str] = []
    while wanted:
        name = wanted.pop(0)
        if name in seen:
            continue
        seen.append(name)
        wanted += [g.call.kernel for g in api.kernel(name).grads]
    order = [k.name for k in api.kernels]
    return tuple(standard_kernel(n, floats) for n in sorted(seen, key=order.index))
