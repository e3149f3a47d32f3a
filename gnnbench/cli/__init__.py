"""The ``gnnbench`` command line: thin commands over plain ``run(...)`` functions.

Each command is a module here with ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int`` (asv's ``Command``). Expected failures
(:class:`~gnnbench.errors.UserError`, :class:`~gnnbench.dsl.spec.SpecError`)
print one line and exit with status 2; anything else keeps its traceback.
Bare ``gnnbench`` prints the list of commands.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys

__all__ = ["main", "COMMANDS"]

#: command name -> module under gnnbench.cli
COMMANDS = {
    "run": "run",
    "ab": "ab",
    "systems": "systems",
    "datasets": "datasets",
    "results": "results",
    "gen": "gen",
    "new-system": "new_system",
    "tune": "tune",
    "verify": "verify",
    "sweep": "sweep",
    "campaign": "campaign",
    "compare": "compare",
    "plot": "plot",
    "report": "report",
    "regressions": "regressions",
    "history": "history",
    "bounds": "bounds",
    "machine": "machine",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad flags in one line with exit status 2.

    A list of negative numbers (``--fanouts -1,-1``) is a value, as ``-1`` alone is
    to argparse: no gnnbench flag starts with a digit.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-[0-9]+(,-?[0-9]+)*$|^-[0-9]*\.[0-9]+$")

    def error(self, message: str):
        self.exit(2, f"gnnbench {self.prog.split(' ', 1)[-1]}: error: {message}\n"
                  if " " in self.prog else f"gnnbench: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gnnbench", description="Fair, correct-before-fast benchmarks of GNN kernel systems.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"gnnbench.cli.{module_name}")
        except ModuleNotFoundError as err:
            if err.name != f"gnnbench.cli.{module_name}":
                raise
            continue
        # argparse %-formats a command's help (the list of commands) but prints its description as written
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"),
                           description=module.HELP + (f"\n\n{module.EPILOG}" if hasattr(module, "EPILOG") else ""),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    from gnnbench.dsl.spec import SpecError
    from gnnbench.errors import UserError

    parser = build_parser()
    args = parser.parse_args(argv)  # --help and bad flags exit here (0; 2 with one line), as argparse does
    if args.command is None:  # bare `gnnbench`: the list of commands
        parser.print_help()
        return 0
    try:
        return args._main(args) or 0
    except (UserError, SpecError) as err:
        text = str(err)
        first, _, context = text.partition("\n")
        print(f"gnnbench {args.command}: {first}", file=sys.stderr)
        if context and isinstance(err, SpecError):
            print(context, file=sys.stderr)
        return 2
    except BrokenPipeError:  # `gnnbench ... | head`: the reader left, nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("gnnbench: interrupted", file=sys.stderr)
        return 130
