"""Internal entry point of an isolated run: ``python -m gnnbench.run.worker CONFIG.json RESULT.json``.

Writes the results row, or a failure row for an expected error (unavailable
system, bad input such as a dataset that cannot be downloaded), to RESULT.json.
Bad input is one line with no traceback (Note [bad input in a worker] in
:mod:`gnnbench.run.runner`). Anything unexpected propagates, so the parent sees
a non-zero exit and keeps the traceback from stderr. Progress
events go to the pipe named by ``$GNNBENCH_EVENTS_FD`` when the parent opened
one (Note [progress channel] in :mod:`gnnbench.run.events`).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import traceback
from pathlib import Path


def die_with_parent() -> None:
    """Ask Linux to kill this worker when its parent dies, so a cancelled sweep leaves no orphan."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def limit_and_pin(data: dict) -> None:
    """What a measurement process does first, before any framework starts a thread: the memory limit, death with
    its parent, the pinned CPUs (Note [pinned runs]). A fresh worker and a forked one
    (:mod:`gnnbench.run.warm`) both call it, with the config's ``data`` as the parent wrote it."""
    if data.get("memory_limit"):
        limit = int(data["memory_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    die_with_parent()
    from gnnbench.run.pinning import pin

    pin(data.get("cpus"))  # before any framework starts a thread (Note [pinned runs])


def run_from_config(data: dict) -> dict:
    """Train the run ``data`` names and return its row, or the row of an expected failure (module docstring);
    anything unexpected propagates. Progress goes to ``$GNNBENCH_EVENTS_FD`` when set."""
    from gnnbench.run.events import event_pipe

    report = event_pipe()  # progress to the parent (Note [progress channel])

    from gnnbench.run.config import RunConfig
    from gnnbench.errors import UnavailableError, UserError
    from gnnbench.check.run_check import RunCheckError
    from gnnbench.run.harness import train
    from gnnbench.run.record import BAD_INPUT, run_record
    from gnnbench.results.store import utc_now

    config = RunConfig.from_dict(data)  # validated again: the same checks as the parent's
    started = utc_now()
    try:
        return train(config, on_event=report)
    except UnavailableError as err:  # e.g. the model needs an operator the system does not implement
        traceback.print_exc()  # into the run's stderr log, which the parent keeps (Note [process group])
        return run_record(config, "skipped", error=str(err).splitlines()[0], stderr=traceback.format_exc(),
                          timestamp=started)
    except UserError as err:  # bad input found only here: one line, no traceback (Note [bad input in a worker])
        return run_record(config, "failed", error=(str(err).splitlines() or [type(err).__name__])[0],
                          timestamp=started, extra={BAD_INPUT: True})
    except RunCheckError as err:  # Note [run-time check]: the system's output is wrong on this run's graph
        traceback.print_exc()
        return run_record(config, "failed", error=str(err).splitlines()[0], stderr=traceback.format_exc(),
                          timestamp=started, extra={"run_check": err.details})
    except MemoryError:
        traceback.print_exc()
        return run_record(config, "oom", error="out of memory (MemoryError) under the memory limit",
                          stderr=traceback.format_exc(), timestamp=started)


def write_row(row: dict, result: str) -> None:
    """Write ``row`` to ``result`` whole: a parent never reads half a row."""
    tmp = Path(result + ".tmp")
    tmp.write_text(json.dumps(row, default=float))
    tmp.replace(result)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gnnbench.run.worker")
    parser.add_argument("config")
    parser.add_argument("result")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.config).read_text())
    limit_and_pin(data)
    write_row(run_from_config(data), args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
