"""Cheap measurement processes: a warm parent that has paid the start-up once and forks each measurement.

``with WarmParent(configs) as parent: row = parent.run(config)`` starts one fresh
Python process (the *warm parent*) with the environment a worker gets
(:func:`~gnnbench.run.runner.worker_env`: the allocator preloaded, the thread
pools configured), which imports the framework, the systems and the platform
and loads the datasets the configurations name, then waits on a socket. Each
:meth:`WarmParent.run` makes it fork a child that runs the worker's own code
(:func:`~gnnbench.run.worker.limit_and_pin`, :func:`~gnnbench.run.worker.run_from_config`)
under the same limits, in a process group of its own, and the row is made
from how the child ended exactly as for a fresh worker
(:func:`~gnnbench.run.runner.outcome_row`), with ``extra.process_start`` =
``fork`` and ``extra.warm_parent`` naming the parent.

Note [cheap processes]
    A fresh worker pays Python's start-up, ``import torch`` (1.5 s on this
    project's machine), the platform's and the system's imports, numba's
    CPU target and the dataset's load before its first epoch: many times
    the timed epochs of a short run on the A/A configuration (issue 54;
    results/studies/process_start_quiet.md has the figures). A fork of a
    process that has done all that costs a few milliseconds, so the budget
    of a comparison goes on processes, where the variance is (Kalibera and
    Jones).

    What a fork keeps of the variance between processes, and what it loses:

    * **Kept**: each child's own heap growth and mmaps from the fork on
      (the model's parameters, every tensor of the epochs) land on
      physical pages of their own, so page colouring, transparent huge
      page availability and NUMA placement vary as for a fresh process;
      the time it runs at (the slow drift neighbouring processes share,
      lag-1 autocorrelation 0.54 in issue 54), the host core behind the
      vCPU, the page cache's state, numba's pool and torch's OpenMP pool,
      started by the child (none is started in the parent: below).
    * **Lost, within one parent**: the virtual layout. Linux randomises
      the stack, mmap base, heap (brk) and vDSO only at ``exec``; a fork
      inherits its parent's, and since the child allocates in the same
      order from the same allocator state (tcmalloc's or jemalloc's,
      inherited too) its tensors land at the same virtual addresses in
      every fork (checked under tcmalloc: two forks of one parent got a
      NumPy array, a torch tensor and a Python object at the same
      addresses; two parents at different ones). Issue 54 measured that layout is a large part of the
      spread (10-12 % with ASLR, 6-8 % under ``setarch -R``): forks of
      one parent sample it once. Also shared: Python's hash seed (set
      orders), the imports' order and what the parent's preparation left
      in the allocator, the dataset's mapping (loaded in the parent),
      and numba's CPU target.
    * So the layout is sampled per *parent*: a comparison that pools
      forks of one parent treats layout luck as if it were no luck, and
      its interval is too narrow, the bias Mytkowicz et al. describe. The
      honest design is a fresh parent per round (a round = the paired
      processes of the systems compared, :meth:`WarmParent.renew` between
      rounds): the systems of a round share one layout draw, which pairing
      cancels in part, and rounds sample layouts as fresh processes do.
      The parent's start (the imports) is then paid once per round instead
      of once per process. Rows say which parent they came from
      (``extra.warm_parent``), so statistics can group them. (Not built:
      shifting each child's later allocations by a random number of pages,
      a cheap re-draw of the data's layout within one parent, though not
      of the code's; the benchmark would show whether it restores the
      fresh processes' spread.)

    Measured by ``benchmarks/studies/bench_process_start.py`` (results/studies/process_start_quiet.md),
    on the A/A configuration: the wall time per process and the spread of
    process medians across (a) fresh processes, (b) forks of one parent,
    (c) forks with a fresh parent per round of two, (d) the same with a
    spare parent (Note [a spare parent]). The figures are in that table:
    a fork's own overhead is a fraction of a fresh process's; a parent per
    round costs more, its start shared only by that round's processes (four
    in ``gnnbench ab``'s ABBA rounds), and less again with a spare parent.
    Re-measure with ``python benchmarks/studies/bench_process_start.py --rounds 20``
    (and ``--condition loaded``).

    **No thread pool before the fork.** A fork copies only the calling
    thread; a library whose pool was started in the parent (GNU OpenMP's,
    numba's workqueue) holds in the child the state of workers that do not
    exist, and its next parallel section hangs or crashes. The parent
    therefore imports and loads but computes nothing: no torch op, no
    ``torch.set_num_threads`` (whose pools the worker's
    :func:`~gnnbench.run.thread_pools.configure_this_process` sizes in the
    child, as a fresh worker does), no numba parallel section (the
    harness's transpose warm-up runs in each child). Before every fork it
    checks that numba's pool has not started and that it runs no thread
    beyond those present right after importing NumPy and SciPy's BLAS
    (their OpenBLAS pools, which shut down around a fork with
    ``pthread_atfork`` and start again when used);
    otherwise :class:`ForkUnsafe` is raised and the caller uses fresh
    processes.

    **Limits and isolation are the worker's.** The child starts its own
    session (so a timeout kills its whole group, Note [process group]),
    dies with its parent, which dies with the caller
    (``PR_SET_PDEATHSIG``), sets the memory limit and pins itself from
    the config (:func:`~gnnbench.run.worker.limit_and_pin`), writes its
    stderr to the run's log file and its events to the caller's pipe
    (both passed over the socket, ``SCM_RIGHTS``). Its time limit counts
    from the fork (a fresh worker's counts from ``exec``, imports
    included). Its exit status becomes the row's status as a fresh
    worker's does (Note [exit statuses]); a crash of the child leaves the
    parent serving; a parent that died is started again for the next run.

Note [a spare parent]
    With a fresh parent per round, each round waits for a parent's
    preparation (``import torch`` and the rest), a second or more, which
    the round's processes share. ``WarmParent(configs, spare=True)``
    launches the next parent as soon as one starts serving, so it prepares
    while the round's processes run and :meth:`WarmParent.renew` finds it
    ready. The price is a neighbour during the measurement: an importing
    process reads files and uses a CPU. So the spare prepares pinned to the
    allowed CPUs that the configurations are not pinned to (CPU 0 beside
    the A/A configuration's CPU 1), and a spare is an option, off by
    default; unpinned runs get it unpinned. Whether the neighbour moves the
    figures is for ``benchmarks/studies/bench_process_start.py`` to show (its way
    ``fork, spare parent per round``). Once prepared, a spare sleeps on its
    socket and costs nothing. Its children are pinned as the runs say, not
    where it prepared.
"""
from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gnnbench.run.config import RunConfig
from gnnbench.run.events import EVENTS_FD_ENV, RunEvent
from gnnbench.run.runner import (CONFIG_LIMIT, Outcome, failure_row, kill_group, outcome_row, reading_events,
                                 stderr_tail, worker_env, write_config)
