"""The Ray executor on a local Ray cluster started by the test: same sweep, same stored rows.

The cluster is a ``ray start --head --block`` process in its own session, on
127.0.0.1 and a free port, with its own temp folder; the sweep connects to it
with ``--executor ray --ray-address``, as it would to a real cluster. The test
ends the cluster by its process group and session, never with ``ray stop``
(which would stop every Ray instance of this user).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from gnnbench.results.store import ResultsStore

from tests.run.test_sweep import DONE_WHEN_EXPECTED, DONE_WHEN_TOML, SWEEP_SYSTEMS, local_done_when_rows

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'gnnbench[ray]'")

# A Ray head of --num-cpus=2 with its raylet and workers fills this machine: alone (Note [parallel tests]).
pytestmark = pytest.mark.serial

# Fields that depend on when and how fast a run went, not on what it computed.
_VOLATILE = {"id", "timestamp", "epoch_time_median_s", "epoch_time_iqr_s", "forward_median_s", "backward_median_s",
             "optimizer_median_s", "prepare_time_s", "tune_time_s", "peak_memory_bytes", "epoch_times",
             "forward_times", "backward_times", "optimizer_times", "kernel_median_s", "kernel_times", "stderr"}


#: Ray turns on token authentication once ~/.ray/auth_token exists (any local `ray.init` writes it), and the
#: test's own cluster then refuses the driver; the cluster and driver here are this test's alone.
_RAY_ENV = {"RAY_AUTH_MODE": "disabled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_members(sid: int) -> list[int]:
    import psutil

    members = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


@pytest.fixture(scope="module")
def ray_cluster():
    # A short temp folder: Ray's unix sockets live under it and have a ~107-byte path limit.
    temp = tempfile.mkdtemp(prefix="gbray", dir="/tmp")
    port = _free_port()
    env = {**os.environ, **_RAY_ENV, "GNNBENCH_SYSTEMS_PATH": str(SWEEP_SYSTEMS), "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp}",
         "--object-store-memory=100000000", "--disable-usage-stats"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if head.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"could not start a local Ray head (exit status {head.poll()})")
                time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        # SIGKILL at once: the cluster is this test's own session and holds nothing to save, and a Ray head
        # takes up to 30 s to act on SIGTERM. Repeat while members remain (raylets may spawn workers late).
        for _ in range(10):
            members = [head.pid, *_session_members(head.pid)]
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                head.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if not _session_members(head.pid):
                break
            time.sleep(0.5)
        shutil.rmtree(temp, ignore_errors=True)


def _comparable(rows: list[dict]) -> dict[tuple, dict]:
    out = {}
    for row in rows:
        # the machine's state is what else ran at the time (Note [machine state]): a measurement, like a timing
        kept = {k: v for k, v in row.items() if k not in _VOLATILE and k != "machine_state"}
        if isinstance(kept.get("extra"), dict):  # per-kernel times and SpMM rates are timings, held memory too;
            kept["extra"] = {k: v for k, v in kept["extra"].items()  # log files are per run
                             if k not in ("kernel_median_s_by_kernel", "spmm_figures", "held_bytes", "stderr_path")}
            if isinstance(kept["extra"].get("run_check"), dict):  # the checks' own times are timings too
                check = {k: v for k, v in kept["extra"]["run_check"].items() if k not in ("seconds", "forward_seconds")}
                if isinstance(check.get("closing"), dict):  # Note [closing check]
                    check["closing"] = {k: v for k, v in check["closing"].items()
                                        if k not in ("seconds", "forward_seconds")}
                kept["extra"]["run_check"] = check
        out[(row["system"], row["model"], row["seed"])] = kept
    return out


def test_ray_sweep_stores_the_rows_of_the_local_sweep(ray_cluster, tmp_path, tmp_path_factory):
    campaign = tmp_path / "done_when.toml"
    campaign.write_text(DONE_WHEN_TOML)
    db = tmp_path / "ray.sqlite"
    env = {**os.environ, **_RAY_ENV, "GNNBENCH_SYSTEMS_PATH": str(SWEEP_SYSTEMS)}
    driver = subprocess.run(
        [sys.executable, "-c", "import sys; from gnnbench.cli import main; sys.exit(main(sys.argv[1:]))",
         "sweep", "--campaign", str(campaign), "--executor", "ray", "--ray-address", ray_cluster,
         "--results", str(db)], env=env, capture_output=True, text=True, timeout=600)
    assert driver.returncode == 1, driver.stderr[-3000:]  # 1: some runs failed, as they must
    with ResultsStore(db) as store:
        ray_rows = store.rows()
    statuses = {(r["system"], r["model"]): r["status"] for r in ray_rows}
    assert statuses == {k: v[0] for k, v in DONE_WHEN_EXPECTED.items()}, driver.stderr[-3000:]

    local = _comparable(local_done_when_rows(tmp_path_factory))
    remote = _comparable(ray_rows)
    assert sorted(remote) == sorted(local)
    for key in local:
        assert remote[key] == local[key], key

    # the store is the same kind of store: a rerun through Ray resumes and runs nothing
    rerun = subprocess.run(
        [sys.executable, "-c", "import sys; from gnnbench.cli import main; sys.exit(main(sys.argv[1:]))",
         "sweep", "--campaign", str(campaign), "--executor", "ray", "--ray-address", ray_cluster,
         "--results", str(db)], env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "5 already stored; ran 0" in rerun.stdout
