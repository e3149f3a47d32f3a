"""Semantic checks of a parsed spec: everything the grammar cannot express.

Each check raises :class:`SpecError` at the location of the offending
declaration, naming the kernel and argument, saying what was expected and what
was found, and suggesting the nearest name for a misspelt one.

Note [static shape checks]
    Every kernel that implements an operator is checked against the
    operator's signature in ``gnnbench/api.gnn``: input and output names,
    dtypes and symbolic shapes. Every backward rule is checked against the
    kernel it calls: each tensor it passes must fit the callee's input, and
    each callee output must have the shape and dtype of the gradient it
    becomes. N, S and E are the graph's: rows, columns and edges of the view
    the kernel runs on, and a rule marked ``transposed`` swaps the callee's N
    and S against the caller's (Note [rows and columns] in ``api.gnn``), so
    ``grad_x: [S]`` where the forward ``x`` is ``[S]`` and the callee runs
    forward fails too. Symbols other than N, S and E are matched by position (a kernel
    may call the heads K where the API says H), so ``[N, D]`` where
    ``[N, H, D]`` is needed, or a gradient ``[E]`` where ``[E, H]`` is
    needed, fails at ``gen`` instead of deep inside a run.
"""
from __future__ import annotations

import difflib
import keyword

from .spec import DTYPES, FLOAT_DTYPES, ApiSpec, KernelSpec, Location, OperatorSpec, Param, SpecError, SystemSpec

__all__ = ["check_spec", "check_api", "did_you_mean", "GRAPH_SYMBOLS", "RESERVED_NAMES"]

#: Symbols every shape may use: the view's rows (destinations), columns (sources) and edges.
GRAPH_SYMBOLS = ("N", "S", "E")
#: How a ``transposed`` rule renames the callee's graph symbols into the caller's (Note [rows and columns]).
_TRANSPOSED = {"N": "S", "S": "N"}
#: Names the generated glue and the runtimes use for themselves; no spec name may take them.
RESERVED_NAMES = ("ARRAYS", "SYSTEM", "attrs", "bind_system", "ctx", "graph", "run", "self")
_DEVICES = ("cpu", "cuda")
_ARRAYS = ("numpy", "torch")
_FRAMEWORKS = ("torch", "tensorflow")
_FORMATS = ("csr", "csr_t", "csc", "coo", "degrees")

Shape = tuple[tuple[str | int, ...], ...]


