"""The memory allocator a run's worker process uses: chosen, preloaded, recorded.

Note [allocator]
    On the CPU, a training epoch allocates and frees the same large tensors
    every time (a dropout mask, an activation, its gradient). glibc's malloc
    hands every block over 32 MB to ``mmap`` and back to the kernel on
    ``free``, and PyTorch's 64-byte-aligned ``posix_memalign`` blocks cannot
    reuse a freed block of the same size either, so each such tensor is
    faulted in page by page again, every epoch. On the virtual machine of
    ``benchmarks/``, where a page fault is dear, that more than doubled an
    elementwise product and a GCN forward; tcmalloc, a non-purging jemalloc
    and a preallocated output all fault nothing.
    That cost is framework overhead identical for every system, and it
    buries the kernels' differences, so by default (``auto``) a worker runs
    under tcmalloc, else jemalloc, when the machine has one, for every
    system alike, and each row records the allocator that was actually
    loaded (column ``allocator``). ``system`` keeps the C library's malloc.

    ``jemalloc-thp`` is jemalloc asked to back its heap with transparent
    huge pages (``thp:always``), which a kernel whose THP mode is
    ``madvise`` (this machine's) gives no allocator by default. An SpMM
    gathers rows at random from an ``[N, F]`` feature matrix far larger than
    the TLB covers in 4 KiB pages, so each gathered row can cost a page walk;
    2 MiB pages cover 512 times as much. On the 16M-edge R-MAT graph
    (``campaigns/allocators_thp.toml``, ``results/allocators_thp.md``) it
    once shortened isplib's epochs the most, on a loaded machine before
    isplib's column-major weights; measured quiet since, no epoch there is
    decidedly faster on huge pages, and peak memory moves by under 10 %
    either way. Not the default: it changes
    every system's figures, and not alike (the random gathers of SpMM the
    most), and it needs a kernel with THP enabled; rows name it, so it is
    compared only with itself.

    Under 4 KiB pages isplib's gathers also depend on where a run's arrays
    land, which no warm-up settles: the same run is about a fifth faster
    after an unrelated large allocation moves its arrays, with identical
    page fault counts, and under ``jemalloc-thp`` it is fast either way. So
    the slow state is address translation of isplib's random gathers (this
    machine is a virtual machine: a TLB miss walks two page tables), not
    page faults, and huge pages remove it.

    What puts a run's tensors on huge pages under tcmalloc is NumPy: it
    advises ``MADV_HUGEPAGE`` for every array of 4 MiB or more, the advice
    stays on the address range after the array is freed, and tcmalloc hands
    that range to the framework's next tensors. A tuner's scratch features
    and outputs are such arrays, so the first-use process of every campaign
    ran faster for a reason no later run shares; the harness now prepares
    and tunes with the advice off (:func:`numpy_hugepage_advice`; Note [huge
    pages outside the epochs] in :mod:`gnnbench.run.harness`).

    A caching allocator keeps freed memory, so a region's peak resident
    memory would miss whatever the region reused from memory freed before
    it; :func:`release_free_memory` hands the cache back to the kernel before
    the harness reads its memory baseline (Note [peak memory]).

    The measurements behind each paragraph: ``results/design_figures.md``.
"""
from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gnnbench.errors import UserError

__all__ = ["ALLOCATORS", "Allocator", "resolve_allocator", "loaded_allocator", "release_free_memory", "run_under",
           "thp_mode"]

#: Choices of ``--allocator``; ``auto`` picks the first caching allocator found.
ALLOCATORS = ("auto", "system", "tcmalloc", "jemalloc", "jemalloc-thp")

_LIBRARIES = {
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4"),
    "jemalloc": ("libjemalloc.so.2",),
}
_PACKAGES = {"tcmalloc": "libtcmalloc-minimal4", "jemalloc": "libjemalloc2"}
#: an allocator choice -> the library it preloads
_LIBRARY_OF = {"tcmalloc": "tcmalloc", "jemalloc": "jemalloc", "jemalloc-thp": "jemalloc"}
_THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_SMAPS_ROLLUP = Path("/proc/self/smaps_rollup")
_SEARCH_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib", "/opt/homebrew/lib")
# jemalloc purges dirty pages after 10 s by default and at once for blocks above
# its oversize threshold; never purging is what makes it a cache (Note [allocator]).
_JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"
_JEMALLOC_THP_CONF = "thp:always,metadata_thp:auto"


@dataclass(frozen=True)
class Allocator:
    """A resolved choice: ``name`` and the shared library to preload (None for ``system``)."""

    name: str
    library: str | None = None

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with the variables that make a new process use this allocator."""
        env = dict(base)
        # an allocator preloaded into this process must not follow into one that asked for another
        preload = [p for p in env.get("LD_PRELOAD", "").split()
                   if p and not any(f"lib{name}" in Path(p).name for name in _LIBRARIES)]
        if self.library is not None:
            preload.insert(0, self.library)
        if preload:
            env["LD_PRELOAD"] = " ".join(preload)
        else:
            env.pop("LD_PRELOAD", None)
        if self.name in ("jemalloc", "jemalloc-thp"):
            ours = (_JEMALLOC_CONF, _JEMALLOC_THP_CONF) if self.name == "jemalloc-thp" else (_JEMALLOC_CONF,)
            env["MALLOC_CONF"] = ",".join(p for p in (*ours, env.get("MALLOC_CONF", "")) if p)
        return env


@lru_cache(maxsize=None)
def _ldconfig() -> tuple[tuple[str, str], ...]:
    """``(soname, path)`` pairs the dynamic linker's cache knows."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    pairs = []
    for line in out.splitlines()[1:]:
        name, _, rest = line.strip().partition(" ")
        path = rest.rpartition("=> ")[2].strip()
        if name and path:
            pairs.append((name, path))
    return tuple(pairs)