from gnnbench.run.scratch import run_folder
from gnnbench.results.store import utc_now

__all__ = ["WarmParent", "ForkUnsafe", "PROCESS_STARTS", "process_settings", "measurement_processes"]

#: values of ``extra.process_start``: a new Python process, or a fork of a warm parent (Note [cheap processes])
PROCESS_STARTS = ("fresh", "fork")
#: seconds the caller waits for the warm parent to prepare (imports, datasets) before giving up
START_TIMEOUT_S = 600.0
#: seconds the caller waits for the parent to report a child it has just killed, or to exit when closed
GRACE_S = 10.0
_MESSAGE = 65536


class ForkUnsafe(RuntimeError):
    """The warm parent started a thread pool before forking (Note [cheap processes]): use fresh processes."""


def process_settings(configs: Sequence[RunConfig]) -> tuple[int | None, str, str | None]:
    """``(threads, allocator, cpus)`` the configurations share: what a process fixes when it starts (the thread
    pools' and the allocator's environment) and where its parent is pinned; ``cpus`` is None when they differ
    (each child pins itself).

    Raises:
        ValueError: no configurations, or ones whose threads or allocator differ (one parent cannot start
            with both).
    """
    if not configs:
        raise ValueError("a warm parent needs at least one configuration")
    for name in ("threads", "allocator"):
        values = {getattr(c, name) for c in configs}
        if len(values) > 1:
            raise ValueError(f"the configurations of one warm parent must share {name} (got "
                             f"{', '.join(sorted(map(str, values)))}): it is fixed when the parent starts")
    cpus = {c.cpus for c in configs}
    return configs[0].threads, configs[0].allocator, cpus.pop() if len(cpus) == 1 else None


