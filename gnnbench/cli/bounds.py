"""``gnnbench bounds``: this machine's STREAM and random-gather bandwidth, measured once and cached."""
from __future__ import annotations

from ._common import print_json

HELP = "show this machine's STREAM triad and random-gather bounds (measured once per machine, then cached)"


def add_arguments(p) -> None:
    p.add_argument("--threads", type=int, default=None, help="threads to measure on (default: all)")
    p.add_argument("--refresh", action="store_true", help="measure again even when cached")
    p.add_argument("--json", action="store_true", help="print the bounds as one JSON object")


def run(threads=None, refresh=False):
    from gnnbench.run.bounds import machine_bounds

    return machine_bounds(threads, refresh=refresh)


def main(args) -> int:
    from dataclasses import asdict

    from gnnbench.errors import UserError

    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1 (got {args.threads})")
    b = run(args.threads, args.refresh)
    if args.json:
        print_json(asdict(b))
    else:
        print(f"{b.describe()} (measured {b.measured_at}; Note [spmm figures] in gnnbench/run/bounds.py)")
    return 0
