"""The spec model: frozen dataclasses a parsed ``.gnn`` file becomes.

Every class renders back to spec syntax with ``str()``, and
``parse_spec(str(spec)) == spec`` (locations are not compared), as torchgen's
``FunctionSchema`` round-trips.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Location", "SpecError", "Attr", "Param", "CallArg", "Call", "GradRule",
           "KernelSpec", "OperatorSpec", "SystemSpec", "ApiSpec", "DTYPES", "ROLES", "FLOAT_DTYPES",
           "BLOCK_SUPPORT"]

#: dtype name -> NumPy dtype names it admits. ``float`` is a type variable.
DTYPES = {
    "float": ("float32", "float64"),
    "f32": ("float32",),
    "f64": ("float64",),
    "i32": ("int32",),
    "i64": ("int64",),
}
ROLES = ("input", "output", "saves", "workspace")
#: What a system's ``blocks`` line may say: its kernels take sampled blocks (rows != columns, Note [blocks]
#: in gnnbench/runtime/graph.py), do not (its sampled runs are skipped with the reason), or have not been run
#: on them (they run, and the reason is shown beside their results).
BLOCK_SUPPORT = ("yes", "no", "unverified")
#: dtypes a gradient may flow through.
FLOAT_DTYPES = ("float", "f32", "f64")


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
    """A positional reference (``grad_out``) or an attribute binding (``reduce=sum``, ``slope=0.2``).

    A bound number is already an ``int`` or ``float`` (the parser converts it),
    so nothing downstream reads numbers from text.
    """

    name: str
    value: str | int | float | None = None

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
    def attr_bindings(self) -> dict[str, str | int | float]:
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
    """A kernel: the operator it implements (if any), its arguments and its backward rules.

    ``standard`` marks a kernel a system takes from the system API with
    ``provides``: it is declared in ``gnnbench/api.gnn``, not in the system's
    own file, and ``str()`` of the system leaves it out.
    """

    name: str
    implements: str | None
    attrs: tuple[Attr, ...] = ()
    pinned: tuple[tuple[str, str], ...] = ()
    params: tuple[Param, ...] = ()
    grads: tuple[GradRule, ...] = ()
    standard: bool = False
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
class OperatorSpec:
    """An operator's signature in the system API: ``operator sddmm(op=dot)`` and its arguments.

    An operator whose shapes depend on an attribute value is declared once
    per value (``pinned``); together they make up the operator.
    """

    name: str
    pinned: tuple[tuple[str, str], ...] = ()
    attrs: tuple[Attr, ...] = ()
    params: tuple[Param, ...] = ()
    location: Location | None = _loc()

    @property
    def inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "input")

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role == "output")

    def __str__(self) -> str:
        pins = ", ".join(f"{k}={v}" for k, v in self.pinned)
        head = f"operator {self.name}" + (f"({pins})" if pins else "")
        return "\n".join([head] + ["    " + str(x) for x in (*self.attrs, *self.params)])


@dataclass(frozen=True)
class ApiSpec:
    """``gnnbench/api.gnn``: the operators and the standard kernels."""

    name: str
    version: str
    summary: str = ""
    operators: tuple[OperatorSpec, ...] = ()
    kernels: tuple[KernelSpec, ...] = ()
    path: str = field(default="<string>", compare=False)
    location: Location | None = _loc()

    def kernel(self, name: str) -> KernelSpec | None:
        return next((k for k in self.kernels if k.name == name), None)

    def operator(self, name: str) -> tuple[OperatorSpec, ...]:
        """Every declaration of operator ``name`` (one per pinned attribute value, or one)."""
        return tuple(o for o in self.operators if o.name == name)

    def operator_attrs(self, name: str) -> dict[str, tuple[str, ...] | str]:
        """Attribute -> allowed values (a tuple) or a type name, over all declarations of ``name``."""
        out: dict[str, tuple[str, ...] | str] = {}
        for o in self.operator(name):
            for k, v in o.pinned:
                out[k] = (*out.get(k, ()), v)
            for a in o.attrs:
                out[a.name] = a.values if a.values is not None else a.type
        return out

    def __str__(self) -> str:
        head = [f"api {self.name} {self.version}"] + ([f"    summary {_quote(self.summary)}"] if self.summary else [])
        return "\n\n".join(["\n".join(head)] + [str(o) for o in self.operators]
                            + [str(k) for k in self.kernels]) + "\n"


@dataclass(frozen=True)
class SystemSpec:
    """A whole ``.gnn`` file of a system.

    ``kernels`` holds every kernel the system has: the standard kernels its
    ``provides`` line takes from the system API (``floats`` applied, marked
    ``standard``) and the kernels it declares itself.
    """

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
    blocks: str = "yes"
    blocks_reason: str = ""
    provides: tuple[str, ...] = ()
    floats: str | None = None
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
        if self.blocks != "yes":
            lines.append(f"    blocks {self.blocks} {_quote(self.blocks_reason)}")
        if self.provides:
            lines.append(f"    provides {', '.join(self.provides)}")
        if self.floats:
            lines.append(f"    floats {self.floats}")
        own = [str(k) for k in self.kernels if not k.standard]
        return "\n\n".join(["\n".join(lines)] + own) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
