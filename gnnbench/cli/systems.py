"""``gnnbench systems``: every system, whether it runs here, and why not."""
from __future__ import annotations

from ._common import print_json

HELP = "list kernel systems and native baselines, available or not and why"


def add_arguments(p) -> None:
    p.add_argument("--framework", default="torch", help="check availability for this framework (default: torch)")
    p.add_argument("--device", default="cpu", help="check availability for this device (default: cpu)")
    p.add_argument("--json", action="store_true")


def run(framework: str = "torch", device: str = "cpu") -> list[dict]:
    from gnnbench.frameworks import framework_available
    from gnnbench.registry import list_systems

    fw_reason = framework_available(framework)
    out = []
    for info in list_systems():
        reason = fw_reason or info.unavailable_reason(framework, device)
        out.append({"name": info.name, "kind": info.kind, "version": info.version, "available": reason is None,
                    "reason": reason or "", "devices": list(info.devices), "frameworks": list(info.frameworks),
                    "operators": list(info.operators), "summary": info.summary})
    return out


def main(args) -> int:
    rows = run(args.framework, args.device)
    if args.json:
        print_json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        state = "available" if r["available"] else "unavailable"
        print(f"{r['name']:<{width}}  {r['kind']:<6}  {state:<11}  {r['summary'] if r['available'] else r['reason']}")
    return 0
