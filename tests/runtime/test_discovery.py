"""Finding systems one at a time (gnnbench/runtime/discovery.py, gnnbench/runtime/registry.py): broken specs, duplicates, entry points."""
from __future__ import annotations

import shutil

import pytest

from gnnbench.cli import main as cli
from gnnbench.errors import UserError
from gnnbench.runtime.registry import forget_systems, list_systems, load_system, system_info, system_names
from tests.out_of_tree import installed_example, write_distribution

REFERENCE_SPEC = system_info("reference").spec_path


@pytest.fixture
def systems_path(tmp_path, monkeypatch):
    """An empty folder on GNNBENCH_SYSTEMS_PATH; the registry's caches forgotten before and after."""
    folder = tmp_path / "systems"
    folder.mkdir()
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(folder))
    forget_systems()
    yield folder
    forget_systems()


def _spec(folder, name, text):
    (folder / name).mkdir()
    (folder / name / f"{name}.gnn").write_text(text, encoding="utf-8")


def test_a_broken_spec_breaks_only_its_own_system(systems_path, capsys):
    _spec(systems_path, "broken", "system broken 0.1\n    frameworks tor:ch\n")
    _spec(systems_path, "garbled", "this is not a spec\n")
    infos = {i.name: i for i in list_systems()}
    assert infos["broken"].error and infos["garbled"].error
    assert not infos["reference"].error and infos["reference"].unavailable_reason() is None
    assert infos["garbled"].error.startswith(str(systems_path / "garbled" / "garbled.gnn") + ":1:")
    assert load_system("reference").name == "reference"

    assert cli(["systems"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["garbled"].split()[2] == "broken" and "garbled.gnn:1:" in lines["garbled"]
    assert lines["reference"].split()[2] == "available"

    assert cli(["run", "--system", "garbled", "--model", "gcn", "--dataset", "karate", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnnbench run: system 'garbled' is broken: ") and err.count("\n") == 1


def test_run_reference_works_with_a_broken_spec_on_the_path(systems_path, capsys):
    _spec(systems_path, "broken", "system broken 0.1\n    frameworks tor:ch\n")
    assert cli(["run", "--system", "reference", "--model", "gcn", "--dataset", "karate", "--epochs", "3",
                "--warmup", "1", "--in-process", "--no-store"]) == 0
    assert capsys.readouterr().out.startswith("reference ")


def test_only_the_asked_system_is_parsed(systems_path, monkeypatch):
    import gnnbench.dsl.parse as parse

    _spec(systems_path, "broken", "not a spec\n")
    read = []
    real = parse.load_spec
    monkeypatch.setattr(parse, "load_spec", lambda path: read.append(path) or real(path))
    assert "broken" in system_names() and not read   # listing names reads no spec
    system_info("reference")
    system_info("reference")                           # cached per file
    assert [str(p) for p in read] == [REFERENCE_SPEC]


def test_missing_kernels_module_and_leftover_folder(systems_path):
    text = open(REFERENCE_SPEC).read().replace("system reference", "system nokern", 1)
    kernels = next(line.split()[1] for line in text.splitlines() if line.strip().startswith("kernels "))
    _spec(systems_path, "nokern", text.replace(f"kernels {kernels}", "kernels nokern.kernels"))
    (systems_path / "left_behind").mkdir()            # a folder without a spec is not a system
    info = {i.name: i for i in list_systems()}["nokern"]
    assert info.error.startswith("its kernels module 'nokern.kernels' cannot be found")
    assert "left_behind" not in system_names()
    (systems_path / "nokern" / "kernels.py").write_text("")
    forget_systems()
    with pytest.raises(UserError, match="its prepare hook 'prepare' is not defined in kernels module 'nokern"):
        system_info("nokern")  # the spec names a prepare hook (Note [hook check])
    (systems_path / "nokern" / "kernels.py").write_text("def prepare(view):\n    return None\n")
    forget_systems()
    assert not system_info("nokern").error


def test_two_systems_with_one_name_fail_only_when_asked(systems_path):
    (systems_path / "reference").mkdir()
    shutil.copy(REFERENCE_SPEC, systems_path / "reference" / "reference.gnn")
    infos = {i.name: i for i in list_systems()}
    assert infos["reference"].error.startswith("two systems are named 'reference': ")
    assert system_info("mkl").name == "mkl"
    with pytest.raises(UserError) as err:
        system_info("reference")
    assert REFERENCE_SPEC in str(err.value) and str(systems_path / "reference" / "reference.gnn") in str(err.value)


def test_unknown_system_lists_choices_and_suggests(systems_path):
    with pytest.raises(UserError, match=r"^unknown system 'refrence'; choose one of: .*, reference, .*; did you "
                                        r"mean 'reference'\? \(systems outside gnnbench are found through "):
        system_info("refrence")


def test_entry_point_system_is_found_generated_in_its_folder_and_run(tmp_path, capsys):
    from gnnbench.places import systems_root

    with installed_example(tmp_path / "site") as package:
        info = system_info("extsp")
        assert info.origin.startswith("entry point extsp = extsp (gnnbench-extsp 0.1.0)")
        assert cli(["gen", "extsp"]) == 0
        assert capsys.readouterr().out.splitlines() == [f"wrote {package / '_glue.py'}", f"wrote {package / '_glue_torch.py'}"]
        assert not list(systems_root().glob("extsp*"))
        assert cli(["systems"]) == 0
        assert any(line.split()[:3] == ["extsp", "kernel", "available"] for line in capsys.readouterr().out.splitlines())
        assert cli(["run", "--system", "extsp", "--model", "gcn", "--dataset", "karate", "--epochs", "3",
                    "--warmup", "1", "--in-process", "--no-store"]) == 0
        assert capsys.readouterr().out.startswith("extsp 0.1 / gcn on karate")


def test_entry_point_to_a_missing_package_breaks_only_itself(tmp_path, monkeypatch):
    write_distribution(tmp_path, "gnnbench-ghost", {"ghost": "no_such_package_here"})
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_systems()
    try:
        infos = {i.name: i for i in list_systems()}
        assert "no_such_package_here" in infos["ghost"].error
        assert infos["reference"].unavailable_reason() is None
    finally:
        forget_systems()


def test_gen_names_an_out_of_tree_system(systems_path, capsys):
    assert cli(["new-system", "pathsys", "--dir", str(systems_path)]) == 0
    capsys.readouterr()
    assert cli(["gen", "pathsys"]) == 0
    assert capsys.readouterr().out.startswith("glue up to date")


def test_glue_from_before_the_declaration_file_is_one_line_naming_gnnbench_gen(systems_path, capsys):
    """An external system whose folder has only ``_glue_torch.py`` (the layout before ``_glue.py``) is skipped
    with one line that names the command to run, from the worker too, with no traceback on the terminal."""
    demo = REFERENCE_SPEC.replace("systems/reference/reference.gnn", "tests/demo_systems/demo_zero_backward")
    folder = systems_path / "demo_zero_backward"
    shutil.copytree(demo, folder, ignore=shutil.ignore_patterns("_glue*", "__pycache__"))
    (folder / "_glue_torch.py").write_text("raise AssertionError('old glue must not be imported')\n")
    code = cli(["run", "--system", "demo_zero_backward", "--model", "gcn", "--dataset", "karate", "--epochs", "3",
                "--warmup", "1", "--allocator", "system", "--no-store"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    assert out.strip().endswith(
        f"skipped: system 'demo_zero_backward' has no generated torch glue beside "
        f"{folder / 'demo_zero_backward.gnn'} (_glue.py missing); run `gnnbench gen demo_zero_backward`")


def _hooked_system(systems_path, capsys, kernels_extra: str = "") -> None:
    """A scaffolded system whose spec names a configure hook ``configure_it``; ``kernels_extra`` ends kernels.py."""
    assert cli(["new-system", "hooksys", "--dir", str(systems_path)]) == 0
    capsys.readouterr()
    spec = systems_path / "hooksys" / "hooksys.gnn"
    spec.write_text(spec.read_text().replace("    kernels hooksys.kernels\n",
                                             "    kernels hooksys.kernels\n    configure configure_it\n"))
    with open(systems_path / "hooksys" / "kernels.py", "a", encoding="utf-8") as fh:
        fh.write(kernels_extra)
    forget_systems()


@pytest.mark.parametrize("extra,problem", [
    ("", "its configure hook 'configure_it' is not defined in kernels module 'hooksys.kernels'"),
    ("\nconfigure_it = 3\n", "its configure hook 'configure_it' in kernels module 'hooksys.kernels' is not "
                             "callable (a constant)"),
])
def test_a_missing_or_uncallable_hook_is_refused_by_gen_and_shown_broken(systems_path, capsys, extra, problem):
    _hooked_system(systems_path, capsys, extra)
    kernels = systems_path / "hooksys" / "kernels.py"
    assert cli(["gen", "hooksys"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gnnbench gen: {systems_path / 'hooksys' / 'hooksys.gnn'}:")
    assert f"{problem} ({kernels})" in err
    assert cli(["systems"]) == 0
    line = next(li for li in capsys.readouterr().out.splitlines() if li.startswith("hooksys "))
    assert line.split()[2] == "broken" and problem in line
    assert cli(["run", "--system", "hooksys", "--model", "gcn", "--dataset", "karate", "-o", "x=1",
                "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnnbench run: system 'hooksys' is broken: ") and err.count("\n") == 1, err


def test_a_hook_that_is_no_function_at_run_time_is_one_line(systems_path, capsys):
    _hooked_system(systems_path, capsys, "\nconfigure_it = dict.get(globals(), 'no such name')\n")  # None, seen run
    assert cli(["gen", "hooksys"]) == 0
    capsys.readouterr()
    assert cli(["run", "--system", "hooksys", "--model", "gcn", "--dataset", "karate", "-o", "x=1",
                "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err == ("gnnbench run: system 'hooksys': its configure hook 'configure_it' in kernels module "
                   "'hooksys.kernels' is not callable (it is None); fix the module or the spec's `configure` line\n")
