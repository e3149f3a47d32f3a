"""Safe code generation: hostile specs and hostile spec file names give glue that only defines things.

Note [glue node kinds]
    The declaration template (``_glue.py``) produces a docstring, imports and
    one ``DECLARATION = SystemDeclaration(...)`` call whose arguments are
    literals, the kernel functions (``_kernels.NAME``) and the spec
    dataclasses' constructors; a framework's binding (``_glue_<framework>.py``)
    is four fixed statements that name no spec value at all. Anything else in
    a generated module's AST means a spec value escaped into code.
"""
from __future__ import annotations

import ast
import keyword
import sys
import types
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gnnbench.dsl.check import RESERVED_NAMES
from gnnbench.dsl.gen import generate, py_literal
from gnnbench.dsl.parse import load_spec, parse_spec

from .test_parse import TINY

try:  # imported now, not inside a hypothesis example: importing TensorFlow raises the recursion limit
    import gnnbench.frameworks.tf_runtime  # noqa: F401
    _FRAMEWORKS = "torch, tensorflow"
except ImportError:  # without TensorFlow, the hostile specs generate PyTorch glue only
    _FRAMEWORKS = "torch"

_GLUE_NODES = {ast.Module, ast.Expr, ast.Constant, ast.Import, ast.ImportFrom, ast.alias, ast.Assign, ast.Name,
               ast.Load, ast.Store, ast.Call, ast.keyword, ast.Dict, ast.Tuple, ast.Attribute, ast.UnaryOp, ast.USub}
_CONSTRUCTORS = {"SystemDeclaration", "KernelSpec", "Param", "Attr", "GradRule", "Call", "CallArg"}
_DECLARATION_IMPORTS = {"gnnbench.dsl.spec", "gnnbench.runtime.glue"}
_RUNTIMES = {"torch": "gnnbench.frameworks.torch_runtime", "tensorflow": "gnnbench.frameworks.tf_runtime"}


def assert_definitions_only(path: Path, source: str, kernels_module: str) -> None:
    """See Note [glue node kinds]."""
    tree = ast.parse(source)
    assert {type(n) for n in ast.walk(tree)} <= _GLUE_NODES
    docstring, *statements = tree.body
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    if path.name != "_glue.py":
        runtime = _RUNTIMES[path.stem.removeprefix("_glue_")]
        assert [ast.unparse(s) for s in statements] == [
            f"from {runtime} import bind_system, run as _run", "from ._glue import DECLARATION",
            "SYSTEM = bind_system(__name__, DECLARATION)"]
        return
    *imports, declaration = statements
    assert ast.unparse(imports[0]) == f"import {kernels_module} as _kernels"
    assert all(isinstance(i, ast.ImportFrom) and i.module in _DECLARATION_IMPORTS for i in imports[1:])
    assert isinstance(declaration, ast.Assign) and [t.id for t in declaration.targets] == ["DECLARATION"]
    assert isinstance(declaration.value, ast.Call) and declaration.value.func.id == "SystemDeclaration"
    for node in ast.walk(declaration.value):
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in _CONSTRUCTORS
        elif isinstance(node, ast.Attribute):
            assert isinstance(node.value, ast.Name) and node.value.id == "_kernels"
        elif isinstance(node, ast.Name):
            assert node.id in _CONSTRUCTORS | {"_kernels"}


def import_glue(files: dict[Path, str], kernel_names: list[str]) -> dict[str, types.ModuleType]:
    """Execute generated glue (declaration, then each binding) against a kernels module whose functions
    fail if anything calls them; returns the modules by file name."""
    package, kernels = types.ModuleType("hostile_pkg"), types.ModuleType("hostile_pkg.kernels")

    def never(*_args, **_kwargs):
        raise AssertionError("importing glue called a kernel")

    for name in kernel_names:
        setattr(kernels, name, never)
    package.kernels = kernels
    system = types.ModuleType("hostile_sys")
    system.__path__ = []
    modules = {"hostile_pkg": package, "hostile_pkg.kernels": kernels, "hostile_sys": system}
    for path in sorted(files, key=lambda p: p.name != "_glue.py"):  # the declaration first: the bindings import it
        modules[f"hostile_sys.{path.stem}"] = module = types.ModuleType(f"hostile_sys.{path.stem}")
        module.__package__ = "hostile_sys"
    saved = {n: sys.modules.get(n) for n in modules}
    sys.modules.update(modules)
    try:
        for path in sorted(files, key=lambda p: p.name != "_glue.py"):
            module = modules[f"hostile_sys.{path.stem}"]
            exec(compile(files[path], str(path), "exec"), module.__dict__)  # noqa: S102 - the point of the test
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return {name.removeprefix("hostile_sys.") + ".py": m for name, m in modules.items() if name.startswith("hostile_sys.")}


