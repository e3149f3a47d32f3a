"""``gnnbench new-system NAME``: scaffold a spec, a kernel file to fill, and a conformance test.

Note [scaffold all or nothing]
    The name is checked before anything is written: a name that cannot be a
    system (not an ASCII identifier, a keyword, too long, taken, an importable
    module for an out-of-tree system) is one line and exit status 2, and no
    folder appears. The files are then written into a hidden temporary folder
    beside the target (``.NAME.new-*``, which discovery skips) and renamed into
    place in one step; if generating the glue fails afterwards, the new folder
    and test are removed again. A failed ``new-system`` leaves nothing behind.
"""
from __future__ import annotations

import keyword
import os
import shutil
import tempfile
from pathlib import Path

import jinja2

from gnnbench.errors import UserError

HELP = "scaffold a new kernel system (spec, kernels to fill, conformance test, generated glue)"

#: longest system name: it becomes a folder, a module and a column value
MAX_NAME_LENGTH = 40

# Note [out-of-tree conftest]
#   The conftest written beside a new system's tests lets `pytest DIR/tests` find the systems of DIR without
#   any setting.
_CONFTEST = '''\
"""Written by `gnnbench new-system`: puts this folder's parent on GNNBENCH_SYSTEMS_PATH for pytest."""
import os
from pathlib import Path

_SYSTEMS = str(Path(__file__).resolve().parent.parent)
_PATH = [p for p in os.environ.get("GNNBENCH_SYSTEMS_PATH", "").split(os.pathsep) if p]
if _SYSTEMS not in _PATH:
    os.environ["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join([*_PATH, _SYSTEMS])
'''


def add_arguments(p) -> None:
    p.add_argument("name", help=f"system name: an ASCII Python identifier of at most {MAX_NAME_LENGTH} characters")
    p.add_argument("--dir", default=None, help="folder to create NAME/ in, with the test in DIR/tests/ "
                   "(default: gnnbench's systems/); found through GNNBENCH_SYSTEMS_PATH=DIR or an entry point")
    p.add_argument("--tests", default=None, help="folder for the test (default: tests/systems/NAME beside "
                   "systems/, or DIR/tests with --dir)")


def _shown(name: str) -> str:
    """The name as it may appear in one line of an error: quoted, escaped, and cut if long."""
    text = name if name.isprintable() else ascii(name)[1:-1]
    return f"'{text[:MAX_NAME_LENGTH]}...' ({len(name)} characters)" if len(text) > MAX_NAME_LENGTH else f"'{text}'"


def check_name(name: str, out_of_tree: bool) -> None:
    """Refuse a name that cannot be a system, before anything is written.

    Raises:
        UserError: the name is not an ASCII identifier starting with a letter, is
            a Python keyword, is longer than :data:`MAX_NAME_LENGTH`, is taken by a
            system, or (out of tree) is already an importable module.
    """
    from gnnbench.runtime.registry import system_names

    rule = (f"a system name is an ASCII Python identifier (letters, digits and _, starting with a letter) "
            f"of at most {MAX_NAME_LENGTH} characters, e.g. scipy_spmm")
    if len(name) > MAX_NAME_LENGTH:
        raise UserError(f"system name {_shown(name)} is too long; {rule}")
    if not name.isascii():
        bad = next(c for c in name if not c.isascii())
        raise UserError(f"system name {_shown(name)} holds the non-ASCII character {_shown(bad)}; {rule}")
    if not name.isidentifier() or name.startswith("_"):
        raise UserError(f"system name {_shown(name)} is not an identifier; {rule}")
    if keyword.iskeyword(name):
        raise UserError(f"system name '{name}' is a Python keyword; {rule}")
    if name in system_names():
        raise UserError(f"a system named '{name}' already exists (see `gnnbench systems`); choose another name")
    if out_of_tree:
        import importlib.util

        try:
            taken = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            taken = True
        if taken:
            raise UserError(f"system name '{name}' is already an importable Python module; an out-of-tree "
                            f"system's kernels are imported as {name}.kernels, so choose another name")


def _render(name: str, kernels_module: str) -> dict[str, str]:
    import gnnbench.dsl

    templates = Path(gnnbench.dsl.__file__).resolve().parent / "templates" / "new_system"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    render = lambda t: env.get_template(t).render(name=name, kernels_module=kernels_module)  # noqa: E731
    return {f"{name}.gnn": render("spec.gnn.j2"), "kernels.py": render("kernels.py.j2"),
            "__init__.py": f'"""The {name} kernel system."""\n', "test": render("test.py.j2")}


