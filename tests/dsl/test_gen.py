"""Generated glue: checked in, readable, drift-checked, and robust against hostile specs."""
from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gnnbench.cli import main as cli
from gnnbench.errors import UserError
from gnnbench.dsl.gen import GENERATED_MARK, GlueWriter, generate, py_literal, regenerate
from gnnbench.places import systems_root
from gnnbench.dsl.parse import load_spec, parse_spec
from gnnbench.dsl.spec import SpecError

from .test_parse import TINY


def test_checked_in_glue_matches_its_specs():
    writer = regenerate(check=True)
    assert writer.drift == [], "".join(writer.drift)


def test_a_folder_named_twice_on_the_systems_path_is_searched_once(monkeypatch, tmp_path):
    """A script that prepends its folder on every call must not make each system appear twice."""
    from gnnbench.dsl.gen import spec_paths
    from pathlib import Path

    aa = Path(__file__).resolve().parents[2] / "benchmarks" / "aa_systems"
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", f"{aa}:{aa}/:{tmp_path}/../{tmp_path.name}:{tmp_path}")
    found = [p for p in spec_paths() if p.parent.name == "aa_one"]
    assert len(found) == 1
    assert regenerate(check=True).drift == []


def test_glue_carries_a_header_naming_template_and_spec():
    spec = load_spec(systems_root() / "reference" / "reference.gnn")
    files = {path.name: text for path, text in generate(spec).items()}
    assert sorted(files) == ["_glue.py", "_glue_tensorflow.py", "_glue_torch.py"]
    for name, text in files.items():
        template = "glue.py.j2" if name == "_glue.py" else "glue_framework.py.j2"
        assert text.splitlines()[0] == (f"{GENERATED_MARK} from {template} and "
                                        "'systems/reference/reference.gnn'; do not edit")
        compile(text, name, "exec")


def test_glue_holds_only_what_is_particular_to_its_system():
    """A system that only provides standard kernels gets a table of its functions and nothing else."""
    spec = load_spec(systems_root() / "mkl" / "mkl.gnn")
    text = generate(spec)[systems_root() / "mkl" / "_glue.py"]
    assert "'spmm_sum': _kernels.spmm_sum,  # spmm(reduce=sum|mean)" in text
    assert "KernelSpec" not in text and "arg(" not in text and "float[" not in text
    assert len(text.splitlines()) <= 35


def test_a_system_declaration_is_written_once_for_every_framework():
    """The framework bindings name nothing of their system: the declaration in _glue.py is its only copy."""
    spec = load_spec(systems_root() / "isplib" / "isplib.gnn")
    files = {path.name: text for path, text in generate(spec).items()}
    torch_glue, tf_glue = files["_glue_torch.py"].splitlines(), files["_glue_tensorflow.py"].splitlines()
    assert torch_glue[3:] == ["from gnnbench.frameworks.torch_runtime import bind_system, run as _run  # noqa: F401",
                              "", "from ._glue import DECLARATION", "", "SYSTEM = bind_system(__name__, DECLARATION)"]
    assert tf_glue[3:] == [torch_glue[3].replace("torch_runtime", "tf_runtime"), *torch_glue[4:]]
    assert "isplib" not in "\n".join(torch_glue[1:] + tf_glue[1:])
    assert files["_glue.py"].count("'spmm_sum': _kernels.spmm_sum") == 1


def test_all_generated_glue_is_at_most_a_quarter_of_what_it_was():
    root = systems_root().parent
    folders = ("systems", "tests/demo_systems", "tests/sweep_systems", "benchmarks/bound_systems")
    files = [p for folder in folders for p in (root / folder).glob("*/_glue*.py")]
    assert len(files) >= 22
    assert sum(len(p.read_text().splitlines()) for p in files) <= 6370 // 4


