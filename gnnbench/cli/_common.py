"""Helpers shared by commands: results-store option, key=value parsing, JSON output."""
from __future__ import annotations

import json
import sys
from typing import Any

from gnnbench.errors import UserError

__all__ = ["add_results_option", "open_store", "parse_options", "print_json"]


def add_results_option(parser) -> None:
    parser.add_argument("--results", metavar="PATH", default=None,
                        help="results database (default: $GNNBENCH_RESULTS or results/gnnbench.sqlite)")


def open_store(path: str | None):
    from gnnbench.store import ResultsStore, default_results_path

    return ResultsStore(path or default_results_path())


def parse_options(pairs: list[str] | None, flag: str) -> tuple[tuple[str, str], ...]:
    out = []
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise UserError(f"{flag} expects KEY=VALUE (got {pair!r})")
        out.append((key, value))
    return tuple(out)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, default=float)
    sys.stdout.write("\n")