def did_you_mean(word: str, choices) -> str:
    """``" (did you mean `output`?)"`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _show(dtype: str, shape: Shape | None) -> str:
    dims = "" if shape is None else "[" + ", ".join("*".join(str(f) for f in d) for d in shape) + "]"
    return dtype + dims


def _canonical(factors) -> tuple[int, tuple[str, ...]]:
    number, symbols = 1, []
    for f in factors:
        if isinstance(f, int):
            number *= f
        else:
            symbols.append(f)
    return number, tuple(sorted(symbols))


def _fits(shape: Shape, target: Shape, binding: dict[str, tuple]) -> bool:
    """Whether ``shape`` (its symbols bound through ``binding``, new ones bound now) equals ``target``."""
    if len(shape) != len(target):
        return False
    for dim, want in zip(shape, target):
        if len(dim) == 1 and isinstance(dim[0], str) and dim[0] not in GRAPH_SYMBOLS and dim[0] not in binding:
            binding[dim[0]] = want
            continue
        expanded: list = []
        for f in dim:
            if isinstance(f, str) and f not in GRAPH_SYMBOLS:
                if f not in binding:
                    return False
                expanded += binding[f]
            else:
                expanded.append(f)
        if _canonical(expanded) != _canonical(want):
            return False
    return True


def _same(a: Shape, b: Shape) -> bool:
    return len(a) == len(b) and all(_canonical(x) == _canonical(y) for x, y in zip(a, b))


def _substitute(shape: Shape, binding: dict[str, tuple]) -> Shape | None:
    out = []
    for dim in shape:
        factors: list = []
        for f in dim:
            if isinstance(f, str) and f not in GRAPH_SYMBOLS:
                if f not in binding:
                    return None
                factors += binding[f]
            else:
                factors.append(f)
        out.append(tuple(factors))
    return tuple(out)


def _in_caller(shape: Shape | None, transposed: bool) -> Shape:
    """A callee's declared ``shape`` in the caller's symbols: N and S swap across a transposed rule."""
    if not transposed:
        return shape or ()
    return tuple(tuple(_TRANSPOSED.get(f, f) if isinstance(f, str) else f for f in dim) for dim in shape or ())


def _dtypes_meet(a: str, b: str) -> bool:
    return bool(set(DTYPES.get(a, ())) & set(DTYPES.get(b, ())))


class _Checker:
    def __init__(self, spec: SystemSpec | ApiSpec, text: str, api: ApiSpec):
        self.spec, self.lines, self.api = spec, text.splitlines(), api

    def fail(self, message: str, location: Location | None):
        context = ""
        if location and location.path == self.spec.path and 0 < location.line <= len(self.lines):
            line = self.lines[location.line - 1]
            context = f"{line}\n{' ' * max(location.column - 1, 0)}^"
        raise SpecError(message, location, context)

    def identifier(self, name: str, what: str, location: Location | None, reserved: bool = True):
        if not name.isidentifier() or keyword.iskeyword(name):
            self.fail(f"{what} '{name}' is not a usable Python identifier (letters, digits and _, "
                      "not a keyword)", location)
        if reserved and name.startswith("_"):
            self.fail(f"{what} '{name}' starts with '_', which the generated glue keeps for its own names; "
                      "rename it", location)
        if reserved and name in RESERVED_NAMES:
            self.fail(f"{what} '{name}' is reserved: the generated glue and the runtimes use it "
                      f"(reserved: {', '.join(RESERVED_NAMES)}); rename it", location)

    def one_of(self, value: str, allowed, what: str, location: Location | None):
        if value not in allowed:
            self.fail(f"unknown {what} '{value}'{did_you_mean(value, allowed)}; expected one of: "
                      f"{', '.join(allowed)}", location)

    # ------------------------------------------------------------------ the system
    def system(self):
        s = self.spec
        self.identifier(s.name, "system name", s.location)
        for part in s.kernels_module.split("."):
            self.identifier(part, "kernels module part", s.location, reserved=False)
        for d in s.devices:
            self.one_of(d, _DEVICES, "device", s.location)
        self.one_of(s.arrays, _ARRAYS, "array kind", s.location)
        for f in s.frameworks:
            self.one_of(f, _FRAMEWORKS, "framework", s.location)
        for f in s.formats:
            self.one_of(f, _FORMATS, "graph format", s.location)
        for req in s.requires:
            self.identifier(req, "required package", s.location, reserved=False)
        for hook, fn in s.hooks:
            self.identifier(fn, f"{hook} function", s.location, reserved=False)
        if len({h for h, _ in s.hooks}) != len(s.hooks):
            self.fail("a hook (prepare, configure, report) is given twice", s.location)
        self.kernels()

    def kernels(self):
        seen: dict[str, KernelSpec] = {}
        for k in self.spec.kernels:
            if k.name in seen:
                self.fail(f"duplicate kernel '{k.name}' (first declared at {seen[k.name].location})", k.location)
            seen[k.name] = k
        for k in self.spec.kernels:  # standard ones too: a system's own kernel may replace one they call
            self.kernel(k)
        self.operators()

    # ------------------------------------------------------------------ kernels
    def kernel(self, k: KernelSpec):
        self.identifier(k.name, "kernel name", k.location)
        names: dict[str, Location | None] = {}
        for item in (*k.attrs, *k.params):
            self.identifier(item.name, "argument name", item.location)
            if item.name in names:
                self.fail(f"kernel '{k.name}': the name '{item.name}' is used twice", item.location)
            names[item.name] = item.location
        for a in k.attrs:
            if a.values is not None:
                for v in a.values:
                    self.identifier(v, "attribute value", a.location, reserved=False)
            elif a.type not in ("float", "int"):
                self.fail(f"attribute '{a.name}' has type '{a.type}'; expected float or int "
                          "(or a set of values: attr NAME in {a, b})", a.location)
        bound = set(GRAPH_SYMBOLS)
        for p in k.inputs:
            self.param(k, p, bound, binding=True)
        for p in k.inputs:  # an index array may name a symbol a later input binds (etype before weight's R)
            self.index_target(p, bound)
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
                          f"defined here: {', '.join(sorted(bound))} (N, S and E come from the graph, others "
                          "from the inputs' shapes)", p.location)
        if p.optional and p.role != "input":
            self.fail(f"only inputs may be optional ('{p.name}' is a {p.role}); the framework "
                      "always allocates outputs", p.location)
        if not binding:
            self.index_target(p, bound)
        if p.indexes and not p.dtype.startswith("i"):
            self.fail(f"'{p.name}' has `indexes` but dtype {p.dtype}; index arrays are i32 or i64", p.location)

    def index_target(self, p: Param, bound: set[str]):
        if p.indexes and p.indexes not in bound:
            self.fail(f"'{p.name}' indexes the undefined symbol '{p.indexes}'", p.location)

    def implements(self, k: KernelSpec):
        decls = self.api.operator(k.implements)
        if not decls:
            names = list(dict.fromkeys(o.name for o in self.api.operators))
            self.fail(f"kernel '{k.name}' implements unknown operator '{k.implements}'"
                      f"{did_you_mean(k.implements, names)}; the system API has: {', '.join(names)}", k.location)
        op, attrs = k.implements, self.api.operator_attrs(k.implements)
        for name, value in k.pinned:
            allowed = attrs.get(name)
            if allowed is None:
                self.fail(f"operator {op} has no attribute '{name}'{did_you_mean(name, attrs)}; its attributes: "
                          f"{', '.join(attrs) or 'none'}", k.location)
            if not isinstance(allowed, tuple) or value not in allowed:
                shown = "{" + ", ".join(allowed) + "}" if isinstance(allowed, tuple) else f"a {allowed}"
                self.fail(f"attribute value '{name}={value}' is outside its set {shown} for operator {op}",
                          k.location)
            if k.attr(name) is not None:
                self.fail(f"attribute '{name}' is both pinned in `implements {op}(...)` and declared "
                          "with `attr`; keep one", k.location)
        for a in k.attrs:
            allowed = attrs.get(a.name)
            if allowed is None:
                self.fail(f"operator {op} has no attribute '{a.name}'{did_you_mean(a.name, attrs)}; its "
                          f"attributes: {', '.join(attrs) or 'none'}", a.location)
            if isinstance(allowed, tuple):
                if a.values is None:
                    self.fail(f"attribute '{a.name}' of {op} takes values from {{{', '.join(allowed)}}}; "
                              f"write `attr {a.name} in {{...}}`", a.location)
                for v in a.values:
                    if v not in allowed:
                        self.fail(f"attribute value '{a.name}={v}' is outside its set "
                                  f"{{{', '.join(allowed)}}} for operator {op}", a.location)
            elif a.type != allowed:
                self.fail(f"attribute '{a.name}' of {op} is a {allowed}", a.location)
        for name, allowed in attrs.items():
            if k.attr(name) is None and name not in dict(k.pinned):
                self.fail(f"kernel '{k.name}' implements {op} but does not declare attribute "
                          f"'{name}'; add `attr {name} in {{{', '.join(allowed)}}}` or pin it: "
                          f"`implements {op}({name}=...)`" if isinstance(allowed, tuple)
                          else f"kernel '{k.name}' implements {op} but does not declare `attr {name}: {allowed}`",
                          k.location)
        served = k.dispatch_attrs()
        for decl in decls:
            if all(v in served.get(n, ()) for n, v in decl.pinned):
                self.signature(k, decl)

    def signature(self, k: KernelSpec, op: OperatorSpec):
        """Names, dtypes and shapes of ``k`` against the operator declaration it serves."""
        shown_op = op.name + (f"({', '.join(f'{n}={v}' for n, v in op.pinned)})" if op.pinned else "")
        want = tuple(p.name + ("?" if p.optional else "") for p in op.inputs)
        got = tuple(p.name + ("?" if p.optional else "") for p in k.inputs)
        if got != want:
            self.fail(f"kernel '{k.name}' implements {shown_op}, whose inputs are ({', '.join(want)}); "
                      f"the kernel declares ({', '.join(got)})", k.location)
        want = tuple(p.name for p in op.outputs)
        got = tuple(p.name for p in k.outputs)
        if got != want:
            self.fail(f"kernel '{k.name}' implements {shown_op}, whose outputs are ({', '.join(want)}); "
                      f"the kernel declares ({', '.join(got)})", k.location)
        binding: dict[str, tuple] = {}
        for mine, theirs in zip((*k.inputs, *k.outputs), (*op.inputs, *op.outputs)):
            dtype_ok = set(DTYPES.get(mine.dtype, ())) <= set(DTYPES.get(theirs.dtype, ()))
            if not dtype_ok or not _fits(mine.shape or (), theirs.shape or (), binding):
                self.fail(f"kernel '{k.name}' implements {shown_op}: its {mine.role} '{mine.name}' is "
                          f"{_show(mine.dtype, mine.shape)}; the operator needs {_show(theirs.dtype, theirs.shape)}",
                          mine.location)

    def grad(self, k: KernelSpec, g):
        callee = self.scope(g.call.kernel)
        if callee is None:
            names = [x.name for x in self.spec.kernels]
            hint = " (a standard kernel: add it to `provides`)" if self.api.kernel(g.call.kernel) else ""
            self.fail(f"backward of '{k.name}' calls unknown kernel '{g.call.kernel}'{hint}"
                      f"{did_you_mean(g.call.kernel, names)}; kernels in this spec: {', '.join(names)}", g.location)
        differentiable = {p.name for p in k.inputs if p.dtype in FLOAT_DTYPES}
        for t in g.targets:
            if t not in differentiable:
                self.fail(f"'grad {t}': '{t}' is not a float input of kernel '{k.name}'"
                          f"{did_you_mean(t, differentiable)}; its float inputs: "
                          f"{', '.join(sorted(differentiable)) or 'none'}", g.location)
        if len(callee.outputs) != len(g.targets):
            self.fail(f"'{callee.name}' has {len(callee.outputs)} output(s) but the rule assigns "
                      f"{len(g.targets)} gradient(s)", g.location)
        tensors = {p.name: p for p in (*k.inputs, *k.outputs, *k.saves)}
        tensors.update({f"grad_{p.name}": p for p in k.outputs})
        refs = g.call.refs
        for r in refs:
            if r not in tensors:
                self.fail(f"backward of '{k.name}' passes '{r}', which is not one of its inputs, outputs, "
                          f"saves or output gradients{did_you_mean(r, tensors)}: {', '.join(sorted(tensors))}",
                          g.location)
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
                self.fail(f"'{callee.name}' has no attribute '{name}'{did_you_mean(name, [x.name for x in callee.attrs])}",
                          g.location)
            if a.values is not None and value not in a.values:
                self.fail(f"attribute value '{name}={value}' is outside its set {{{', '.join(a.values)}}} "
                          f"of kernel '{callee.name}'", g.location)
            if a.values is None and (isinstance(value, str) or (a.type == "int" and not isinstance(value, int))):
                self.fail(f"attribute '{name}' of kernel '{callee.name}' is a {a.type}; the rule binds "
                          f"'{name}={value}'", g.location)
        self.grad_shapes(k, g, callee, [tensors[r] for r in refs])

    def grad_shapes(self, k: KernelSpec, g, callee: KernelSpec, passed: list[Param]):
        """See Note [static shape checks]: what the rule passes, and the gradients it gets back."""
        t = g.call.transposed
        rule = f"backward of '{k.name}' (`grad {', '.join(g.targets)} = {callee.name}(...){' transposed' * t}`)"
        binding: dict[str, tuple] = {}
        for ref, decl, mine in zip(g.call.refs, callee.inputs, passed):
            if mine.optional and not decl.optional:
                self.fail(f"{rule} passes '{ref}', which may be absent (declared `?`), as the required input "
                          f"'{decl.name}' of '{callee.name}'; declare that input `?`", g.location)
            if not _dtypes_meet(decl.dtype, mine.dtype) or not _fits(_in_caller(decl.shape, t), mine.shape or (),
                                                                     binding):
                self.fail(f"{rule} passes '{ref}' ({_show(mine.dtype, mine.shape)}) as input '{decl.name}' of "
                          f"'{callee.name}', declared {_show(decl.dtype, decl.shape)}"
                          f"{' (N and S swap on the transposed view)' * t}", g.location)
        for target, out in zip(g.targets, callee.outputs):
            want = k.param(target)
            got = _substitute(_in_caller(out.shape, t), binding)
            if got is None or not _dtypes_meet(out.dtype, want.dtype) or not _same(got, want.shape or ()):
                if k.standard and not callee.standard:  # the system's own kernel replaced a standard one
                    self.fail(f"kernel '{callee.name}' replaces a standard kernel that the backward of "
                              f"'{k.name}' calls ({g.location}); its output '{out.name}' is "
                              f"{_show(out.dtype, out.shape)}, but the gradient of '{target}' must be "
                              f"{_show(want.dtype, want.shape)}", out.location)
                self.fail(f"{rule}: output '{out.name}' of '{callee.name}' is {_show(out.dtype, out.shape)}"
                          f"{' on the transposed view' * t}, but the gradient of '{target}' must be "
                          f"{_show(want.dtype, want.shape)} like '{target}'", g.location)

    def scope(self, name: str) -> KernelSpec | None:
        return next((x for x in self.spec.kernels if x.name == name), None)

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

    # ------------------------------------------------------------------ the API itself
    def api_file(self):
        a = self.spec
        for o in a.operators:
            self.identifier(o.name, "operator name", o.location)
            bound = set(GRAPH_SYMBOLS)
            probe = KernelSpec(o.name, None, attrs=o.attrs, params=o.params, location=o.location)
            for p in o.inputs:
                self.param(probe, p, bound, binding=True)
            for p in o.inputs:
                self.index_target(p, bound)
            for p in o.outputs:
                self.param(probe, p, bound, binding=False)
            if [p for p in o.params if p.role not in ("input", "output")]:
                self.fail(f"operator {o.name} declares saves or workspaces; those belong to kernels", o.location)
        self.kernels()


def check_spec(spec: SystemSpec, api: ApiSpec, text: str = "") -> SystemSpec:
    """Run every semantic check of a system spec against the system ``api``; return it unchanged or raise
    :class:`SpecError`."""
    _Checker(spec, text, api).system()
    return spec


def check_api(api: ApiSpec, text: str = "") -> ApiSpec:
    """Check the system API: its operators, and its standard kernels against them."""
    _Checker(api, text, api).api_file()
    return api
