"""The PIM machine description: one TOML file, loaded into a frozen :class:`Machine`.

Every parameter of the cost model lives in the file (default
``systems/pim/machine.toml``), each with a citation in its ``[citations]``
table; :func:`load_machine` refuses a file where one is missing, so a figure
cannot enter the model without a source. Swapping the file models another
configuration (fewer DPUs, another clock, another host); the loaded path and
the SHA-256 of its bytes are part of every report.

Note [interpolating measured tables]
    The throughput, write-latency and host-merge tables were measured at a few
    widths only. In between and beyond we interpolate *time per item* linearly
    in the width (the per-nonzero time of a read-multiply-add loop is a fixed
    cost plus a cost per column, which fits the table within 9%), and
    extrapolate with the slope of the nearest segment. Bandwidth by block size
    uses the nearest measured block, clamped to the table, as PyGim's tuner does.
"""
from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import UserError

__all__ = ["Machine", "load_machine", "DEFAULT_MACHINE_PATH", "interp_time_per_item"]

DEFAULT_MACHINE_PATH = Path(__file__).with_name("machine.toml")

#: section -> parameter -> expected kind ("int", "float", "table", "str", "ints")
_SCHEMA: dict[str, dict[str, str]] = {
    "machine": {"name": "str", "dpus": "int", "ranks": "int", "dpus_per_rank": "ints",
                "max_dpus_per_rank": "int", "frequency_mhz": "float", "tasklets": "int"},
    "memory": {"mram_bytes": "int", "wram_bytes": "int", "dma_min_bytes": "int", "dma_max_bytes": "int",
               "dma_align_bytes": "int", "tasklet_stack_bytes": "int", "nnz_buffer_bytes": "int"},
    "transfer": {"host_to_dpu_gbps": "float", "dpu_to_host_gbps": "table"},
    "kernel": {"int32_nnz_per_ms": "table", "throughput_frequency_mhz": "float", "int32_ops_per_ms": "float",
               "float32_ops_per_ms": "float", "write_latency_us": "table"},
    "host": {"merge": "str", "row_copy_rows_per_ms": "table", "row_add_rows_per_ms": "table"},
}
_OPTIONAL = {"dpus_per_rank", "row_copy_rows_per_ms", "row_add_rows_per_ms"}
_UNCITED = {"name", "merge", "dpus_per_rank"}

Table = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Machine:
    """A UPMEM-style PIM machine and the host it hangs off.

    Attributes mirror the keys of the machine file (see ``machine.toml`` for
    units and sources). Tables are sorted ``(key, value)`` tuples.
    """

    name: str
    dpus: int
    ranks: int
    dpus_per_rank: tuple[int, ...]
    max_dpus_per_rank: int
    frequency_mhz: float
    tasklets: int
    mram_bytes: int
    wram_bytes: int
    dma_min_bytes: int
    dma_max_bytes: int
    dma_align_bytes: int
    tasklet_stack_bytes: int
    nnz_buffer_bytes: int
    host_to_dpu_gbps: float
    dpu_to_host_gbps: Table
    int32_nnz_per_ms: Table
    throughput_frequency_mhz: float
    int32_ops_per_ms: float
    float32_ops_per_ms: float
    write_latency_us: Table
    host_merge: str
    row_copy_rows_per_ms: Table
    row_add_rows_per_ms: Table
    path: str
    sha256: str

    # ------------------------------------------------------------ derived rates
    def nnz_per_ms(self, cols: int, arithmetic: str) -> float:
        """Per-DPU nonzeros per ms at ``cols`` dense columns (Note [interpolating measured tables])."""
        ms = interp_time_per_item(self.int32_nnz_per_ms, cols)
        rate = (1.0 / ms) * self.frequency_mhz / self.throughput_frequency_mhz
        if arithmetic == "float32":
            rate *= self.float32_ops_per_ms / self.int32_ops_per_ms
        return rate

    def write_latency_s(self, nbytes: int) -> float:
        """Seconds for one MRAM write DMA of ``nbytes`` (interpolated in bytes)."""
        keys = np.array([k for k, _ in self.write_latency_us])
        vals = np.array([v for _, v in self.write_latency_us])
        return float(_interp_extrap(keys, vals, float(nbytes))) * 1e-6

    def dpu_to_host_bytes_per_s(self, block_bytes: float) -> float:
        """Aggregate DPU-to-host bandwidth for a per-DPU block of ``block_bytes``."""
        kb = block_bytes / 1024.0
        keys = np.array([k for k, _ in self.dpu_to_host_gbps])
        i = int(np.argmin(np.abs(keys - np.clip(kb, keys[0], keys[-1]))))
        return self.dpu_to_host_gbps[i][1] * 1e9

    def describe(self) -> dict:
        """The identity of this description for reports: name, path, hash, size."""
        return {"name": self.name, "path": self.path, "sha256": self.sha256, "dpus": self.dpus,
                "ranks": self.ranks, "tasklets": self.tasklets, "frequency_mhz": self.frequency_mhz}


def _interp_extrap(keys: np.ndarray, vals: np.ndarray, x: float) -> float:
    if keys.size == 1:
        return float(vals[0])
    if x <= keys[0]:
        i = 0
    elif x >= keys[-1]:
        i = keys.size - 2
    else:
        i = int(np.searchsorted(keys, x)) - 1
    slope = (vals[i + 1] - vals[i]) / (keys[i + 1] - keys[i])
    return max(float(vals[i] + slope * (x - keys[i])), 1e-12)


