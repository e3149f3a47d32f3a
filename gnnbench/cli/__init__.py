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


def _silence_stdout() -> None:
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class _OutputFailed(Exception):
    """stdout refused what a command printed (a full device, an I/O error): one line and exit status 1."""


class _GuardedStdout:
    """``sys.stdout`` while a command runs: a write or flush that fails (other than a closed pipe) becomes
    :class:`_OutputFailed`, so that it is told apart from a failure of a file the command opened itself."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _OutputFailed(err.strerror or str(err)) from None

    def flush(self):
        try:
            return self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise _OutputFailed(err.strerror or str(err)) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    from gnnbench.dsl.spec import SpecError
    from gnnbench.errors import UserError

    parser = build_parser()
    args = parser.parse_args(argv)  # --help and bad flags exit here (0; 2 with one line), as argparse does
    if args.command is None:  # bare `gnnbench`: the list of commands
        parser.print_help()
        return 0
    stdout, sys.stdout = sys.stdout, _GuardedStdout(sys.stdout)
    try:
        status = args._main(args) or 0
        sys.stdout.flush()
        return status
    except (UserError, SpecError) as err:
        from gnnbench.text import printable

        text = str(err)
        first, _, context = text.partition("\n")
        # Note [names escaped once]: the line may quote a name the user gave (argv, a campaign, a store)
        print(f"gnnbench {args.command}: {printable(first)}", file=sys.stderr)
        if context and isinstance(err, SpecError):
            print(printable(context, keep_newlines=True), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `gnnbench ... | head`: the reader left, nothing more to say
        _silence_stdout()
        return 0
    except _OutputFailed as err:
        sys.stdout = stdout
        _silence_stdout()  # the interpreter's last flush at exit would fail the same way
        print(f"gnnbench {args.command}: cannot write the output to stdout: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gnnbench: interrupted", file=sys.stderr)
        return 130
    finally:
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = stdout
