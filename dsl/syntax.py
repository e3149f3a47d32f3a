"""The ``.gnn`` language: its grammar, its syntax errors, and its text turned into spec dataclasses.

Both kinds of ``.gnn`` file are read here: the system API (``gnnbench/api.gnn``,
:func:`parse_api`, which :mod:`.system_api` loads once) and a system's spec,
whose declarations :mod:`.parse` completes with the API's standard kernels. So
this module sits below the system API and :mod:`.parse` above it, and neither
imports back.

Syntax errors carry ``file:line:col``, the offending line with a caret
(``UnexpectedInput.get_context``), a "did you mean" for a misspelt keyword
and, for known mistakes, a label chosen by ``match_examples`` from
:data:`_KNOWN_MISTAKES`. Messages name what was expected in plain words,
never a grammar terminal, and no Lark exception escapes: callers see
:class:`SpecError` only.
"""
from __future__ import annotations

import ast
import math
from dataclasses import replace
from pathlib import Path

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedInput, v_args
from lark.exceptions import LarkError, VisitError

from gnnbench.places import cache_root

from .check import check_api, did_you_mean
from .spec import ROLES, ApiSpec, Attr, Call, CallArg, GradRule, KernelSpec, Location, OperatorSpec, Param, SpecError

__all__ = ["grammar", "parse_declarations", "parse_api", "load_api", "read_spec_text"]

_parser: Lark | None = None


def grammar(strict: bool = False) -> Lark:
    """The LALR parser of ``gnn.lark`` (``strict=True`` also rejects terminal collisions)."""
    global _parser
    if strict:
        return Lark.open("gnn.lark", rel_to=__file__, parser="lalr", propagate_positions=True, strict=True)
    if _parser is None:
        _parser = Lark.open("gnn.lark", rel_to=__file__, parser="lalr", propagate_positions=True,
                            cache=_cache_file())
    return _parser


def _cache_file() -> str | bool:
    """Where Lark keeps the built parser between processes: building it takes about half a second, paid by
    every run's worker otherwise. In gnnbench's own cache folder, never a shared temporary one (Lark's default),
    since the file is unpickled; Lark checks it against the grammar's hash and rebuilds a stale or broken one.
    False (no cache) when the folder cannot be made."""
    import lark

    folder = cache_root() / "lark"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(folder / f"gnn-lark-{lark.__version__}.pickle")


# A table of known mistakes, each with examples that fail the same way (Lark's
# match_examples picks the label whose examples fail in the same parser state).
_KERNEL_HEADS = ("kernel k\n", "kernel k implements spmm\n", "kernel k implements sddmm(op=dot)\n")
_KERNEL_LEADS = ("", "  attr a in {b}\n", "  input y: float[N]\n")


def _in_kernel(*bodies: str) -> list[str]:
    """Each mistaken kernel line in every parser state it can occur in (after each head and lead)."""
    return [f"system s 1\n  kernels m\n{head}{lead}{body}"
            for body in bodies for head in _KERNEL_HEADS for lead in _KERNEL_LEADS]