class _ParentProcess:
    """One warm parent process: launched at once, ready when its preparation reports (:meth:`ready`)."""

    def __init__(self, configs: Sequence[RunConfig], env: dict[str, str], cpus: str | None,
                 prepare_cpus: str | None = None):
        self._scratch = run_folder()
        folder = self._scratch.__enter__()
        configs_path, self.log = Path(folder, "configs.json"), Path(folder, "parent.stderr")
        configs_path.write_text(json.dumps({"configs": [c.as_dict() for c in configs], "cpus": cpus,
                                            "prepare_cpus": prepare_cpus}))
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "gnnbench.run.warm", str(theirs.fileno()), str(configs_path)], env=env,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                    pass_fds=(theirs.fileno(),))
        except BaseException:
            self.sock.close()
            self._scratch.__exit__(None, None, None)
            raise
        finally:
            theirs.close()
        self.id: str | None = None

    def ready(self) -> None:
        """Wait until the parent has prepared; closes it and raises as :class:`WarmParent` says otherwise."""
        try:
            ready = self.receive(START_TIMEOUT_S)
        except (TimeoutError, EOFError) as err:
            why = "took too long to prepare" if isinstance(err, TimeoutError) else "exited while preparing"
            tail = "; ".join(stderr_tail(self.log_text(), 6))
            self.close()
            raise RuntimeError(f"the warm parent {why}" + (f": {tail}" if tail else "")) from None
        if ready.get("unsafe"):
            self.close()
            raise ForkUnsafe(ready["unsafe"])
        self.id = ready["id"]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def receive(self, timeout_s: float | None) -> dict[str, Any]:
        """The parent's next message; ``TimeoutError`` after ``timeout_s``, ``EOFError`` when it is gone."""
        self.sock.settimeout(timeout_s)
        try:
            message = self.sock.recv(_MESSAGE)
        except socket.timeout:
            raise TimeoutError from None
        except OSError:
            raise EOFError from None
        if not message:
            raise EOFError
        return json.loads(message)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        """End the parent (it exits when its socket closes; killed after :data:`GRACE_S`) and its group."""
        self.sock.close()
        try:
            self.proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        kill_group(self.proc.pid)
        self.proc.wait()
        self._scratch.__exit__(None, None, None)


