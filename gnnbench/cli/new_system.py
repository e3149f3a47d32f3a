"""``gnnbench new-system NAME``: scaffold a spec, a kernel file to fill, and a conformance test."""
from __future__ import annotations

import keyword
from pathlib import Path

import jinja2

from gnnbench.errors import UserError

HELP = "scaffold a new kernel system (spec, kernels to fill, conformance test, generated glue)"


def add_arguments(p) -> None:
    p.add_argument("name", help="system name (a Python identifier)")
    p.add_argument("--dir", default=None, help="folder to create NAME/ in (default: gnnbench's systems/); "
                   "a folder outside needs GNNBENCH_SYSTEMS_PATH")
    p.add_argument("--tests", default=None, help="folder for the test (default: tests/systems/NAME beside systems/)")


def run(name: str, folder: str | None = None, tests: str | None = None) -> list[Path]:
    """Create the files; refuses to overwrite anything. Returns the paths written."""
    from gnnbench.dsl.gen import regenerate, systems_root

    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise UserError(f"system name '{name}' must be a Python identifier (letters, digits, _; not a keyword)")
    from gnnbench.registry import list_systems

    if any(s.name == name for s in list_systems()):
        raise UserError(f"a system named '{name}' already exists")
    root = Path(folder) if folder else systems_root()
    target = root / name
    in_package = root.resolve() == systems_root()
    kernels_module = f"gnnbench.systems.{name}.kernels" if in_package else f"{name}.kernels"
    test_dir = Path(tests) if tests else (systems_root().parent / "tests" / "systems" / name)
    files = {
        target / f"{name}.gnn": "spec.gnn.j2",
        target / "kernels.py": "kernels.py.j2",
        target / "__init__.py": None,
        test_dir / f"test_{name}_conformance.py": "test.py.j2",
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise UserError(f"refusing to overwrite {', '.join(existing)}")
    import gnnbench.dsl

    templates = Path(gnnbench.dsl.__file__).resolve().parent / "templates" / "new_system"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    written = []
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f'"""The {name} kernel system."""\n' if template is None else \
            env.get_template(template).render(name=name, kernels_module=kernels_module)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    writer = regenerate([target / f"{name}.gnn"])
    from gnnbench.registry import forget_systems

    forget_systems()
    return written + writer.written


def main(args) -> int:
    for path in run(args.name, args.dir, args.tests):
        print(f"created {path}")
    print(f"next: fill in the kernels, then `gnnbench verify --system {args.name}` and "
          f"`gnnbench run --system {args.name} --model gcn`")
    return 0
