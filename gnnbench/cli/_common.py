"""Helpers shared by commands: results-store option, key=value parsing, JSON output, `--strict`'s exit status."""
from __future__ import annotations

import json
import sys
from typing import Any

from gnnbench.errors import UserError

__all__ = ["add_results_option", "open_store", "parse_options", "print_json", "results_path", "strict_status"]


def add_results_option(parser) -> None:
    parser.add_argument("--results", metavar="PATH", default=None,
                        help="results database (default: $GNNBENCH_RESULTS or results/gnnbench.sqlite); "
                             "compare, plot and report also read a campaign's committed rows, "
                             "results/rows/NAME.jsonl.gz")


def results_path(path: str | None):
    from gnnbench.results.store import default_results_path

    return path or default_results_path()


def open_store(path: str | None, create: bool = True):
    """The results store; commands that only read pass ``create=False`` (Note [store first])."""
    from gnnbench.results.store import ResultsStore

    return ResultsStore(results_path(path), create=create)


def parse_options(pairs: list[str] | None, flag: str) -> tuple[tuple[str, str], ...]:
    from gnnbench.run.config import parse_options as parse

    try:
        return parse(pairs)
    except ValueError as err:
        raise UserError(f"{flag} {err}") from None


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, default=float)
    sys.stdout.write("\n")


def strict_status(strict: bool, result) -> int:
    """``--strict``'s exit status for a comparison, saying on stderr what failed it."""
    if not strict:
        return 0
    if result.regressions:
        print(f"gnnbench compare: --strict: {len(result.regressions)} result(s) regressed (+) or did not "
              f"succeed (!)", file=sys.stderr)
    if result.unclaimed:
        print(f"gnnbench compare: --strict: {len(result.unclaimed)} speedup(s) claim no significance: a figure "
              f"is unstable (see the CI column)", file=sys.stderr)
    return 1 if result.regressions or result.unclaimed else 0