class WarmParent:
    """A warm parent process that forks one measurement process per :meth:`run` (Note [cheap processes]).

    Use as a context manager; leaving it ends the parent and leaves no process behind::

        with WarmParent(configs) as parent:
            row = parent.run(config)    # the row run_task would store, extra.process_start = "fork"
            parent.renew()              # a fresh parent (a new memory layout) for the next round

    Args:
        configs (sequence of RunConfig): the runs it will fork: it imports their frameworks and systems and
            loads their datasets; they must share ``threads`` and ``allocator``.
        spare (bool): keep the next parent preparing while this one serves, so that :meth:`renew` finds it
            ready (Note [a spare parent]); default: False, a parent prepares only when needed.

    Raises (on entering, or on :meth:`run` or :meth:`renew` when it must start a parent):
        ValueError: configurations that cannot share one parent.
        UserError: an allocator that is not installed.
        ForkUnsafe: the parent started threads while preparing.
        RuntimeError: the parent failed to start (its stderr's last lines in the message).
    """

    def __init__(self, configs: Sequence[RunConfig], spare: bool = False):
        self.configs = list(configs)
        self.threads, self.allocator, self.cpus = process_settings(self.configs)
        self.spare = spare
        self.starts = 0               # parents started so far (a spare counts once it serves)
        self._parent: _ParentProcess | None = None
        self._spare: _ParentProcess | None = None

    # ---------------------------------------------------------------- the parent's life
    def __enter__(self) -> "WarmParent":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def start(self) -> None:
        """Start a parent and wait until it has prepared (a no-op if one is serving)."""
        if self._parent is not None:
            return
        parent, self._spare = self._spare or self._launch(), None
        parent.ready()  # closes it and raises when it could not prepare
        self._parent = parent
        self.starts += 1
        if self.spare:  # the next one prepares while this one serves (Note [a spare parent])
            self._spare = self._launch(beside=True)

    def renew(self) -> None:
        """End this parent and serve from a fresh one: a new memory layout for the runs that follow (Note [cheap
        processes]: a fresh parent per round); with ``spare``, the one that has been preparing."""
        self._end_parent()
        self.start()

    def close(self) -> None:
        """End the parent and the spare, leaving no process behind."""
        self._end_parent()
        if self._spare is not None:
            self._spare.close()
            self._spare = None

    def _end_parent(self) -> None:
        if self._parent is not None:
            self._parent.close()
            self._parent = None

    def _launch(self, beside: bool = False) -> _ParentProcess:
        """A parent process, preparing; ``beside`` a serving one, on CPUs its runs do not use where there are
        any (Note [a spare parent])."""
        env = worker_env(self.threads, self.allocator)  # raises UserError for an allocator not installed
        return _ParentProcess(self.configs, env, self.cpus, _other_cpus(self.configs) if beside else None)

    @property
    def id(self) -> str | None:
        """``extra.warm_parent`` of the rows of the serving parent; new with each parent."""
        return self._parent.id if self._parent is not None else None

    @property
    def pid(self) -> int | None:
        """The serving parent's process id."""
        return self._parent.proc.pid if self._parent is not None else None

    # ---------------------------------------------------------------- one measurement
    def run(self, config: RunConfig, on_event: Callable[[RunEvent], None] | None = None,
            timeout_s: float | None = CONFIG_LIMIT, memory_limit_bytes: int | None = CONFIG_LIMIT) -> dict[str, Any]:
        """Run ``config`` in a fork of the parent and return its row: the row
        :func:`~gnnbench.run.runner.run_task` would return, with ``extra.process_start`` = ``fork`` and
        ``extra.warm_parent`` (never raises for a failing system; bad input is a ``failed`` row as there).

        Raises:
            ValueError: ``config`` does not share the parent's threads and allocator.
            ForkUnsafe: the parent has started threads since it prepared.
        """
        if (config.threads, config.allocator) != (self.threads, self.allocator):
            raise ValueError(f"this warm parent runs threads={self.threads}, allocator={self.allocator}; the run "
                             f"asks for threads={config.threads}, allocator={config.allocator}")
        if self._parent is None or not self._parent.alive():  # never started, or died: a fresh one
            self.renew()
        timeout_s = config.timeout if timeout_s is CONFIG_LIMIT else timeout_s
        memory_limit = config.memory_limit if memory_limit_bytes is CONFIG_LIMIT else memory_limit_bytes
        started = utc_now()
        with run_folder() as tmp:
            config_path, result_path, err_path = write_config(tmp, config, memory_limit)
            events_read, events_write = os.pipe() if on_event is not None else (None, None)
            with open(err_path, "wb") as err_file, reading_events(events_read, on_event):
                try:
                    fds = [err_file.fileno()] + ([events_write] if events_write is not None else [])
                    pid = self._fork({"config": str(config_path), "result": str(result_path)}, fds)
                finally:
                    if events_write is not None:
                        os.close(events_write)  # the child holds the write end now: its exit ends the reader
                ident, log = self.id, self._parent.log_text()
                outcome = self._await(pid, timeout_s)
            if outcome is None:
                return failure_row(config, "crashed", "the warm parent died during the run (its log: "
                                   f"{'; '.join(stderr_tail(log, 3)) or 'empty'})",
                                   err_path.read_text(errors="replace"), started,
                                   {"process_start": "fork", "warm_parent": ident})
            return outcome_row(config, started, outcome, result_path, err_path, timeout_s, memory_limit)

    def _fork(self, request: dict[str, str], fds: list[int]) -> int:
        """Ask the parent to fork a child for ``request`` with ``fds`` (stderr, events); returns its pid. A parent
        found dead before it forked (killed between runs) is replaced once: nothing of the run ran yet."""
        for attempt in (1, 2):
            try:
                socket.send_fds(self._parent.sock, [json.dumps(request).encode()], fds)
                reply = self._parent.receive(GRACE_S)
            except (OSError, EOFError) as err:
                if attempt == 2:
                    raise RuntimeError(f"the warm parent died before forking the run, twice ({err!r})") from None
                self.renew()
                continue
            if "unsafe" in reply:
                raise ForkUnsafe(reply["unsafe"])
            return reply["pid"]
        raise AssertionError("unreachable")

    def _await(self, pid: int, timeout_s: float | None) -> Outcome | None:
        """The child's outcome; None when the parent died first (it is ended then; the next run starts one)."""
        ident, timed_out = self.id, False
        try:
            try:
                status = self._parent.receive(timeout_s)["exit"]
            except TimeoutError:
                timed_out = True
                kill_group(pid)  # Note [process group]
                status = self._parent.receive(GRACE_S)["exit"]
        except (TimeoutError, EOFError):
            kill_group(pid)
            self._end_parent()
            return None
        except BaseException:  # interrupted: leave no child behind
            kill_group(pid)
            self.close()
            raise
        finally:
            kill_group(pid)  # stragglers left in the child's group
        return Outcome(timed_out, status, "fork", {"warm_parent": ident})


