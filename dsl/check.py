"""Semantic checks of a parsed spec: everything the grammar cannot express.

Each check raises :class:`SpecError` at the location of the offending
declaration, saying what was found and what was expected.
"""
from __future__ import annotations

import keyword

from gnnbench.api import OPERATORS

from .spec import DTYPES, KernelSpec, Location, Param, SpecError, SystemSpec

__all__ = ["check_spec", "GRAPH_SYMBOLS"]

#: Symbols every shape may use: the graph's node and edge counts.
GRAPH_SYMBOLS = ("N", "E")
_DEVICES = ("cpu", "cuda")
_ARRAYS = ("numpy", "torch")
_FRAMEWORKS = ("torch", "tensorflow")
_FORMATS = ("csr", "csr_t", "csc", "coo", "degrees")


class _Checker:
    def __init__(self, spec: SystemSpec, text: str):
        self.spec, self.lines = spec, text.splitlines()

    def fail(self, message: str, location: Location | None):
        context = ""
        if location and 0 < location.line <= len(self.lines):
            line = self.lines[location.line - 1]
            context = f"{line}\n{' ' * max(location.column - 1, 0)}^"
        raise SpecError(message, location, context)

    def identifier(self, name: str, what: str, location: Location | None):
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__"):
            self.fail(f"{what} '{name}' is not a usable Python identifier "
                      "(letters, digits and _, not a keyword, no leading __)", location)

    def one_of(self, value: str, allowed, what: str, location: Location | None):
        if value not in allowed:
            self.fail(f"unknown {what} '{value}'; expected one of: {', '.join(allowed)}", location)

    # ------------------------------------------------------------------ system
    def system(self):
        s = self.spec
        self.identifier(s.name, "system name", s.location)
        for part in s.kernels_module.split("."):
            self.identifier(part, "kernels module part", s.location)
        for d in s.devices:
            self.one_of(d, _DEVICES, "device", s.location)
        self.one_of(s.arrays, _ARRAYS, "array kind", s.location)
        for f in s.frameworks:
            self.one_of(f, _FRAMEWORKS, "framework", s.location)
        for f in s.formats:
            self.one_of(f, _FORMATS, "graph format", s.location)
        for req in s.requires:
            self.identifier(req, "required package", s.location)
        for hook, fn in s.hooks:
            self.identifier(fn, f"{hook} function", s.location)
        if len({h for h, _ in s.hooks}) != len(s.hooks):
            self.fail("a hook (prepare, configure, report) is given twice", s.location)
        seen: dict[str, KernelSpec] = {}
        for k in s.kernels:
            if k.name in seen:
                self.fail(f"duplicate kernel '{k.name}' (first declared at {seen[k.name].location})", k.location)
            seen[k.name] = k
        for k in s.kernels:
            self.kernel(k)
        self.operators()

    # ------------------------------------------------------------------ kernels
    def kernel(self, k: KernelSpec):
        self.identifier(k.name, "kernel name", k.location)
        names: dict[str, Location | None] = {}
        for item in (*k.attrs, *k.params):
            self.identifier(item.name, "argument name", item.location)
            if item.name in names or item.name == "graph":
                self.fail(f"kernel '{k.name}': the name '{item.name}' is used twice "
                          "('graph' is the kernel's first argument)", item.location)
            names[item.name] = item.location
        for a in k.attrs:
            if a.values is not None:
                for v in a.values:
                    self.identifier(v, "attribute value", a.location)
            elif a.type not in ("float", "int"):
                self.fail(f"attribute '{a.name}' has type '{a.type}'; expected float or int "
                          "(or a set of values: attr NAME in {a, b})", a.location)
        bound = set(GRAPH_SYMBOLS)
        for p in k.inputs:
            self.param(k, p, bound, binding=True)
        for p in (*k.outputs, *k.saves, *k.workspaces):
            self.param(k, p, bound, binding=False)
        if not k.outputs:
            self.fail(f"kernel '{k.name}' has no output; kernels write their results into "
                      "framework-allocated outputs, e.g. `output out: float[N, F]`", k.location)
        if k.implements is not None:
            self.implements(k)
        for g in k.grads:
            self.grad(k, g)

    def param(self, k: KernelSpec, p: Param, bound: set[str], binding: bool):
        self.one_of(p.dtype, tuple(DTYPES), "dtype", p.location)
        if p.shape is None:
            self.fail(f"{p.role} '{p.name}' has no shape; the framework allocates every tensor before "
                      f"the call, so write e.g. `{p.role} {p.name}: {p.dtype}[N, F]`", p.location)
        for sym in p.symbols:
            if binding:
                bound.add(sym)
            elif sym not in bound:
                self.fail(f"{p.role} '{p.name}' of kernel '{k.name}' uses the undefined shape symbol '{sym}'; "
                          f"defined here: {', '.join(sorted(bound))} (N and E come from the graph, others "
                          "from the inputs' shapes)", p.location)
        if p.optional and p.role != "input":
            self.fail(f"only inputs may be optional ('{p.name}' is a {p.role}); the framework "
                      "always allocates outputs", p.location)
        if p.indexes and p.indexes not in bound:
            self.fail(f"'{p.name}' indexes the undefined symbol '{p.indexes}'", p.location)
        if p.indexes and not p.dtype.startswith("i"):
            self.fail(f"'{p.name}' has `indexes` but dtype {p.dtype}; index arrays are i32 or i64", p.location)

    def implements(self, k: KernelSpec):
        op = OPERATORS.get(k.implements)
        if op is None:
            self.fail(f"kernel '{k.name}' implements unknown operator '{k.implements}'; the system API has: "
                      f"{', '.join(OPERATORS)}", k.location)
        got = tuple(p.name + ("?" if p.optional else "") for p in k.inputs)
        if got != op.inputs:
            self.fail(f"kernel '{k.name}' implements {op.name}, whose inputs are ({', '.join(op.inputs)}); "
                      f"the kernel declares ({', '.join(got)})", k.location)
        if len(k.outputs) != len(op.outputs):
            self.fail(f"kernel '{k.name}' implements {op.name}, which has {len(op.outputs)} output(s); "
                      f"the kernel declares {len(k.outputs)}", k.location)
        for name, value in k.pinned:
            allowed = op.attrs.get(name)
            if allowed is None:
                self.fail(f"operator {op.name} has no attribute '{name}'; its attributes: "
                          f"{', '.join(op.attrs) or 'none'}", k.location)
            if not isinstance(allowed, tuple) or value not in allowed:
                shown = "{" + ", ".join(allowed) + "}" if isinstance(allowed, tuple) else f"a {allowed}"
                self.fail(f"attribute value '{name}={value}' is outside its set {shown} for operator {op.name}",
                          k.location)
            if k.attr(name) is not None:
                self.fail(f"attribute '{name}' is both pinned in `implements {op.name}(...)` and declared "
                          "with `attr`; keep one", k.location)
        for a in k.attrs:
            allowed = op.attrs.get(a.name)
            if allowed is None:
                self.fail(f"operator {op.name} has no attribute '{a.name}'; its attributes: "
                          f"{', '.join(op.attrs) or 'none'}", a.location)
            if isinstance(allowed, tuple):
                if a.values is None:
                    self.fail(f"attribute '{a.name}' of {op.name} takes values from {{{', '.join(allowed)}}}; "
                              f"write `attr {a.name} in {{...}}`", a.location)
                for v in a.values:
                    if v not in allowed:
                        self.fail(f"attribute value '{a.name}={v}' is outside its set "
                                  f"{{{', '.join(allowed)}}} for operator {op.name}", a.location)
            elif a.type != allowed:
                self.fail(f"attribute '{a.name}' of {op.name} is a {allowed}", a.location)
        for name, allowed in op.attrs.items():
            if k.attr(name) is None and name not in dict(k.pinned):
                self.fail(f"kernel '{k.name}' implements {op.name} but does not declare attribute "
                          f"'{name}'; add `attr {name} in {{{', '.join(allowed)}}}` or pin it: "
                          f"`implements {op.name}({name}=...)`" if isinstance(allowed, tuple)
                          else f"kernel '{k.name}' implements {op.name} but does not declare `attr {name}: {allowed}`",
                          k.location)

    def grad(self, k: KernelSpec, g):
        callee = self.spec.kernel(g.call.kernel)
        if callee is None:
            self.fail(f"backward of '{k.name}' calls unknown kernel '{g.call.kernel}'; kernels in this spec: "
                      f"{', '.join(x.name for x in self.spec.kernels)}", g.location)
        differentiable = {p.name for p in k.inputs if p.dtype in ("float", "f32", "f64")}
        for t in g.targets:
            if t not in differentiable:
                self.fail(f"'grad {t}': '{t}' is not a float input of kernel '{k.name}'; "
                          f"its float inputs: {', '.join(sorted(differentiable)) or 'none'}", g.location)
        if len(callee.outputs) != len(g.targets):
            self.fail(f"'{callee.name}' has {len(callee.outputs)} output(s) but the rule assigns "
                      f"{len(g.targets)} gradient(s)", g.location)
        available = {p.name for p in (*k.inputs, *k.outputs, *k.saves)} | {f"grad_{p.name}" for p in k.outputs}
        refs = g.call.refs
        for r in refs:
            if r not in available:
                self.fail(f"backward of '{k.name}' passes '{r}', which is not one of its inputs, outputs, "
                          f"saves or output gradients: {', '.join(sorted(available))}", g.location)
        if len(refs) != len(callee.inputs):
            self.fail(f"'{callee.name}' takes {len(callee.inputs)} input(s) "
                      f"({', '.join(p.name for p in callee.inputs)}); the rule passes {len(refs)}", g.location)
        for a in callee.attrs:
            if a.name not in g.call.attr_bindings and a.name not in k.dispatch_attrs():
                self.fail(f"'{callee.name}' needs attribute '{a.name}', which '{k.name}' neither has nor "
                          f"binds; write `{callee.name}(..., {a.name}=VALUE)`", g.location)
        for name, value in g.call.attr_bindings.items():
            a = callee.attr(name)
            if a is None:
                self.fail(f"'{callee.name}' has no attribute '{name}'", g.location)
            if a.values is not None and value not in a.values:
                self.fail(f"attribute value '{name}={value}' is outside its set {{{', '.join(a.values)}}} "
                          f"of kernel '{callee.name}'", g.location)

    def operators(self):
        """No (operator, attribute values) pair may be implemented by two kernels."""
        claimed: dict[tuple, KernelSpec] = {}
        for k in self.spec.kernels:
            if k.implements is None:
                continue
            combos = [()]
            for name, values in k.dispatch_attrs().items():
                if isinstance(values, tuple):
                    combos = [c + ((name, v),) for c in combos for v in values]
            for c in combos:
                key = (k.implements, c)
                if key in claimed:
                    shown = ", ".join(f"{n}={v}" for n, v in c)
                    self.fail(f"operator {k.implements}({shown}) is implemented twice: by "
                              f"'{claimed[key].name}' and '{k.name}'", k.location)
                claimed[key] = k


def check_spec(spec: SystemSpec, text: str = "") -> SystemSpec:
    """Run every semantic check; return the spec unchanged or raise :class:`SpecError`."""
    _Checker(spec, text).system()
    return spec
