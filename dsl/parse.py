"""Parse a system's ``.gnn`` text into a checked :class:`~gnnbench.dsl.spec.SystemSpec`.

:mod:`.syntax` reads the text (grammar and syntax errors: callers see
:class:`~gnnbench.dsl.spec.SpecError` only); this module takes the standard
kernels its ``provides`` line names from the system API (:mod:`.system_api`),
applies ``floats``, and checks the whole (:mod:`.check`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .check import check_spec
from .spec import BLOCK_SUPPORT, KernelSpec, Location, OperatorSpec, SpecError, SystemSpec
from .syntax import parse_declarations, read_spec_text
from .system_api import standard_kernels, system_api

__all__ = ["parse_spec", "load_spec"]


def _standard_kernels(fields: dict, path: str, text: str) -> tuple[KernelSpec, ...]:
    """The kernels ``provides`` takes from the system API, with ``floats`` applied."""
    blocks, reason, blocks_at = fields.pop("blocks", ("yes", "", None))
    if blocks not in BLOCK_SUPPORT or (blocks != "yes") != bool(reason):
        raise SpecError(f"`blocks {blocks}{' ...' if reason else ''}`: write `blocks yes`, `blocks no \"why\"` or "
                        f"`blocks unverified \"why\"` (whether the kernels take sampled blocks, Note [blocks])",
                        blocks_at, _caret(text, blocks_at))
    fields["blocks"], fields["blocks_reason"] = blocks, reason
    provides, where = fields.pop("provides", ((), None))
    floats, floats_at = fields.pop("floats", (None, None))
    fields["provides"], fields["floats"] = provides, floats
    if floats is not None and floats not in ("f32", "f64"):
        raise SpecError(f"`floats {floats}`: a system's floats are f32 or f64 (did it mean `floats f32`?)", floats_at,
                        _caret(text, floats_at))
    return standard_kernels(provides, floats, where, text)


def _caret(text: str, location: Location | None) -> str:
    lines = text.splitlines()
    if location is None or not 0 < location.line <= len(lines):
        return ""
    return f"{lines[location.line - 1]}\n{' ' * max(location.column - 1, 0)}^"


def parse_spec(text: str, path: str = "<string>", check: bool = True) -> SystemSpec:
    """Parse (and by default check) a system's spec text. Raises :class:`SpecError` only."""
    (kind, fields, decls), text = parse_declarations(text, path)
    if kind == "api":
        raise SpecError("this file declares the system API (`api ...`); a system spec starts with "
                        "`system <name> <version>`", fields["location"], _caret(text, fields["location"]))
    operators = [d for d in decls if isinstance(d, OperatorSpec)]
    if operators:
        raise SpecError(f"a system spec cannot declare operators (found `operator {operators[0].name}`); the "
                        "operators are the system API's, in gnnbench/api.gnn: write `kernel <name> implements "
                        "<operator>` or `provides <operator>`", operators[0].location, _caret(text, operators[0].location))
    standard = _standard_kernels(fields, path, text)
    own = [d for d in decls if isinstance(d, KernelSpec)]
    floats = fields["floats"]
    if floats:
        own = [_with_floats(k, floats) for k in own]
    # a kernel the system declares replaces the standard kernel of that name (floor: a zero weight gradient)
    replaced = {k.name for k in own}
    standard = tuple(k for k in standard if k.name not in replaced)
    spec = SystemSpec(kernels=(*standard, *own), path=path, **fields)
    if check:
        check_spec(spec, system_api(), text)
    return spec


def _with_floats(k: KernelSpec, floats: str) -> KernelSpec:
    return replace(k, params=tuple(replace(p, dtype=floats) if p.dtype == "float" else p for p in k.params))


def load_spec(path: str | Path, check: bool = True) -> SystemSpec:
    """Read and parse a system's ``.gnn`` file."""
    path = Path(path)
    return parse_spec(read_spec_text(path), str(path), check)
