"""The UPMEM cost model: what one aggregation would cost on the PIM machine.

For a :class:`~.partition.Plan` and a dense width ``F``, the modeled time of one
aggregation call is (all clusters run at once)::

    transfer = sum over DPUs of its X-slice-chunk bytes           / host_to_dpu
               (+ the nonzero values when new weights are sent)
    kernel   = max over DPUs of  busiest_tasklet_nnz * T / nnz_per_ms(c)
                                 + rows * write_latency(row bytes)
    retrieve = sum over DPUs of its padded output bytes           / dpu_to_host(block)
    merge    = per chunk: N rows copied + (sp - 1) * N rows added  (host rates
               for that chunk width into an F-wide accumulator)
               (+ one pass over N x F to dequantise in int32 mode)

and, once per graph view and layout, apart from the per-call time::

    load     = sum over DPUs of its padded CSR bytes (row pointers, columns,
               values)                                            / host_to_dpu

``c`` is the DPU's chunk width padded to the DMA alignment, ``T`` the tasklets.

Note [broadcast cost]
    A broadcast writes the same bytes to every DPU of a rank, but the DDR bus
    still writes each DPU's MRAM bank separately, so we charge one copy per DPU
    at the aggregate host-to-DPU bandwidth; the broadcast saves host-side
    buffers, not bus time.

Note [hardware limits]
    A configuration is infeasible, and the violated limit is named, when a DPU
    needs more MRAM (CSR + its X chunk + its output, padded) or WRAM
    (per tasklet: stack, a nonzero buffer, an accumulator row and an X row) than
    it has, when a row DMA falls outside [dma_min, dma_max] bytes or is not
    aligned, when transfers of one rank differ in size (UPMEM's parallel
    transfers move equal sizes to every DPU of a rank; we pad to the rank's
    maximum, and only ``pad=False`` can violate this), or when a row's partial
    sums would have to be combined between DPUs (no DPU-to-DPU communication).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hostrates import HostRates
from .machine import Machine
from .partition import Plan, even_bounds

__all__ = ["Cost", "Violation", "estimate", "LIMITS"]

ELEM_BYTES = 4  # int32 and float32 alike
LIMITS = ("MRAM", "WRAM", "DMA size", "DMA alignment", "equal transfer sizes within a rank",
          "no DPU-to-DPU communication", "row coverage")


@dataclass(frozen=True)
class Violation:
    """A hardware limit a configuration breaks: ``limit`` is one of :data:`LIMITS`."""

    limit: str
    detail: str

    def __str__(self) -> str:
        return f"{self.limit}: {self.detail}"


@dataclass(frozen=True)
class Cost:
    """Modeled seconds per phase of one call (``load`` is once per layout, not per call).

    Attributes:
        transfer_s, kernel_s, retrieve_s, merge_s: per call.
        load_s: loading this layout's adjacency, once per graph view.
        violations: broken limits; empty when feasible.
        details: bytes moved and the critical DPU, for reports.
    """

    transfer_s: float
    kernel_s: float
    retrieve_s: float
    merge_s: float
    load_s: float
    violations: tuple[Violation, ...] = ()
    details: dict = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return not self.violations

    @property
    def total_s(self) -> float:
        """Per-call time: transfer + kernel + retrieve + merge (load excluded)."""
        return self.transfer_s + self.kernel_s + self.retrieve_s + self.merge_s

    def as_dict(self) -> dict:
        return {"transfer_s": self.transfer_s, "kernel_s": self.kernel_s, "retrieve_s": self.retrieve_s,
                "merge_s": self.merge_s, "total_s": self.total_s, "load_s": self.load_s,
                "feasible": self.feasible, "violations": [str(v) for v in self.violations], **self.details}


def _rank_groups(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each rank's run of DPUs starts in ``ranks`` (sorted), and how many DPUs it holds: found once per
    cluster and used by every :func:`_rank_max` of it (the tuner estimates dozens of layouts per graph, and a
    sampled run prepares every block; ``np.r_`` here once cost a quarter of pim's block prepare)."""
    change = np.empty(ranks.shape[0], dtype=bool)
    change[:1] = True
    np.not_equal(ranks[1:], ranks[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return starts, np.diff(starts, append=ranks.shape[0])


def _rank_max(values: np.ndarray, groups: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per DPU, the maximum of ``values`` over the DPUs of its rank (``groups``: :func:`_rank_groups`)."""
    starts, counts = groups
    return np.repeat(np.maximum.reduceat(values, starts), counts)


def _row_bytes(cols: int, machine: Machine, pad: bool) -> int:
    nbytes = cols * ELEM_BYTES
    if pad:
        a = machine.dma_align_bytes
        nbytes = max(-(-nbytes // a) * a, machine.dma_min_bytes)
    return nbytes


def _coverage(plan: Plan, q: int) -> Violation | None:
    sl = plan.cluster(q)
    start, stop = plan.row_start[sl], plan.row_stop[sl]
    if np.any(start[1:] < stop[:-1]) or np.any(stop < start):
        r = int(start[1:][np.argmax(start[1:] < stop[:-1])]) if np.any(start[1:] < stop[:-1]) else int(start[0])
        return Violation("no DPU-to-DPU communication",
                         f"cluster {q}: row {r} is assigned to two DPUs, whose partial sums would have to be "
                         f"combined between DPUs; give each row to exactly one DPU of the cluster")
    if start[0] != 0 or stop[-1] != plan.num_rows or np.any(start[1:] != stop[:-1]):
        return Violation("row coverage", f"cluster {q}: the DPUs' row ranges do not cover rows "
                                         f"[0, {plan.num_rows}) exactly once")
    return None


def estimate(plan: Plan, machine: Machine, host: HostRates, width: int, arithmetic: str = "int32", *,
             head_dim: int | None = None, weights_sent: bool = False, pad: bool = True) -> Cost:
    """Model one aggregation of ``width`` dense columns under ``plan``.

    Args:
        plan: the row/DPU assignment (:func:`~.partition.make_plan`).
        machine: the PIM machine.
        host: host merge rates.
        width: ``F``, dense columns of ``X`` (all heads together).
        arithmetic: ``int32`` or ``float32`` (float is emulated on the DPU).
        head_dim: ``D`` when each nonzero carries one value per head (weights
            ``[E, H]`` with ``H > 1``); ``None`` when it carries one value.
        weights_sent: charge sending the nonzero values this call (new weights).
        pad: pad rows to the DMA alignment and transfers to the rank's maximum
            (what the hardware requires; ``False`` only to test the limits).

    Returns:
        the :class:`Cost`; ``violations`` lists every broken limit (Note [hardware limits]).
    """
    m, T = machine, machine.tasklets
    chunk = even_bounds(width, plan.ds)
    violations: list[Violation] = []
    kernel_s = transfer_b = retrieve_b = load_b = weight_b = pad_b = 0.0
    mram_max = wram_max = active = 0
    critical: dict = {}
    seen: set[str] = set()

    def flag(limit: str, detail: str) -> None:
        if limit not in seen:
            seen.add(limit)
            violations.append(Violation(limit, detail))

    for q in range(plan.num_clusters):
        v = _coverage(plan, q)
        if v is not None:
            flag(v.limit, v.detail)
        s, k = divmod(q, plan.ds)
        c0, c1 = int(chunk[k]), int(chunk[k + 1])
        cw = c1 - c0
        if cw == 0:
            continue  # an idle cluster: more chunks than columns at this width
        rb = _row_bytes(cw, m, pad)
        cwp = rb // ELEM_BYTES
        if rb > m.dma_max_bytes or rb < m.dma_min_bytes:
            flag("DMA size", f"a row of {cw} columns is a {rb}-byte DMA, outside [{m.dma_min_bytes}, "
                             f"{m.dma_max_bytes}] bytes; use more dense chunks (ds) for wide features")
        if rb % m.dma_align_bytes:
            flag("DMA alignment", f"a row of {cw} columns is {rb} bytes, not a multiple of "
                                  f"{m.dma_align_bytes}; pad rows to the alignment")
        wram = T * (m.tasklet_stack_bytes + m.nnz_buffer_bytes + 2 * rb)
        wram_max = max(wram_max, wram)
        if wram > m.wram_bytes:
            flag("WRAM", f"{T} tasklets x (stack {m.tasklet_stack_bytes} + nonzero buffer {m.nnz_buffer_bytes} "
                         f"+ 2 rows of {rb}) = {wram} bytes > {m.wram_bytes}; use more dense chunks (ds)")
        heads = 1 if head_dim is None else (c1 - 1) // head_dim - c0 // head_dim + 1
        sl = plan.cluster(q)
        rows, nnz, tmax, rank = plan.rows[sl], plan.nnz[sl], plan.max_tasklet_nnz[sl], plan.dpu_rank[sl]
        sw = int(plan.col_bounds[s + 1] - plan.col_bounds[s])
        x_bytes = sw * rb
        adj = ELEM_BYTES * (rows + 1) + ELEM_BYTES * nnz * (1 + heads)
        out = rows * rb
        groups = _rank_groups(rank)
        if pad:
            adj_p, out_p = _rank_max(adj, groups), _rank_max(out, groups)
            val_p = _rank_max(nnz, groups) * ELEM_BYTES * heads
        else:
            adj_p, out_p, val_p = adj, out, nnz * ELEM_BYTES * heads
            if np.any(_rank_max(out, groups) != out) or np.any(_rank_max(adj, groups) != adj):
                flag("equal transfer sizes within a rank",
                     f"cluster {q}: DPUs of one rank would send or receive different sizes; pad every "
                     f"transfer to the rank's largest")
        mram = adj_p + x_bytes + out_p
        worst = int(np.argmax(mram))
        mram_max = max(mram_max, int(mram[worst]))
        if mram[worst] > m.mram_bytes:
            flag("MRAM", f"cluster {q}: a DPU needs {int(mram[worst])} bytes (CSR {int(adj_p[worst])} + "
                         f"X slice {x_bytes} + output {int(out_p[worst])}) > {m.mram_bytes}; use more "
                         f"column slices (sp) or a machine with more DPUs")
        per_dpu = tmax * T / m.nnz_per_ms(cwp, arithmetic) * 1e-3 + rows * m.write_latency_s(rb)
        d = int(np.argmax(per_dpu))
        if per_dpu[d] > kernel_s:
            kernel_s = float(per_dpu[d])
            critical = {"critical_cluster": q, "critical_dpu_rows": int(rows[d]),
                        "critical_dpu_nnz": int(nnz[d]), "critical_tasklet_nnz": int(tmax[d])}
        active += rows.shape[0]
        transfer_b += x_bytes * rows.shape[0]
        weight_b += float(val_p.sum())
        retrieve_b += float(out_p.sum())
        pad_b += float(out_p.sum() - out.sum())
        load_b += float(adj_p.sum())
    h2d = m.host_to_dpu_gbps * 1e9
    block = retrieve_b / max(active, 1)  # mean bytes per DPU sets the DPU-to-host rate, as in PyGim
    retrieve_s = retrieve_b / m.dpu_to_host_bytes_per_s(block) if retrieve_b else 0.0
    merge_dtype = np.float32 if arithmetic == "float32" else np.int32
    merge_s = 0.0
    for k in range(plan.ds):
        cw = int(chunk[k + 1] - chunk[k])
        merge_s += host.copy_s(plan.num_rows, cw, width, merge_dtype)
        merge_s += (plan.sp - 1) * host.add_s(plan.num_rows, cw, width, merge_dtype)
    if arithmetic == "int32":
        merge_s += host.add_s(plan.num_rows, width, width, np.float32)  # dequantise
    if weights_sent:
        transfer_b += weight_b
    details = {"h2d_bytes": transfer_b, "d2h_bytes": retrieve_b, "d2h_padding_bytes": pad_b,
               "load_bytes": load_b, "d2h_block_bytes": block, "mram_max_bytes": mram_max,
               "wram_bytes": wram_max, "dpus_used": active, **critical}
    return Cost(transfer_b / h2d, kernel_s, retrieve_s, merge_s, load_b / h2d, tuple(violations), details)
