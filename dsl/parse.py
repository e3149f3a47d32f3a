"""Parse ``.gnn`` text into a checked :class:`~gnnbench.dsl.spec.SystemSpec`.

Syntax errors carry ``file:line:col``, the offending line with a caret
(``UnexpectedInput.get_context``) and, for known mistakes, a label chosen by
``match_examples`` from :data:`_KNOWN_MISTAKES`.
"""
from __future__ import annotations

import ast
from pathlib import Path

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedInput, v_args
from lark.exceptions import VisitError

from .check import check_spec
from .spec import Attr, Call, CallArg, GradRule, KernelSpec, Location, Param, SpecError, SystemSpec

__all__ = ["parse_spec", "load_spec", "grammar"]

_parser: Lark | None = None


def grammar(strict: bool = False) -> Lark:
    """The LALR parser of ``gnn.lark`` (``strict=True`` also rejects terminal collisions)."""
    global _parser
    if strict:
        return Lark.open("gnn.lark", rel_to=__file__, parser="lalr", propagate_positions=True, strict=True)
    if _parser is None:
        _parser = Lark.open("gnn.lark", rel_to=__file__, parser="lalr", propagate_positions=True)
    return _parser


# A table of known mistakes, each with examples that fail the same way (Lark's
# match_examples picks the label whose examples fail in the same parser state).
_KERNEL_HEADS = ("kernel k\n", "kernel k implements spmm\n", "kernel k implements sddmm(op=dot)\n")
_KERNEL_LEADS = ("", "  attr a in {b}\n", "  input y: float[N]\n")


def _in_kernel(*bodies: str) -> list[str]:
    """Each mistaken kernel line in every parser state it can occur in (after each head and lead)."""
    return [f"system s 1\n  kernels m\n{head}{lead}{body}"
            for body in bodies for head in _KERNEL_HEADS for lead in _KERNEL_LEADS]


_KNOWN_MISTAKES = {
    "a spec starts with `system NAME VERSION`, e.g. `system mysys 0.1`": [
        "kernel k\n", "system\n", "system s\n", "kernels m\n", "  kernels m\n",
    ],
    "a tensor argument reads `ROLE NAME: DTYPE[SHAPE]`, e.g. `input x: float[N, F]`": _in_kernel(
        "  input x float[N]\n", "  input x:\n", "  output : float[N]\n", "  input x: float N\n"),
    "a kernel body holds `attr`, `input`, `output`, `saves`, `workspace` and `grad` lines": _in_kernel(
        "  inputs x: float[N]\n", "  returns x\n"),
    "an attribute reads `attr NAME in {a, b}` or `attr NAME: float`": _in_kernel(
        "  attr reduce {sum}\n", "  attr reduce in sum\n"),
    "a backward rule reads `grad x = kernel(args) [transposed]`": _in_kernel(
        "  grad x kernel(y)\n", "  grad x = kernel\n", "  grad x = kernel(y) backwards\n"),
    "a shape reads `[DIM, DIM, ...]` where a DIM is a symbol, an integer or a product like H*D": _in_kernel(
        "  input x: float[N,, F]\n", "  input x: float[N F]\n"),
}