_STANDARD = {"spmm_sum", "spmm_sum_backward", "spmm_weight_backward"}
_identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in RESERVED_NAMES and n not in _STANDARD)
_hostile_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=300)
_NASTY = ["x\nimport os\nos.system('echo pwned')\n#", "a'b\"c", "back\\slash", "\u00e9\u2028\u00fc", "x" * 300,
          "'''", '"""', "\r\n", "\x0c", "\\n"]
_hostile_names = st.one_of(st.sampled_from(_NASTY),
                           _hostile_text.filter(lambda t: t not in ("", ".", "..") and "/" not in t))
_numbers = st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=False, allow_infinity=False))

HOSTILE = """\
system {system} 0.1
    summary {summary}
    kernels hostile_pkg.kernels
    provides spmm_sum
    frameworks {frameworks}

kernel {kernel} implements gat_aggregate
    attr   negative_slope: float
    input  x: float[S, H, D]
    input  score_src: float[S, H]
    input  score_dst: float[N, H]
    output out: float[N, H, D]
    saves  {save}: float[N, H]
    grad   x = {helper}(x, {save}, negative_slope={number}) transposed

kernel {helper}
    attr   negative_slope: float
    input  {a}: float[N, H, D]
    input  {b}: float[S, H]
    output {c}: float[N, H, D]
"""


def _spec_string(text: str) -> str:
    """``text`` as a spec string literal (the grammar's ESCAPED_STRING, read back with literal_eval)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\x0b", "\\x0b").replace(
        "\x0c", "\\x0c").replace("\x1c", "\\x1c").replace("\x1d", "\\x1d").replace("\x1e", "\\x1e").replace(
        "\x85", "\\x85").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") + '"'


@settings(max_examples=60, deadline=None)
@given(folder=_hostile_names, file=_hostile_names, summary=_hostile_text, number=_numbers,
       names=st.lists(_identifiers, min_size=7, max_size=7, unique=True))
def test_hostile_specs_and_file_names_generate_only_definitions(folder, file, summary, number, names):
    system, kernel, save, helper, a, b, c = names
    assume(save not in ("x", "score_src", "score_dst", "out"))
    text = HOSTILE.format(frameworks=_FRAMEWORKS, system=system, summary=_spec_string(summary), kernel=kernel, save=save, helper=helper,
                          number=repr(number), a=a, b=b, c=c)
    spec = parse_spec(text, f"/tmp/{folder}/{file}.gnn")
    assert spec.summary == summary
    files = generate(spec)
    assert len(files) == 1 + len(_FRAMEWORKS.split(", "))
    for path, source in files.items():
        assert_definitions_only(path, source, "hostile_pkg.kernels")
        template = "glue.py.j2" if path.name == "_glue.py" else "glue_framework.py.j2"
        shown = source.splitlines()[0].removeprefix(f"# @generated by gnnbench.dsl.gen from {template} and ")
        assert ast.literal_eval(shown.removesuffix("; do not edit")).endswith(f"{folder}/{file}.gnn")
    modules = import_glue(files, [k.name for k in spec.kernels])
    assert modules["_glue.py"].DECLARATION.name == system
    for framework in _FRAMEWORKS.split(", "):
        glue = modules[f"_glue_{framework}.py"].SYSTEM
        assert glue.name == system and glue.framework == framework and glue.spec_path.endswith(f"{file}.gnn")
        (impl,) = glue.operators["gat_aggregate"]
        assert impl.kernel == kernel
        assert impl.apply.__self__.plan.rules[0].bound == (("negative_slope", number),)
    for module in modules.values():
        defined = set(vars(module)) - {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtins__"}
        assert defined <= {"SYSTEM", "DECLARATION", "bind_system", "_run", "_kernels", *_CONSTRUCTORS}


@pytest.mark.parametrize("name", ["x\nimport os\nos.system('echo pwned')\n#", "a'b\"c\\d", "\u00e9" * 100])
def test_a_spec_file_name_reaches_glue_only_as_a_literal(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    spec_path = folder / f"{name[:40]}.gnn"
    spec_path.write_text(TINY, encoding="utf-8")
    for path, source in generate(load_spec(spec_path)).items():
        assert_definitions_only(path, source, "tiny.kernels")
        assert "import os" not in [line.strip() for line in source.splitlines()]


def test_the_escaping_helper_refuses_what_has_no_literal():
    assert py_literal(1e300) == "1e+300" and py_literal(-0.5) == "-0.5"
    with pytest.raises(ValueError, match="non-finite"):
        py_literal(float("inf"))
    hostile = 'x"); import os; os.system("echo pwned'
    assert ast.literal_eval(py_literal(hostile)) == hostile