_KNOWN_MISTAKES = {
    "a spec starts with `system <name> <version>`, e.g. `system mysys 0.1`": [
        "kernel k\n", "system\n", "system s\n", "kernels m\n", "  kernels m\n",
    ],
    "a system line lists names separated by commas, e.g. `frameworks torch, tensorflow`": [
        "system s 1\n  frameworks a:b\n", "system s 1\n  devices a b\n", "system s 1\n  provides a.b\n",
    ],
    "a tensor argument reads `input <name>: <dtype>[<shape>]` (or output, saves, workspace), e.g. `input x: float[N, F]`": _in_kernel(
        "  input x float[N]\n", "  input x:\n", "  output : float[N]\n", "  input x: float N\n"),
    "a kernel body holds `attr`, `input`, `output`, `saves`, `workspace` and `grad` lines": _in_kernel(
        "  inputs x: float[N]\n", "  returns x\n"),
    "an attribute reads `attr <name> in {a, b}` or `attr <name>: float`": _in_kernel(
        "  attr reduce {sum}\n", "  attr reduce in sum\n"),
    "a backward rule reads `grad x = kernel(args) [transposed]`": _in_kernel(
        "  grad x kernel(y)\n", "  grad x = kernel\n", "  grad x = kernel(y) backwards\n"),
    "a shape reads `[N, H*D, 4]`: symbols, integers or products of them, separated by commas": _in_kernel(
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

    @v_args(meta=True)
    def blocks(self, meta, items):
        state, reason = str(items[0]), ast.literal_eval(items[1]) if len(items) > 1 else ""
        return ("blocks", (state, reason, self._loc(meta)))

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
    def provides(self, meta, items):
        return ("provides", (items[0], self._loc(meta)))

    @v_args(meta=True)
    def floats(self, meta, items):
        return ("floats", (str(items[0]), self._loc(meta)))

    @v_args(meta=True)
    def api(self, meta, items):
        name, version, *rest = items
        fields = dict(rest)
        if set(fields) - {"summary"}:
            raise SpecError(f"the system API's header takes only `summary`; found `{sorted(set(fields) - {'summary'})[0]}`",
                            self._loc(meta))
        return ("api", dict(name=str(name), version=str(version), location=self._loc(meta), **fields))

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
        value = items[1]
        if value.type != "SIGNED_NUMBER":
            return CallArg(str(items[0]), str(value))
        text = str(value)
        number = int(text) if text.lstrip("+-").isdigit() else float(text)
        if isinstance(number, float) and not math.isfinite(number):
            raise SpecError(f"attribute value '{items[0]}={text}' is not a finite number; "
                            "write a value a float can hold, e.g. 1e300", self._loc_of(value))
        return CallArg(str(items[0]), number)

    def _loc_of(self, token) -> Location:
        return Location(self.path, getattr(token, "line", 0), getattr(token, "column", 0))

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

    @v_args(meta=True)
    def operator(self, meta, items):
        name, *body = items
        pinned = ()
        if body and isinstance(body[0], tuple) and body[0][0] == "pins":
            pinned, body = body[0][1], body[1:]
        grads = [i for i in body if isinstance(i, GradRule)]
        if grads:
            raise SpecError(f"operator {name} declares a backward rule; operators are signatures, and backward "
                            "rules belong to the kernels that implement them", grads[0].location)
        return OperatorSpec(str(name), pinned, attrs=tuple(i for i in body if isinstance(i, Attr)),
                            params=tuple(i for i in body if isinstance(i, Param)), location=self._loc(meta))

    def start(self, items):
        (kind, fields), *decls = items
        return kind, fields, decls


#: Grammar terminals in plain words (messages never show terminal names).
_PLAIN = {
    "NAME": "a name", "INT": "an integer", "SIGNED_NUMBER": "a number", "STRING": "a quoted string",
    "VERSION": "a version such as 0.1", "_NL": "end of line", "$END": "end of file",
    "OPTIONAL": "`?`",
}
#: Keywords a misspelt word is compared against, per terminal.
_WORDS = {"ROLE": ROLES, "HOOK": ("prepare", "configure", "report", "tune"), "TRANSPOSED": ("transposed",)}


def _terminal_words(terminal: str) -> tuple[str, ...]:
    if terminal in _WORDS:
        return _WORDS[terminal]
    try:
        pattern = grammar().get_terminal(terminal).pattern
    except (KeyError, LarkError):
        return ()
    return (pattern.value,) if pattern.type == "str" and pattern.value.isidentifier() else ()


def _readable(terminal: str) -> tuple[str, ...]:
    """``COLON`` -> ```:```, ``ROLE`` -> ```input``, ```output``, ...``; never a terminal name."""
    if terminal in _WORDS:
        return tuple(f"`{w}`" for w in _WORDS[terminal])
    if terminal in _PLAIN:
        return (_PLAIN[terminal],)
    try:
        pattern = grammar().get_terminal(terminal).pattern
    except (KeyError, LarkError):
        return ("something else",)
    return (f"`{pattern.value}`",) if pattern.type == "str" else ("something else",)


def _label(err: UnexpectedInput) -> str | None:
    """The known mistake ``err`` matches, if any (Lark's ``match_examples``; it must never escape)."""
    for use_accepts in (True, False):
        try:
            return err.match_examples(grammar().parse, _KNOWN_MISTAKES, use_accepts=use_accepts)
        except Exception:  # noqa: BLE001 - Lark's own debug logging can raise TypeError; try without accepts
            continue
    return None


def _syntax_error(err: UnexpectedInput, text: str, path: str) -> SpecError:
    label = _label(err)
    found = getattr(err, "token", None)
    expected = sorted(getattr(err, "accepts", None) or getattr(err, "expected", None) or ())
    expected = [e for e in expected if not e.startswith("__")]
    suggestion = ""
    if isinstance(err, UnexpectedCharacters):
        what = f"unexpected character {text[err.pos_in_stream]!r}"
    elif found is not None and getattr(found, "type", "") == "$END":
        what = "unexpected end of file"
    elif found is not None:
        shown = "end of line" if found.type == "_NL" else repr(str(found))
        what = f"unexpected {shown}"
        words = sorted({w for e in expected for w in _terminal_words(e)})
        if str(found).isidentifier():
            suggestion = did_you_mean(str(found), words)
    else:
        what = "syntax error"
    readable = sorted({r for e in expected for r in _readable(e)})
    message = what + suggestion
    message += f"; {label}" if label else (f"; expected {', '.join(readable)}" if readable else "")
    try:
        context = err.get_context(text).rstrip("\n")
    except Exception:  # noqa: BLE001 - the context is a courtesy; the message stands without it
        context = ""
    return SpecError(message, Location(path, getattr(err, "line", 0), getattr(err, "column", 0)), context)


def parse_declarations(text: str, path: str):
    """``((kind, header fields, declarations), text)`` of ``.gnn`` text (``text`` ending in a newline); raises
    :class:`SpecError` only."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = grammar().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, path) from None
    except LarkError as err:  # no Lark exception escapes, whatever its kind
        raise SpecError(f"cannot parse the spec: {err}", Location(path, 0, 0)) from None
    try:
        return _ToSpec(path).transform(tree), text
    except VisitError as err:
        if isinstance(err.orig_exc, SpecError):
            raise err.orig_exc from None
        raise


def parse_api(text: str, path: str = "<string>", check: bool = True) -> ApiSpec:
    """Parse (and by default check) the system API's text (``gnnbench/api.gnn``)."""
    (kind, fields, decls), text = parse_declarations(text, path)
    if kind != "api":
        raise SpecError("the system API file starts with `api <name> <version>`", fields["location"])
    api = ApiSpec(operators=tuple(d for d in decls if isinstance(d, OperatorSpec)),
                  kernels=tuple(replace(d, standard=True) for d in decls if isinstance(d, KernelSpec)),
                  path=path, **fields)
    if check:
        check_api(api, text)
    return api


def read_spec_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read spec: {err}", Location(str(path), 0, 0)) from None


def load_api(path: str | Path, check: bool = True) -> ApiSpec:
    """Read and parse the system API's ``.gnn`` file."""
    path = Path(path)
    return parse_api(read_spec_text(path), str(path), check)
