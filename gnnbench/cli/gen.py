"""``gnnbench gen``: regenerate systems' glue from their specs, or check it for drift."""
from __future__ import annotations

import sys
from pathlib import Path

from gnnbench.errors import UserError

HELP = "regenerate framework glue from .gnn specs (--check: fail on drift)"


def add_arguments(p) -> None:
    p.add_argument("targets", nargs="*", metavar="SYSTEM|PATH", help="systems or spec files (default: all)")
    p.add_argument("--check", action="store_true", help="exit 1 when checked-in glue differs from its spec")
    p.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")


def resolve(targets: list[str]) -> list[Path]:
    from gnnbench.runtime.registry import spec_source

    paths = []
    for t in targets:
        p = Path(t)
        if p.suffix == ".gnn" or p.exists():
            if not p.is_file():
                raise UserError(f"no spec file at {t}")
            paths.append(p)
            continue
        # a system name, found the way every command finds it (gnnbench.runtime.discovery): systems/,
        # GNNBENCH_SYSTEMS_PATH or an entry point; its glue is written beside its spec
        paths.append(spec_source(t).spec_path)
    return paths


def run(targets: list[str] | None = None, check: bool = False, dry_run: bool = False):
    from gnnbench.dsl.gen import regenerate

    return regenerate(resolve(targets or []) or None, check=check, dry_run=dry_run)


def main(args) -> int:
    writer = run(args.targets, args.check, args.dry_run)
    if args.check:
        if writer.drift:
            sys.stdout.write("".join(writer.drift))
            print("generated glue is out of date; run `gnnbench gen` and commit the result", file=sys.stderr)
            return 1
        print(f"glue up to date ({len(writer.unchanged)} files)")
        return 0
    verb = "would write" if args.dry_run else "wrote"
    for path in writer.written:
        print(f"{verb} {path}")
    for path in writer.removed:
        print(f"removed stale {path}")
    if not writer.written and not writer.removed:
        print(f"glue up to date ({len(writer.unchanged)} files)")
    return 0
