"""``gnnbench new-system`` (gnnbench/cli/new_system.py): names checked first, all or nothing, --dir self-contained."""
from __future__ import annotations

import pytest

from gnnbench.cli import main as cli
from gnnbench.cli import new_system
from gnnbench.runtime.registry import forget_systems


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.delenv("GNNBENCH_SYSTEMS_PATH", raising=False)
    forget_systems()
    yield tmp_path / "out"
    forget_systems()


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.mark.parametrize("name, message", [
    ("ñame", "system name 'ñame' holds the non-ASCII character 'ñ'; a system name is an ASCII Python identifier"),
    ("a" * 300, f"system name '{'a' * 40}...' (300 characters) is too long; "),
    ("class", "system name 'class' is a Python keyword; "),
    ("2fast", "system name '2fast' is not an identifier; "),
    ("_private", "system name '_private' is not an identifier; "),
    ("bad\nname", "system name 'bad\\nname' is not an identifier; "),
    ("mkl", "a system named 'mkl' already exists (see `gnnbench systems`); choose another name"),
    ("json", "system name 'json' is already an importable Python module; "),
])
def test_bad_names_are_one_line_exit_2_and_write_nothing(out, capsys, name, message):
    assert cli(["new-system", name, "--dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gnnbench new-system: {message}") and err.count("\n") == 1
    assert not out.exists()


def test_dir_keeps_everything_under_it_and_says_how_to_find_it(out, capsys):
    assert cli(["new-system", "mysys", "--dir", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert _tree(out) == ["mysys", "mysys/__init__.py", "mysys/_glue.py", "mysys/_glue_torch.py", "mysys/kernels.py",
                          "mysys/mysys.gnn", "tests", "tests/conftest.py", "tests/test_mysys_conformance.py"]
    assert f"next: make it findable: export GNNBENCH_SYSTEMS_PATH={out.resolve()} " in printed[-2]
    assert "'gnnbench.systems' entry point" in printed[-2]
    assert printed[-1].startswith(f"next: fill in the kernels in {out.resolve() / 'mysys' / 'kernels.py'}")


def test_no_findability_hint_when_the_folder_is_on_the_path(out, monkeypatch, capsys):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(out))
    out.mkdir()
    assert cli(["new-system", "pathed", "--dir", str(out)]) == 0
    assert not any("findable" in line for line in capsys.readouterr().out.splitlines())


def test_a_failure_after_writing_removes_what_was_written(out, monkeypatch):
    import gnnbench.dsl.gen as gen

    def explode(*args, **kwargs):
        raise RuntimeError("glue generation failed")

    monkeypatch.setattr(gen, "regenerate", explode)
    with pytest.raises(RuntimeError, match="glue generation failed"):
        new_system.run("halfway", str(out))
    assert not out.exists()


def test_an_existing_folder_is_never_overwritten(out, capsys):
    (out / "taken").mkdir(parents=True)
    (out / "taken" / "notes.txt").write_text("mine")
    assert cli(["new-system", "taken", "--dir", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert _tree(out) == ["taken", "taken/notes.txt"]