def _other_cpus(configs: Sequence[RunConfig]) -> str | None:
    """The allowed CPUs that none of ``configs`` is pinned to, as a list; None when they are unpinned or use
    every allowed CPU (Note [a spare parent])."""
    from gnnbench.run.machine_state import cpulist, parse_cpulist

    if any(c.cpus is None for c in configs):
        return None
    free = set(os.sched_getaffinity(0)) - set().union(*(parse_cpulist(c.cpus) for c in configs))
    return cpulist(free) if free else None



@contextmanager
def measurement_processes(start: str, configs: Sequence[RunConfig]) -> Iterator[Callable[..., dict[str, Any]]]:
    """A callable with :func:`~gnnbench.run.runner.run_task`'s arguments (less ``isolate``) that runs each
    measurement in a process started as ``start`` says: ``fresh`` (``run_task``) or ``fork`` (one
    :class:`WarmParent` of ``configs``, ended on leaving), so a command takes ``--start`` with one line::

        with measurement_processes(args.start, [config]) as run:
            row = run(config, on_event=display)

    Raises:
        ValueError: ``start`` is not one of :data:`PROCESS_STARTS`, or as :class:`WarmParent`.
    """
    if start not in PROCESS_STARTS:
        raise ValueError(f"process start must be one of {', '.join(PROCESS_STARTS)} (got {start!r})")
    if start == "fresh":
        from gnnbench.run.runner import run_task

        yield run_task
        return
    with WarmParent(configs) as parent:
        yield parent.run


# -------------------------------------------------------------------- the parent process

def _threads_now() -> int:
    return len(os.listdir("/proc/self/task"))


def _prepare(configs: Sequence[RunConfig]) -> None:
    """Import what the runs import and load their datasets, starting no thread pool (Note [cheap processes]).
    A failure here is left for the child to meet and report as a fresh worker would."""
    import numpy as np

    for module in _PLATFORM_MODULES:  # the loops and what they import on first use
        _quietly(importlib.import_module, module)
    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.sut import system_under_test

    for key in dict.fromkeys((c.framework, c.device, c.dtype) for c in configs):
        _quietly(get_frontend, *key)
    for config in {(c.system, c.fallback, c.framework, c.device, c.system_options): c for c in configs}.values():
        _quietly(lambda: system_under_test(config).load())
    if "torch" in sys.modules:  # what torch imports lazily on a run's first optimizer (3 s on a busy machine)
        _quietly(lambda: __import__("torch._dynamo"))
    _quietly(_platform_kernels)
    for key in dict.fromkeys((c.dataset, c.data_dir, c.index_dtype) for c in configs):
        _quietly(load_dataset, key[0], data_dir=key[1], index_dtype=np.dtype(key[2]))  # built, or mapped once


#: what a run imports, much of it on first use inside the loop: imported once in the parent
_PLATFORM_MODULES = ("gnnbench.run.harness", "gnnbench.run.sampled", "gnnbench.run.worker", "gnnbench.check.run_check",
                     "gnnbench.run.bounds", "gnnbench.run.environment", "gnnbench.run.record",
                     "gnnbench.results.frame", "gnnbench.runtime.kernel_clock", "gnnbench.frameworks.dropout")


