"""The spec model: frozen dataclasses a parsed ``.gnn`` file becomes.

Every class renders back to spec syntax with ``str()``, and
``parse_spec(str(spec)) == spec`` (locations are not compared), as torchgen's
``FunctionSchema`` round-trips.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Location", "SpecError", "Attr", "Param", "CallArg", "Call", "GradRule",
           "KernelSpec", "SystemSpec", "DTYPES", "ROLES"]

#: dtype name -> NumPy dtype names it admits. ``float`` is a type variable.
DTYPES = {
    "float": ("float32", "float64"),
    "f32": ("float32",),
    "f64": ("float64",),
    "i32": ("int32",),
    "i64": ("int64",),
}
ROLES = ("input", "output", "saves", "workspace")


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


class SpecError(Exception):
    """A spec that cannot be compiled. ``location`` is kept apart from the message.

    ``str(err)`` is one line: ``file:line:col: message``, then, when the source
    is known, the offending line and a caret under the column.
    """

    def __init__(self, message: str, location: Location | None = None, context: str = ""):
        self.message, self.location, self.context = message, location, context
        head = f"{location}: {message}" if location else message
        super().__init__(head + (f"\n{context}" if context else ""))


def _loc() -> Location | None:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Attr:
    """``attr reduce in {sum, mean}`` (``values``) or ``attr slope: float`` (``type``)."""

    name: str
    values: tuple[str, ...] | None = None
    type: str | None = None
    location: Location | None = _loc()

    def __str__(self) -> str:
        if self.values is not None:
            return f"attr {self.name} in {{{', '.join(self.values)}}}"
        return f"attr {self.name}: {self.type}"


@dataclass(frozen=True)
class Param:
    """A tensor argument: ``input x: float[N, H, D]?``.

    ``shape`` is a tuple of dims, each a tuple of factors (symbol names or
    ints) multiplied together; ``None`` when the spec gave no shape (an error
    for anything the framework must allocate).
    """

    role: str
    name: str
    dtype: str
    shape: tuple[tuple[str | int, ...], ...] | None
    optional: bool = False
    zero: bool = False
    indexes: str | None = None
    location: Location | None = _loc()

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(f for dim in self.shape or () for f in dim if isinstance(f, str))

    def shape_str(self) -> str:
        if self.shape is None:
            return ""
        return "[" + ", ".join("*".join(str(f) for f in dim) for dim in self.shape) + "]"

    def __str__(self) -> str:
        out = f"{self.role} {self.name}: {self.dtype}{self.shape_str()}"
        out += "?" if self.optional else ""
        out += " = 0" if self.zero else ""
        out += f" indexes {self.indexes}" if self.indexes else ""
        return out


@dataclass(frozen=True)
class CallArg:
    """A positional reference (``grad_out``) or an attribute binding (``reduce=sum``)."""

    name: str
    value: str | None = None

    def __str__(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value}"


@dataclass(frozen=True)
class Call:
    kernel: str
    args: tuple[CallArg, ...]
    transposed: bool = False
    location: Location | None = _loc()

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.value is None)

    @property
    def attr_bindings(self) -> dict[str, str]:
        return {a.name: a.value for a in self.args if a.value is not None}

    def __str__(self) -> str:
        return f"{self.kernel}({', '.join(map(str, self.args))})" + (" transposed" if self.transposed else "")


@dataclass(frozen=True)
class GradRule:
    """``grad x, w = kernel(args) [transposed]``: the callee's outputs, in order, are these gradients."""

    targets: tuple[str, ...]
    call: Call
    location: Location | None = _loc()

    def __str__(self) -> str:
        return f"grad {', '.join(self.targets)} = {self.call}"


@dataclass(frozen=True)
class KernelSpec:
    name: str
    implements: str | None
    attrs: tuple[Attr, ...] = ()
    pinned: tuple[tuple[str, str], ...] = ()
    params: tuple[Param, ...] = ()
    grads: tuple[GradRule, ...] = ()
    location: Location | None = _loc()

    def role(self, role: str) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == role)

    @property
    def inputs(self) -> tuple[Param, ...]:
        return self.role("input")

    @property
    def outputs(self) -> tuple[Param, ...]:
        return self.role("output")

    @property
    def saves(self) -> tuple[Param, ...]:
        return self.role("saves")

    @property
    def workspaces(self) -> tuple[Param, ...]:
        return self.role("workspace")

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def attr(self, name: str) -> Attr | None:
        return next((a for a in self.attrs if a.name == name), None)

    def dispatch_attrs(self) -> dict[str, tuple[str, ...] | str]:
        """Attribute -> values this kernel serves for its operator: pinned ones and declared ones."""
        out: dict[str, tuple[str, ...] | str] = {k: (v,) for k, v in self.pinned}
        out.update({a.name: a.values if a.values is not None else a.type for a in self.attrs})
        return out

    def __str__(self) -> str:
        head = f"kernel {self.name}"
        if self.implements:
            pins = ", ".join(f"{k}={v}" for k, v in self.pinned)
            head += f" implements {self.implements}" + (f"({pins})" if pins else "")
        body = [str(a) for a in self.attrs] + [str(p) for p in self.params] + [str(g) for g in self.grads]
        return "\n".join([head] + ["    " + line for line in body])


@dataclass(frozen=True)
class SystemSpec:
    """A whole ``.gnn`` file."""

    name: str
    version: str
    kernels_module: str
    summary: str = ""
    devices: tuple[str, ...] = ("cpu",)
    requires: tuple[str, ...] = ()
    arrays: str = "numpy"
    frameworks: tuple[str, ...] = ("torch",)
    formats: tuple[str, ...] = ("csr",)
    hooks: tuple[tuple[str, str], ...] = ()
    hint: str = ""
    kernels: tuple[KernelSpec, ...] = ()
    path: str = field(default="<string>", compare=False)
    location: Location | None = _loc()

    def kernel(self, name: str) -> KernelSpec | None:
        return next((k for k in self.kernels if k.name == name), None)

    def hook(self, name: str) -> str | None:
        return dict(self.hooks).get(name)

    def __str__(self) -> str:
        lines = [f"system {self.name} {self.version}"]
        if self.summary:
            lines.append(f"    summary {_quote(self.summary)}")
        lines.append(f"    devices {', '.join(self.devices)}")
        if self.requires:
            lines.append(f"    requires {', '.join(self.requires)}")
        lines.append(f"    arrays {self.arrays}")
        lines.append(f"    frameworks {', '.join(self.frameworks)}")
        lines.append(f"    formats {', '.join(self.formats)}")
        lines.append(f"    kernels {self.kernels_module}")
        lines += [f"    {hook} {fn}" for hook, fn in self.hooks]
        if self.hint:
            lines.append(f"    hint {_quote(self.hint)}")
        return "\n\n".join(["\n".join(lines)] + [str(k) for k in self.kernels]) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