def find_library(name: str) -> str | None:
    """Path of the shared library of allocator ``name`` on this machine, or None."""
    for soname in _LIBRARIES[name]:
        for folder in _SEARCH_DIRS:
            path = Path(folder, soname)
            if path.is_file():
                return str(path)
        for known, path in _ldconfig():
            if known == soname and Path(path).is_file():
                return path
    return None


def resolve_allocator(choice: str) -> Allocator:
    """Turn ``--allocator`` into what to preload.

    Raises:
        UserError: an unknown choice, or a named allocator this machine lacks.
    """
    if choice not in ALLOCATORS:
        raise UserError(f"unknown allocator '{choice}'; choose one of: {', '.join(ALLOCATORS)}")
    if choice == "system":
        return Allocator("system")
    if choice == "auto":
        for name in ("tcmalloc", "jemalloc"):
            library = find_library(name)
            if library:
                return Allocator(name, library)
        return Allocator("system")
    name = _LIBRARY_OF[choice]
    library = find_library(name)
    if library is None:
        raise UserError(f"allocator '{choice}' is not installed here (looked for {', '.join(_LIBRARIES[name])}); "
                        f"install it (Debian: apt-get install {_PACKAGES[name]}) or use --allocator system")
    if choice == "jemalloc-thp" and thp_mode() not in ("always", "madvise"):
        raise UserError(f"allocator 'jemalloc-thp' needs transparent huge pages, which this kernel has "
                        f"{'off' if thp_mode() == 'never' else 'not'} ({_THP_MODE}); use --allocator jemalloc")
    return Allocator(choice, library)


def thp_mode() -> str:
    """The kernel's transparent-huge-page mode (``always``, ``madvise``, ``never``), or ``unknown``."""
    try:
        text = _THP_MODE.read_text()
    except OSError:
        return "unknown"
    chosen = text[text.find("[") + 1:text.find("]")] if "[" in text else ""
    return chosen or "unknown"


def run_under(choice: str) -> str:
    """Make this program run under allocator ``choice``, re-executing it once if it does not; returns the name.

    For benchmark scripts that measure in their own process (a worker gets
    its allocator from :func:`gnnbench.run.runner.worker_env` instead).
    """
    wanted = resolve_allocator(choice)
    if loaded_allocator() == wanted.name or os.environ.get("GNNBENCH_ALLOCATOR_REEXEC") == wanted.name:
        return loaded_allocator()
    env = wanted.environment(dict(os.environ))
    env["GNNBENCH_ALLOCATOR_REEXEC"] = wanted.name  # tried once: never loop if the preload does not take
    sys.stdout.flush()
    os.execve(sys.executable, sys.orig_argv, env)  # orig_argv keeps -m/-c and the interpreter's own flags
    raise AssertionError("unreachable")


def loaded_allocator() -> str:
    """Which allocator this process runs under: ``tcmalloc``, ``jemalloc``, ``jemalloc-thp`` or ``system``.

    ``jemalloc-thp`` when jemalloc's own ``opt.thp`` says ``always``, so the
    row names what took effect, not what was asked for.
    """
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "system"
    for name in ("tcmalloc", "jemalloc"):
        if f"lib{name}" in maps:
            return "jemalloc-thp" if name == "jemalloc" and _jemalloc_option("opt.thp") == "always" else name
    return "system"


def _jemalloc_option(name: str) -> str | None:
    """A string option of the loaded jemalloc (``mallctl``), or None."""
    value, size = ctypes.c_char_p(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_char_p))
    try:
        failed = ctypes.CDLL(None).mallctl(name.encode(), ctypes.byref(value), ctypes.byref(size), None,
                                           ctypes.c_size_t(0))
    except AttributeError:
        return None
    return value.value.decode() if not failed and value.value else None


def release_free_memory() -> None:
    """Give memory the allocator keeps for reuse back to the kernel (Note [allocator])."""
    process = ctypes.CDLL(None)
    name = loaded_allocator()
    try:
        if name == "tcmalloc":
            process.MallocExtension_ReleaseFreeMemory()
        elif name in ("jemalloc", "jemalloc-thp"):
            # "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages
            process.mallctl(b"arena.4096.purge", None, None, None, ctypes.c_size_t(0))
        else:
            process.malloc_trim(ctypes.c_size_t(0))
    except AttributeError:  # a C library without malloc_trim (musl, macOS): nothing to release
        pass



def huge_page_bytes() -> int | None:
    """How much of this process's anonymous memory is on transparent huge pages now, or None off Linux.

    ``AnonHugePages`` of ``/proc/self/smaps_rollup``. A run records it after its epochs
    (``extra.huge_page_bytes``): the same tensors run faster on 2 MiB pages (Note [allocator]),
    so two runs of one configuration whose figures differ can be told apart by it.
    """
    try:
        text = _SMAPS_ROLLUP.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) * 1024
    return None


@contextmanager
def numpy_hugepage_advice(enabled: bool):
    """Within the block, NumPy advises 2 MiB pages for its large arrays only if ``enabled`` (Note [allocator]).

    Restores the previous setting on exit; a NumPy without the switch is left as it is.
    """
    import numpy as np

    core = getattr(np, "_core", None) or np.core
    switch = getattr(core.multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    previous = switch(enabled)
    try:
        yield
    finally:
        switch(previous)
