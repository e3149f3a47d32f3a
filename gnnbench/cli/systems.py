"""``gnnbench systems``: every system, whether it runs here, and why not.

A system whose spec cannot be read is listed as ``broken`` with its one-line
error; every other system still lists and runs (Note [discovery one system at
a time] in :mod:`gnnbench.runtime.discovery`).
"""
from __future__ import annotations

from gnnbench.text import printable

from ._common import print_json

HELP = "list kernel systems and native baselines, available or not and why"


def add_arguments(p) -> None:
    p.add_argument("--framework", default="torch", help="check availability for this framework (default: torch)")
    p.add_argument("--device", default="cpu", help="check availability for this device (default: cpu)")
    p.add_argument("--json", action="store_true")


def run(framework: str = "torch", device: str = "cpu") -> list[dict]:
    from gnnbench.frameworks import framework_available
    from gnnbench.runtime.registry import list_systems

    fw_reason = framework_available(framework)
    out = []
    for info in list_systems():
        reason = info.error or fw_reason or info.unavailable_reason(framework, device)
        out.append({"name": info.name, "kind": info.kind, "version": info.version, "available": reason is None,
                    "broken": bool(info.error), "reason": reason or "", "devices": list(info.devices),
                    "frameworks": list(info.frameworks), "operators": list(info.operators),
                    "summary": info.summary, "origin": info.origin, "spec_path": info.spec_path})
    return out


def main(args) -> int:
    rows = run(args.framework, args.device)
    if args.json:
        print_json(rows)
        return 0
    from gnnbench.results.tables import print_table

    print_table(table(rows))
    return 0


def table(rows: list[dict]):
    """One line per system: name, kind, state, and its summary or why it cannot run here."""
    from gnnbench.results.tables import Table

    def state(r: dict) -> str:
        return "broken" if r["broken"] else "available" if r["available"] else "unavailable"

    return Table(["system", "kind", "state", "summary, or why not"],
                 [[printable(r["name"]), r["kind"], state(r), r["summary"] if r["available"] else r["reason"]]
                  for r in rows])

