"""Internal entry point of an isolated run: ``python -m gnnbench.worker SPEC.json RESULT.json``.

Writes the results row, or a failure row for an expected error (unavailable
system, bad dataset), to RESULT.json. Anything unexpected propagates, so the
parent sees a non-zero exit and keeps the traceback from stderr.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import traceback
from pathlib import Path


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when its parent dies, so a cancelled sweep leaves no orphan."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gnnbench.worker")
    parser.add_argument("spec")
    parser.add_argument("result")
    parser.add_argument("--memory-limit", type=int, default=None)
    args = parser.parse_args(argv)
    if args.memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (args.memory_limit, args.memory_limit))
    _die_with_parent()

    from gnnbench.errors import UnavailableError, UserError
    from gnnbench.harness import TaskSpec, train
    from gnnbench.runner import failure_row

    spec = TaskSpec.from_dict(json.loads(Path(args.spec).read_text()))
    try:
        row = train(spec)
    except UnavailableError as err:  # e.g. the model needs an operator the system does not implement
        row = failure_row(spec, "skipped", str(err).splitlines()[0], traceback.format_exc())
    except UserError as err:
        row = failure_row(spec, "failed", str(err).splitlines()[0], traceback.format_exc())
    except MemoryError:
        row = failure_row(spec, "oom", "out of memory (MemoryError) under the memory limit", traceback.format_exc())
    tmp = Path(args.result + ".tmp")
    tmp.write_text(json.dumps(row, default=float))
    tmp.replace(args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