def _copy_reference(tmp_path):
    folder = tmp_path / "reference"
    shutil.copytree(systems_root() / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_check_reports_drift_then_gen_fixes_it(tmp_path, capsys):
    folder = _copy_reference(tmp_path)
    glue = folder / "_glue_torch.py"
    glue.write_text(glue.read_text() + "# hand edit\n")
    assert cli(["gen", "--check", str(folder / "reference.gnn")]) == 1
    out = capsys.readouterr()
    assert "+# hand edit" not in out.out and "-# hand edit" in out.out
    assert "run `gnnbench gen`" in out.err
    assert cli(["gen", str(folder / "reference.gnn")]) == 0
    assert cli(["gen", "--check", str(folder / "reference.gnn")]) == 0


def test_writer_leaves_unchanged_files_alone_and_removes_stale_ones(tmp_path):
    folder = _copy_reference(tmp_path)
    regenerate([folder / "reference.gnn"])  # the header names the spec's own path
    stale = folder / "_glue_jax.py"  # a framework no spec generates any more
    stale.write_text(f"{GENERATED_MARK} from x and y; do not edit\n")
    hand_written = folder / "_glue_notes.py"
    hand_written.write_text("# not generated\n")
    before = (folder / "_glue_torch.py").stat().st_mtime_ns
    writer = regenerate([folder / "reference.gnn"])
    assert writer.written == [] and writer.removed == [stale]
    assert (folder / "_glue_torch.py").stat().st_mtime_ns == before
    assert hand_written.exists()


def test_dry_run_writes_nothing(tmp_path):
    folder = _copy_reference(tmp_path)
    regenerate([folder / "reference.gnn"])  # headers name the copy's own spec path
    (folder / "_glue_torch.py").unlink()
    writer = regenerate([folder / "reference.gnn"], dry_run=True)
    assert writer.written == [folder / "_glue_torch.py"]
    assert not (folder / "_glue_torch.py").exists()


def test_writer_refuses_two_writes_to_one_path(tmp_path):
    writer = GlueWriter(dry_run=True)
    writer.emit({tmp_path / "a.py": "x"})
    with pytest.raises(RuntimeError, match="two generated files"):
        writer.emit({tmp_path / "a.py": "y"})


def test_strings_reach_generated_code_only_as_literals():
    hostile = 'x"); import os; os.system("echo pwned'
    assert eval(py_literal(hostile)) == hostile
    assert eval(py_literal((hostile, 1, None))) == (hostile, 1, None)


def test_summary_with_quotes_is_escaped_in_glue(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    spec = parse_spec(TINY.replace("    kernels tiny.kernels", '    summary "say \\"hi\\"; import os"\n    kernels tiny.kernels'),
                      str(folder / "tiny.gnn"))
    for path, text in generate(spec).items():
        compile(text, str(path), "exec")
        assert "import os\n" not in text


def test_gen_rejects_unknown_system(capsys):
    assert cli(["gen", "no_such_system"]) == 2
    assert "unknown system 'no_such_system'; choose one of:" in capsys.readouterr().err


_LINES = TINY.splitlines(keepends=True)
_TOKENS = ["system", "kernel", "input", "output", "saves", "grad", "attr", "implements", "[", "]", ":", "?",
           "=", "0", "{", "}", "(", ")", ",", "*", "transposed", "float", "i64", "N", "E", "x", "\n", "  ", "#",
           "class", "spmm", "reduce", "in", '"', "\\", "\t", "é", "9x"]


@st.composite
def mutated_specs(draw):
    lines = list(_LINES)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "insert", "swap"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            line = lines[i]
            pos = draw(st.integers(0, len(line)))
            lines[i] = line[:pos] + draw(st.sampled_from(_TOKENS)) + line[pos:]
    return "".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(mutated_specs(), st.text(max_size=200)))
def test_compiler_returns_a_spec_or_its_own_error_and_never_a_partial_file(tmp_path, text):
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    spec_path = folder / "fuzz.gnn"
    spec_path.write_text(text, encoding="utf-8")
    try:
        spec = load_spec(spec_path)
    except SpecError as err:
        assert err.message
        return
    files = generate(spec)
    for path, source in files.items():
        compile(source, str(path), "exec")
    writer = GlueWriter()
    writer.emit(files)
    assert sorted(p.name for p in folder.iterdir()) == sorted(["fuzz.gnn", *(p.name for p in files)])


# ---- Note [writes refuse links]: glue is written only where it belongs

def test_a_committed_tmp_link_is_never_written_through(tmp_path):
    folder = _copy_reference(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (folder / "_glue.tmp").symlink_to(victim)  # what the old writer wrote to, then renamed
    regenerate([folder / "reference.gnn"])
    (folder / "_glue_torch.py").unlink()
    assert regenerate([folder / "reference.gnn"]).written == [folder / "_glue_torch.py"]
    assert victim.read_text() == "precious" and (folder / "_glue.tmp").is_symlink()


def test_a_glue_file_that_is_a_link_is_one_line_and_left_alone(tmp_path):
    folder = _copy_reference(tmp_path)
    regenerate([folder / "reference.gnn"])
    victim = tmp_path / "victim.py"
    victim.write_text("precious")
    (folder / "_glue_torch.py").unlink()
    (folder / "_glue_torch.py").symlink_to(victim)
    with pytest.raises(UserError) as err:
        regenerate([folder / "reference.gnn"])
    assert str(err.value) == (f"{folder / '_glue_torch.py'} is a symbolic link (to {victim}); remove it and try "
                              f"again: gnnbench writes only its own files, never through a link (Note [writes "
                              f"refuse links])")
    assert victim.read_text() == "precious"


def test_a_system_folder_linking_out_of_the_trusted_folder_gets_no_glue(tmp_path):
    """history's finding: a commit's system folder committed as a link had its glue regenerated where it led."""
    elsewhere = _copy_reference(tmp_path / "elsewhere")
    regenerate([elsewhere / "reference.gnn"])
    (elsewhere / "_glue_torch.py").unlink()
    systems = tmp_path / "tree"
    systems.mkdir()
    (systems / "reference").symlink_to(elsewhere)
    with pytest.raises(UserError) as err:
        regenerate([systems / "reference" / "reference.gnn"], within=systems)
    assert str(err.value).startswith(f"{systems / 'reference'} is a symbolic link (to {elsewhere}); remove it")
    assert not (elsewhere / "_glue_torch.py").exists()