def _place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``, refusing to replace anything that appeared meanwhile."""
    if target.exists():
        raise UserError(f"refusing to overwrite {target}")
    staging.rename(target)


def _check_folder(flag: str, folder: Path) -> None:
    """``folder``, or the nearest of its parents that exists, is a folder: a file there is one line, up front."""
    while not folder.exists() and folder != folder.parent and not folder.is_symlink():
        folder = folder.parent
    if not folder.is_dir():
        raise UserError(f"{flag}: {folder} is {'a file' if folder.is_file() else 'not a folder'}; give a folder to "
                        f"create the system in")


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, outermost first (to undo a mkdir)."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def run(name: str, folder: str | None = None, tests: str | None = None) -> list[Path]:
    """Create the files (Note [scaffold all or nothing]); refuses to overwrite anything. Returns the paths written."""
    from gnnbench.dsl.gen import regenerate
    from gnnbench.places import systems_root
    from gnnbench.runtime.registry import forget_systems

    root = Path(folder).resolve() if folder else systems_root()
    in_package = root == systems_root()
    check_name(name, out_of_tree=not in_package)
    target = root / name
    if tests:
        test_dir = Path(tests).resolve()
    else:
        test_dir = (systems_root().parent / "tests" / "systems" / name) if in_package else root / "tests"
    test_file = test_dir / f"test_{name}_conformance.py"
    conftest = test_dir / "conftest.py" if not in_package and not tests else None
    existing = [str(p) for p in (target, test_file) if p.exists()]
    if existing:
        raise UserError(f"refusing to overwrite {', '.join(existing)}")
    for flag, given, folder_path in (("--dir", folder, root), ("--tests", tests, test_dir)):
        _check_folder(flag if given else "the folder", folder_path)

    files = _render(name, f"gnnbench.systems.{name}.kernels" if in_package else f"{name}.kernels")
    test_text = files.pop("test")
    written: list[Path] = []
    created = [d for d in _missing_folders(test_dir) + _missing_folders(root)]
    try:
        root.mkdir(parents=True, exist_ok=True)
        test_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=root))
        created.append(staging)
        for file_name, text in files.items():
            (staging / file_name).write_text(text, encoding="utf-8")
        _place(staging, target)
        created[-1] = target
        written += [target / file_name for file_name in files]
        fd, tmp = tempfile.mkstemp(prefix=f".{test_file.name}.", dir=test_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(test_text)
        os.replace(tmp, test_file)
        created.append(test_file)
        written.append(test_file)
        if conftest is not None and not conftest.exists():
            conftest.write_text(_CONFTEST, encoding="utf-8")
            created.append(conftest)
            written.append(conftest)
        writer = regenerate([target / f"{name}.gnn"])
    except BaseException as err:
        for path in reversed(created):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.is_file() or path.is_symlink():
                path.unlink(missing_ok=True)
        if isinstance(err, OSError):  # a place that cannot be written (/proc, a read-only mount): one line
            raise UserError(f"cannot create {err.filename or root}: {err.strerror or err}; nothing was "
                            f"written") from None
        raise
    finally:
        forget_systems()
    return written + writer.written


def next_steps(name: str, folder: str | None) -> list[str]:
    """What to do after scaffolding, including how an out-of-tree system is found."""
    from gnnbench.places import systems_path_folders
    from gnnbench.places import systems_root

    root = Path(folder).resolve() if folder else systems_root()
    steps = []
    if root != systems_root() and root not in systems_path_folders():
        steps.append(f"next: make it findable: export GNNBENCH_SYSTEMS_PATH={root} "
                     f"(or package it with a 'gnnbench.systems' entry point, see docs/out-of-tree.md)")
    steps.append(f"next: fill in the kernels in {root / name / 'kernels.py'}, then `gnnbench verify --system {name}` "
                 f"and `gnnbench run --system {name} --model gcn`")
    return steps


def main(args) -> int:
    for path in run(args.name, args.dir, args.tests):
        print(f"created {path}")
    for line in next_steps(args.name, args.dir):
        print(line)
    return 0
