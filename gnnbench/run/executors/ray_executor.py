"""The Ray executor: a sweep's configurations as Ray tasks on an existing cluster.

Note [ray executor]
    Each configuration is one Ray task asking for ``num_cpus = threads`` (1
    when the sweep leaves threads unset) and, when the sweep has a memory
    limit, ``memory = limit``, so Ray's scheduler places tasks only where they
    fit. Inside the task, :func:`gnnbench.run.runner.run_task` still runs the
    configuration in a fresh subprocess under its time and memory limits: a
    segfault kills that subprocess, not the Ray worker, and comes back as a
    ``crashed`` row like on the local executor. Tasks are never retried (a
    crash would crash again). The driver gathers rows with ``ray.wait`` as
    tasks finish and stores them itself, so the cluster needs no access to
    the results file; rows arrive in completion order, not submission order.

    Every node needs the same gnnbench checkout and systems installed. The
    ``GNNBENCH_*`` variables of the driver (``GNNBENCH_SYSTEMS_PATH`` with its
    folders made absolute, ``GNNBENCH_CACHE``, ...) travel in each task's
    ``runtime_env``; the results path does not.

    Timing: tasks placed on one node run at the same time and share its cores'
    caches and memory bandwidth. For figures meant to be compared, give the
    sweep ``threads`` equal to a node's cores (one task per node at a time),
    or use the local executor.
"""
from __future__ import annotations

import os
import traceback
from collections.abc import Iterable, Iterator
from typing import Any

from gnnbench.errors import UserError

from gnnbench.run.executors.base import Executor

__all__ = ["RayExecutor", "forwarded_env"]

_FORWARD = ("DGLDEFAULTDIR", "KERAS_HOME", "TMPDIR")


def forwarded_env() -> dict[str, str]:
    """The driver's environment variables that a remote run needs (Note [ray executor])."""
    env = {k: v for k, v in os.environ.items()
           if (k.startswith("GNNBENCH_") and k != "GNNBENCH_RESULTS") or k in _FORWARD}
    if env.get("GNNBENCH_SYSTEMS_PATH"):
        env["GNNBENCH_SYSTEMS_PATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["GNNBENCH_SYSTEMS_PATH"].split(os.pathsep) if p)
    return env


def _remote_run(config: dict[str, Any], timeout_s: float | None, memory_limit_bytes: int | None) -> dict[str, Any]:
    """Body of one Ray task: the local runner, in a subprocess of the Ray worker."""
    from gnnbench.run.config import RunConfig
    from gnnbench.run.runner import run_task

    return run_task(RunConfig.from_dict(config), timeout_s=timeout_s, memory_limit_bytes=memory_limit_bytes)


def _import_ray():
    try:
        import ray
    except ModuleNotFoundError:
        raise UserError("the ray executor needs Ray: pip install 'gnnbench[ray]' (or use --executor local)") from None
    return ray


def _probe(address: str | None, timeout_s: float = 10.0) -> None:
    """Fail in seconds on a ``HOST:PORT`` nobody listens on: ``ray.init`` would retry for minutes."""
    import socket

    if not address or "://" in address or address in ("auto", "local"):
        return
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise UserError(f"Ray address must be HOST:PORT, ray://HOST:PORT or auto (got {address!r})")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise UserError(f"no Ray cluster answers at {address} ({err.strerror or err}); start one with "
                        f"`ray start --head` or pass the address `ray status` shows") from None


class RayExecutor(Executor):
    """Submits every task to a Ray cluster at once and yields rows as tasks finish.

    Args:
        address (str, optional): the cluster, as ``ray.init(address=...)`` takes
            it (``HOST:PORT`` or ``ray://HOST:PORT``); default: ``$RAY_ADDRESS``,
            else a Ray instance already running on this machine, else a new local one.
            A connection already made in this process is reused and left open.
    """

    name = "ray"
    sequential = False

    def __init__(self, address: str | None = None):
        self.address = address
        self._connected_here = False

    def _connect(self):
        ray = _import_ray()
        if not ray.is_initialized():
            import logging

            _probe(self.address)
            try:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as err:
                where = self.address or os.environ.get("RAY_ADDRESS") or "the default address"
                raise UserError(f"could not connect to the Ray cluster at {where}: {str(err).splitlines()[0]}; "
                                f"start one with `ray start --head` or pass --ray-address HOST:PORT") from None
            self._connected_here = True
        return ray

    @staticmethod
    def _check_fits(ray, tasks: list[Any]) -> None:
        """Refuse requests no node can satisfy: Ray would keep them pending forever."""
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        most_cpus = max((r.get("CPU", 0) for r in nodes), default=0)
        most_memory = max((r.get("memory", 0) for r in nodes), default=0)
        for task in tasks:
            cpus = task.config.threads or 1
            if cpus > most_cpus:
                raise UserError(f"a run asks for {cpus} CPUs (threads) but the largest Ray node has {most_cpus:g}; "
                                f"lower --threads")
            if task.memory_limit_bytes and task.memory_limit_bytes > most_memory:
                raise UserError(f"a run asks for {task.memory_limit_bytes} bytes of memory (--memory-limit) but the "
                                f"largest Ray node offers {most_memory:.0f}; lower --memory-limit")

    def run(self, tasks: Iterable[Any]) -> Iterator[tuple[Any, dict[str, Any]]]:
        tasks = list(tasks)
        if not tasks:
            return
        ray = self._connect()
        self._check_fits(ray, tasks)
        remote = ray.remote(_remote_run)
        runtime_env = {"env_vars": forwarded_env()}
        pending = {}
        for task in tasks:
            options: dict[str, Any] = {"num_cpus": task.config.threads or 1, "max_retries": 0,
                                       "runtime_env": runtime_env}
            if task.memory_limit_bytes:
                options["memory"] = task.memory_limit_bytes
            ref = remote.options(**options).remote(task.config.as_dict(), task.timeout_s, task.memory_limit_bytes)
            pending[ref] = task
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    task = pending.pop(ref)
                    yield task, self._result(ray, ref, task)
        finally:  # interrupted: do not leave the cluster busy with runs nobody will store
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished or gone
                    pass

    @staticmethod
    def _result(ray, ref, task) -> dict[str, Any]:
        from gnnbench.run.runner import failure_row

        try:
            return ray.get(ref)
        except ray.exceptions.RayError as err:  # the Ray worker itself died or the task was cancelled
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            return failure_row(task.config, "crashed", f"Ray task failed: {type(err).__name__}: {first}",
                               traceback.format_exc())

    def close(self) -> None:
        if self._connected_here:
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()
            self._connected_here = False