class _ToSpec(Transformer):
    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def _loc(self, meta) -> Location:
        return Location(self.path, getattr(meta, "line", 0), getattr(meta, "column", 0))

    # lexemes
    def names(self, items):
        return tuple(str(t) for t in items)

    def dotted(self, items):
        return ".".join(str(t) for t in items)

    def dim(self, items):
        return tuple(int(t) if t.type == "INT" else str(t) for t in items)

    def shape(self, items):
        return tuple(d for d in items if d is not None)

    def zero(self, _):
        return ("zero", True)

    def indexes(self, items):
        return ("indexes", str(items[0]))

    # system items: (key, value) pairs
    def summary(self, items):
        return ("summary", ast.literal_eval(items[0]))

    def hint(self, items):
        return ("hint", ast.literal_eval(items[0]))

    def devices(self, items):
        return ("devices", items[0])

    def requires(self, items):
        return ("requires", items[0])

    def frameworks(self, items):
        return ("frameworks", items[0])

    def formats(self, items):
        return ("formats", items[0])

    def arrays(self, items):
        return ("arrays", str(items[0]))

    def kernels_module(self, items):
        return ("kernels_module", items[0])

    def hook(self, items):
        return ("hook", (str(items[0]), str(items[1])))

    @v_args(meta=True)
    def system(self, meta, items):
        name, version, *rest = items
        fields: dict = {"hooks": []}
        seen: set[str] = set()
        for key, value in rest:
            if key == "hook":
                fields["hooks"].append(value)
                continue
            if key in seen:
                raise SpecError(f"system line '{key}' is given twice", self._loc(meta))
            seen.add(key)
            fields[key] = value
        fields["hooks"] = tuple(fields["hooks"])
        if "kernels_module" not in fields:
            raise SpecError("the system does not say where its kernels live; add a line like "
                            f"`kernels gnnbench.systems.{name}.kernels`", self._loc(meta))
        return ("system", dict(name=str(name), version=str(version), location=self._loc(meta), **fields))

    # kernel items
    @v_args(meta=True)
    def attr_set(self, meta, items):
        return Attr(str(items[0]), values=items[1], location=self._loc(meta))

    @v_args(meta=True)
    def attr_typed(self, meta, items):
        return Attr(str(items[0]), type=str(items[1]), location=self._loc(meta))

    @v_args(meta=True)
    def param(self, meta, items):
        role, name, dtype, *rest = items
        kw: dict = {"shape": None}
        for item in rest:
            if isinstance(item, tuple) and item and isinstance(item[0], str) and item[0] in ("zero", "indexes"):
                kw[item[0]] = item[1]
            elif isinstance(item, Token) and item.type == "OPTIONAL":
                kw["optional"] = True
            else:
                kw["shape"] = item
        return Param(str(role), str(name), str(dtype), location=self._loc(meta), **kw)

    def arg_ref(self, items):
        return CallArg(str(items[0]))

    def arg_attr(self, items):
        return CallArg(str(items[0]), str(items[1]))

    @v_args(meta=True)
    def call(self, meta, items):
        name, *rest = items
        transposed = bool(rest and isinstance(rest[-1], Token) and rest[-1].type == "TRANSPOSED")
        args = tuple(a for a in rest if isinstance(a, CallArg))
        return Call(str(name), args, transposed, self._loc(meta))

    @v_args(meta=True)
    def grad(self, meta, items):
        return GradRule(items[0], items[1], self._loc(meta))

    def pin(self, items):
        return (str(items[0]), str(items[1]))

    def pins(self, items):
        return ("pins", tuple(items))

    @v_args(meta=True)
    def kernel(self, meta, items):
        name = str(items[0])
        implements, pinned = None, ()
        body = items[1:]
        if body and isinstance(body[0], Token):
            implements, body = str(body[0]), body[1:]
        if body and isinstance(body[0], tuple) and body[0][0] == "pins":
            pinned, body = body[0][1], body[1:]
        return KernelSpec(
            name, implements, pinned=pinned,
            attrs=tuple(i for i in body if isinstance(i, Attr)),
            params=tuple(i for i in body if isinstance(i, Param)),
            grads=tuple(i for i in body if isinstance(i, GradRule)),
            location=self._loc(meta),
        )

    def start(self, items):
        (_, fields), *kernels = items
        return SystemSpec(kernels=tuple(kernels), path=self.path, **fields)


def _readable(terminal: str) -> str:
    """``COLON`` -> ``':'``; named terminals (NAME, INT) stay as they are."""
    try:
        pattern = grammar().get_terminal(terminal).pattern
    except KeyError:
        return terminal
    return repr(pattern.value) if pattern.type == "str" else terminal


def _syntax_error(err: UnexpectedInput, text: str, path: str) -> SpecError:
    label = err.match_examples(grammar().parse, _KNOWN_MISTAKES, use_accepts=True)
    found = getattr(err, "token", None)
    if isinstance(err, UnexpectedCharacters):
        what = f"unexpected character {text[err.pos_in_stream]!r}"
    elif found is not None and getattr(found, "type", "") == "$END":
        what = "unexpected end of file"
    elif found is not None:
        shown = "end of line" if found.type == "_NL" else repr(str(found))
        what = f"unexpected {shown}"
    else:
        what = "syntax error"
    expected = sorted(getattr(err, "accepts", None) or getattr(err, "expected", None) or ())
    expected = [_readable(e) for e in expected if not e.startswith("__")]
    message = what + (f"; {label}" if label else (f"; expected one of: {', '.join(expected)}" if expected else ""))
    context = err.get_context(text).rstrip("\n")
    return SpecError(message, Location(path, err.line, err.column), context)


def parse_spec(text: str, path: str = "<string>", check: bool = True) -> SystemSpec:
    """Parse (and by default check) spec text. Raises :class:`SpecError` only."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = grammar().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, path) from None
    try:
        spec = _ToSpec(path).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, SpecError):
            raise err.orig_exc from None
        raise
    if check:
        check_spec(spec, text)
    return spec


def load_spec(path: str | Path, check: bool = True) -> SystemSpec:
    """Read and parse a ``.gnn`` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read spec: {err}", Location(str(path), 0, 0)) from None
    return parse_spec(text, str(path), check)