def interp_time_per_item(table: Table, width: float) -> float:
    """Time per item (1 / rate) at ``width``, linear in width between and beyond measured points."""
    keys = np.array([k for k, _ in table], dtype=np.float64)
    times = np.array([1.0 / v for _, v in table], dtype=np.float64)
    return _interp_extrap(keys, times, float(width))


def _fail(path: Path, problem: str) -> UserError:
    return UserError(f"PIM machine file {path}: {problem}")


def _table(path: Path, key: str, value) -> Table:
    if not isinstance(value, dict) or not value:
        raise _fail(path, f"'{key}' must be a non-empty table like {{ 2 = 3527.26 }} (got {value!r})")
    try:
        rows = sorted((float(k), float(v)) for k, v in value.items())
    except (TypeError, ValueError):
        raise _fail(path, f"'{key}' must map numbers to numbers (got {value!r})") from None
    if any(v <= 0 for _, v in rows):
        raise _fail(path, f"'{key}' values must be positive (got {value!r})")
    return tuple(rows)


def load_machine(path: str | Path | None = None) -> Machine:
    """Load and validate a machine description.

    Args:
        path: a TOML file in the layout of ``systems/pim/machine.toml``
            (default: that file).

    Raises:
        UserError: the file is missing, malformed, lacks a parameter or a
            citation, or describes an impossible machine (e.g. a rank with more
            DPUs than ``max_dpus_per_rank``).
    """
    path = Path(path) if path is not None else DEFAULT_MACHINE_PATH
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise UserError(f"cannot read PIM machine file {path}: {err.strerror}; pass an existing "
                        f"TOML file (the default is {DEFAULT_MACHINE_PATH})") from None
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise _fail(path, f"not valid TOML ({err})") from None
    citations = doc.get("citations", {})
    values: dict = {}
    for section, params in _SCHEMA.items():
        sec = doc.get(section, {})
        unknown = set(sec) - set(params)
        if unknown:
            raise _fail(path, f"unknown key(s) {sorted(unknown)} in [{section}]; allowed: {sorted(params)}")
        for key, kind in params.items():
            if key not in sec:
                if key in _OPTIONAL:
                    continue
                raise _fail(path, f"missing '{key}' in [{section}]")
            if key not in _UNCITED and not str(citations.get(key, "")).strip():
                raise _fail(path, f"'{key}' has no entry in [citations]; every figure needs its source")
            v = sec[key]
            if kind == "table":
                values[key] = _table(path, key, v)
            elif kind == "ints":
                if not isinstance(v, list) or not all(isinstance(i, int) and i > 0 for i in v):
                    raise _fail(path, f"'{key}' must be a list of positive integers (got {v!r})")
                values[key] = tuple(v)
            elif kind == "str":
                values[key] = str(v)
            else:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                    raise _fail(path, f"'{key}' must be a positive number (got {v!r})")
                values[key] = int(v) if kind == "int" else float(v)
    if values["merge"] not in ("measure", "table"):
        raise _fail(path, f"[host] merge must be \"measure\" or \"table\" (got {values['merge']!r})")
    if values["merge"] == "table" and not ("row_copy_rows_per_ms" in values and "row_add_rows_per_ms" in values):
        raise _fail(path, "[host] merge = \"table\" needs row_copy_rows_per_ms and row_add_rows_per_ms")
    dpus, ranks = values["dpus"], values["ranks"]
    per_rank = values.get("dpus_per_rank")
    if per_rank is None:
        base, extra = divmod(dpus, ranks)
        per_rank = tuple(base + 1 if r >= ranks - extra else base for r in range(ranks))
    if len(per_rank) != ranks or sum(per_rank) != dpus or min(per_rank) < 1:
        raise _fail(path, f"dpus_per_rank must list {ranks} positive counts summing to {dpus} (got {per_rank})")
    if max(per_rank) > values["max_dpus_per_rank"]:
        raise _fail(path, f"a rank holds at most {values['max_dpus_per_rank']} DPUs, but {dpus} DPUs in "
                          f"{ranks} ranks need {max(per_rank)}; raise 'ranks' or lower 'dpus'")
    if values["dma_min_bytes"] > values["dma_max_bytes"]:
        raise _fail(path, "dma_min_bytes must not exceed dma_max_bytes")
    return Machine(
        name=values["name"], dpus=dpus, ranks=ranks, dpus_per_rank=per_rank,
        max_dpus_per_rank=values["max_dpus_per_rank"], frequency_mhz=values["frequency_mhz"],
        tasklets=values["tasklets"], mram_bytes=values["mram_bytes"], wram_bytes=values["wram_bytes"],
        dma_min_bytes=values["dma_min_bytes"], dma_max_bytes=values["dma_max_bytes"],
        dma_align_bytes=values["dma_align_bytes"], tasklet_stack_bytes=values["tasklet_stack_bytes"],
        nnz_buffer_bytes=values["nnz_buffer_bytes"], host_to_dpu_gbps=values["host_to_dpu_gbps"],
        dpu_to_host_gbps=values["dpu_to_host_gbps"], int32_nnz_per_ms=values["int32_nnz_per_ms"],
        throughput_frequency_mhz=values["throughput_frequency_mhz"],
        int32_ops_per_ms=values["int32_ops_per_ms"], float32_ops_per_ms=values["float32_ops_per_ms"],
        write_latency_us=values["write_latency_us"], host_merge=values["merge"],
        row_copy_rows_per_ms=values.get("row_copy_rows_per_ms", ()),
        row_add_rows_per_ms=values.get("row_add_rows_per_ms", ()),
        path=str(path.resolve()), sha256=hashlib.sha256(raw).hexdigest(),
    )