def _platform_kernels() -> None:
    """Load or compile the platform's numba kernels every run calls, on inputs small enough that each runs its
    serial twin (Note [serial below a size]), so no pool starts: the CSR transpose (the harness's warm-up sizes
    its blocks by numba's thread count, which starts numba's pool, so each child still runs that warm-up, now
    without the loads) and dropout (Note [cheap processes])."""
    import numpy as np

    from gnnbench.frameworks.dropout import dropout_apply
    from gnnbench.runtime.csr_transpose import transpose_csr

    for dtype in (np.int32, np.int64):
        transpose_csr(np.array([0, 1, 1], dtype=np.int64), np.array([1], dtype=dtype), 2, blocks=1)
    for dtype in (np.float32, np.float64):
        x = np.ones(4, dtype=dtype)
        dropout_apply(0, 0, x, 0.5, np.empty_like(x))


def _quietly(action, *args, **kwargs) -> None:
    try:
        action(*args, **kwargs)
    except Exception:  # the child meets it again and reports it as the worker does
        traceback.print_exc()


def _blas_threads() -> int:
    """This process's threads once NumPy's and SciPy's OpenBLAS have started their pools: the threads a fork may
    find, since OpenBLAS ends its pool before a fork (``pthread_atfork``) and starts it again when used."""
    import numpy  # noqa: F401

    try:
        import scipy.linalg  # noqa: F401 -- its own OpenBLAS, which numba's first compilation loads
    except ImportError:
        pass
    return _threads_now()


def _unsafe(baseline: int) -> str | None:
    """Why forking now would be unsafe, or None (Note [cheap processes])."""
    from gnnbench.run.thread_pools import numba_pool_started

    if numba_pool_started():
        return "the warm parent started numba's thread pool before forking"
    extra = _threads_now() - baseline
    if extra > 0:
        return (f"the warm parent runs {extra} thread(s) beyond its start (a library's pool) before forking; a "
                f"fork would inherit pools without their workers")
    return None


def _child(request: dict[str, Any], fds: list[int], control: socket.socket, parent: int) -> None:
    """The forked measurement process: the worker's steps, then exit with the worker's status. Never returns."""
    code = 1
    try:
        control.close()
        os.setsid()  # a group of its own (Note [process group])
        from gnnbench.run import worker

        worker.die_with_parent()
        if os.getppid() != parent:  # the parent died before the death signal was asked for: nobody waits
            os._exit(1)
        err = fds[0]
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(err, 1)
        os.dup2(err, 2)
        for fd in (devnull, err):
            os.close(fd)
        if len(fds) > 1:
            os.environ[EVENTS_FD_ENV] = str(fds[1])
        data = json.loads(Path(request["config"]).read_text())
        worker.limit_and_pin(data)
        worker.write_row(worker.run_from_config(data), request["result"])
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # as an uncaught exception ends a fresh worker: its traceback, status 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _serve(control: socket.socket, baseline: int) -> int:
    """Fork one child per request until the caller closes the socket."""
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, _MESSAGE, 4)
        except OSError:
            return 0
        if not message:
            return 0
        unsafe = _unsafe(baseline)
        if unsafe:
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"unsafe": unsafe}).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(json.loads(message), fds, control, me)
        for fd in fds:
            os.close(fd)
        control.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        control.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())


def main(argv: list[str] | None = None) -> int:
    """``python -m gnnbench.run.warm FD CONFIGS.json``: the warm parent (started by :class:`WarmParent` only)."""
    argv = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(argv[0]))
    settings = json.loads(Path(argv[1]).read_text())
    from gnnbench.run import worker

    allowed = os.sched_getaffinity(0)
    # dies with the caller; prepares where it was told (a spare: beside the runs), else where its children run
    worker.limit_and_pin({"cpus": settings.get("prepare_cpus") or settings["cpus"]})
    baseline = _blas_threads()
    _prepare([RunConfig.from_dict(c) for c in settings["configs"]])
    os.sched_setaffinity(0, allowed)  # its children start where a fresh worker would, then pin themselves
    from gnnbench.run.pinning import pin

    pin(settings["cpus"])
    ident = f"{os.uname().nodename}:{os.getpid()}:{time.time_ns()}"
    control.send(json.dumps({"id": ident, "unsafe": _unsafe(baseline)}).encode())
    return _serve(control, baseline)


if __name__ == "__main__":
    sys.exit(main())
