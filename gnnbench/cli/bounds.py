"""``gnnbench bounds``: this machine's STREAM and random-gather bandwidth, measured once and cached."""
from __future__ import annotations

from ._common import print_json

HELP = "show this machine's STREAM triad and random-gather bounds (measured once per machine, then cached)"


def add_arguments(p) -> None:
    p.add_argument("--threads", type=int, default=None, help="threads to measure on, at most the CPUs this process may run on "
                   "(default: all)")
    p.add_argument("--refresh", action="store_true", help="measure again even when cached")
    p.add_argument("--json", action="store_true", help="print the bounds as one JSON object")


def run(threads=None, refresh=False):
    from gnnbench.run.bounds import machine_bounds

    return machine_bounds(threads, refresh=refresh)


def main(args) -> int:
    from dataclasses import asdict

    from gnnbench.run.preflight import check_threads

    check_threads(args.threads)  # as a run's (Note [limits of a run on this machine])
    b = run(args.threads, args.refresh)
    if args.json:
        print_json(asdict(b))
    else:
        print(f"{b.describe()} (measured {b.measured_at}; Note [spmm figures] in gnnbench/run/bounds.py)")
    return 0
