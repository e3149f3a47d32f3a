"""The worker's memory allocator: resolved by name, preloaded into the worker, recorded, and released."""
from __future__ import annotations

import subprocess
import sys

import pytest

from gnnbench.run import allocator as alloc
from gnnbench.run.allocator import Allocator, loaded_allocator, resolve_allocator
from gnnbench.errors import UserError

INSTALLED = {name: alloc.find_library(name) for name in ("tcmalloc", "jemalloc")}


def test_unknown_allocator_names_the_choices():
    with pytest.raises(UserError, match="unknown allocator 'mimalloc'; choose one of: auto, system, tcmalloc, "
                                        "jemalloc, jemalloc-thp"):
        resolve_allocator("mimalloc")


def test_a_named_allocator_that_is_missing_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(alloc, "find_library", lambda name: None)
    with pytest.raises(UserError, match=r"allocator 'tcmalloc' is not installed here .* "
                                        r"apt-get install libtcmalloc-minimal4\) or use --allocator system"):
        resolve_allocator("tcmalloc")


def test_auto_prefers_tcmalloc_then_jemalloc_then_the_c_library(monkeypatch):
    found = {"jemalloc": "/lib/libjemalloc.so.2"}
    monkeypatch.setattr(alloc, "find_library", found.get)
    assert resolve_allocator("auto") == Allocator("jemalloc", "/lib/libjemalloc.so.2")
    found["tcmalloc"] = "/lib/libtcmalloc_minimal.so.4"
    assert resolve_allocator("auto").name == "tcmalloc"
    found.clear()
    assert resolve_allocator("auto") == Allocator("system")


def test_environment_preloads_first_keeps_other_preloads_and_drops_other_allocators():
    base = {"LD_PRELOAD": "/lib/other.so /usr/lib/libjemalloc.so.2", "X": "1"}
    env = Allocator("tcmalloc", "/lib/libtcmalloc_minimal.so.4").environment(base)
    assert env["LD_PRELOAD"] == "/lib/libtcmalloc_minimal.so.4 /lib/other.so" and env["X"] == "1"
    assert Allocator("system").environment(base) == {"LD_PRELOAD": "/lib/other.so", "X": "1"}
    assert Allocator("system").environment({"LD_PRELOAD": "/x/libtcmalloc.so.4"}) == {}


def test_jemalloc_is_told_never_to_purge_and_keeps_the_users_settings():
    env = Allocator("jemalloc", "/lib/j.so").environment({"MALLOC_CONF": "narenas:2"})
    assert env["MALLOC_CONF"] == "dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:2"
    env = Allocator("jemalloc-thp", "/lib/j.so").environment({})
    assert env["MALLOC_CONF"] == "dirty_decay_ms:-1,muzzy_decay_ms:-1,thp:always,metadata_thp:auto"
    assert env["LD_PRELOAD"] == "/lib/j.so"


def test_huge_pages_are_refused_where_the_kernel_has_them_off(monkeypatch):
    monkeypatch.setattr(alloc, "find_library", lambda name: "/lib/libjemalloc.so.2" if name == "jemalloc" else None)
    monkeypatch.setattr(alloc, "thp_mode", lambda: "never")
    with pytest.raises(UserError, match=r"allocator 'jemalloc-thp' needs transparent huge pages, which this kernel "
                                        r"has off \(/sys/kernel/mm/transparent_hugepage/enabled\); use --allocator jemalloc"):
        resolve_allocator("jemalloc-thp")
    monkeypatch.setattr(alloc, "thp_mode", lambda: "madvise")
    assert resolve_allocator("jemalloc-thp") == Allocator("jemalloc-thp", "/lib/libjemalloc.so.2")


_CHILD = """
import ctypes, sys
from gnnbench.run.allocator import loaded_allocator, release_free_memory
from gnnbench.run.environment import _status_kib
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
blocks = [libc.malloc(1 << 20) for _ in range(256)]
for b in blocks:
    ctypes.memset(b, 1, 1 << 20)
for b in blocks:
    libc.free(ctypes.c_void_p(b))
held = _status_kib("VmRSS")
release_free_memory()
print(loaded_allocator(), held - _status_kib("VmRSS"))
"""


@pytest.mark.parametrize("name", ["system", "tcmalloc", "jemalloc", "jemalloc-thp"])
def test_a_worker_environment_loads_the_allocator_and_release_returns_its_cache(name):
    library = alloc._LIBRARY_OF.get(name)
    if name != "system" and not INSTALLED[library]:
        pytest.skip(f"{name} is not installed on this machine (Debian: apt-get install "
                    f"{alloc._PACKAGES[library]}); .ci/run installs it where it can")
    if name == "jemalloc-thp" and alloc.thp_mode() not in ("always", "madvise"):
        pytest.skip(f"this kernel's transparent huge pages are {alloc.thp_mode()}")
    from gnnbench.run.runner import worker_env

    env = resolve_allocator(name).environment(worker_env(None, "system"))
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, released_kib = out.stdout.split()
    assert loaded == name
    if name != "system":  # 256 MiB freed but kept by the cache, then handed back
        assert int(released_kib) > 128 * 1024


def test_this_process_reports_what_it_runs_under():
    import os

    preload = os.environ.get("LD_PRELOAD", "")
    expected = next((name for name in ("tcmalloc", "jemalloc") if f"lib{name}" in preload), "system")
    assert loaded_allocator() == expected
    alloc.release_free_memory()  # the C library's malloc_trim here (or the preloaded allocator's release)


@pytest.mark.parametrize("start,wanted", [("system", "tcmalloc"), ("tcmalloc", "system")])
def test_a_script_re_executes_itself_once_under_the_allocator_it_asks_for(start, wanted):
    if not INSTALLED["tcmalloc"]:
        pytest.skip("tcmalloc is not installed on this machine (Debian: apt-get install libtcmalloc-minimal4)")
    from gnnbench.run.runner import worker_env

    script = ("import sys; from gnnbench.run.allocator import run_under, loaded_allocator; "
              f"print('start', flush=True); run_under({wanted!r}); print(loaded_allocator())")
    env = resolve_allocator(start).environment(worker_env(None, "system"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["start", "start", wanted]  # the first process printed once, then became the second


def test_huge_pages_are_read_from_smaps_rollup(monkeypatch, tmp_path):
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text("Rss:             2048000 kB\nAnonymous:       1024000 kB\nAnonHugePages:    557056 kB\n")
    monkeypatch.setattr(alloc, "_SMAPS_ROLLUP", rollup)
    assert alloc.huge_page_bytes() == 557056 * 1024
    monkeypatch.setattr(alloc, "_SMAPS_ROLLUP", tmp_path / "missing")  # not Linux
    assert alloc.huge_page_bytes() is None
