"""What a run of the ``pim`` system reports: modeled PIM time and measured wall time, apart.

Two kinds of figures never mix here:

* **modeled** seconds (``modeled_*``): what the UPMEM machine described by the
  machine file would take, from the cost model, per phase (transfer, kernel,
  retrieve, merge) and per direction (forward aggregation on the forward view,
  backward aggregation on the transposed view), plus the one-off adjacency
  ``load`` of every layout;
* **measured** seconds (``measured_*``): wall time this process spent
  simulating the DPUs functionally, and running the host-side kernels.

``report()`` returns a plain dict (JSON-ready) that the harness stores in the
run's ``extra`` column; ``reset()`` clears the per-call figures and keeps the
loads of layouts still resident.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

__all__ = ["Accounting", "PHASES", "DIRECTIONS"]

PHASES = ("transfer", "kernel", "retrieve", "merge")
DIRECTIONS = ("forward", "backward")


class Accounting:
    """Accumulates modeled and measured time of the PIM system (one per process)."""

    def __init__(self) -> None:
        self.layouts: list[dict] = []
        self.reset()

    def reset(self, layouts: bool = False) -> None:
        """Clear per-call figures; with ``layouts=True`` also forget loaded layouts and their load time."""
        self.modeled = {d: dict.fromkeys(PHASES, 0.0) for d in DIRECTIONS}
        self.calls = dict.fromkeys(DIRECTIONS, 0)
        self.sim_wall = dict.fromkeys(DIRECTIONS, 0.0)
        self.host_wall: dict[str, float] = {}
        self.host_calls: dict[str, int] = {}
        self.overflow = 0
        self.weight_sends = 0
        self.last_quantisation: dict | None = None
        if layouts:
            self.layouts = []

    def add_layout(self, orientation: str, graph: str, choice: dict, load_s: float, reason: str) -> None:
        """Record a layout loaded onto the DPUs (its adjacency load is modeled once)."""
        self.layouts.append({"orientation": orientation, "graph": graph, "reason": reason,
                             "modeled_load_s": load_s, **choice})

    def add_call(self, direction: str, cost, wall_s: float, overflow: int, quant: dict | None,
                 weights_sent: bool) -> None:
        """Record one aggregation: its modeled phases and its measured simulation time."""
        m = self.modeled[direction]
        m["transfer"] += cost.transfer_s
        m["kernel"] += cost.kernel_s
        m["retrieve"] += cost.retrieve_s
        m["merge"] += cost.merge_s
        self.calls[direction] += 1
        self.sim_wall[direction] += wall_s
        self.overflow += overflow
        self.weight_sends += int(weights_sent)
        if quant is not None:
            self.last_quantisation = quant

    @contextmanager
    def host_kernel(self, name: str):
        """Time a host-side kernel call (measured, not modeled)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.host_wall[name] = self.host_wall.get(name, 0.0) + time.perf_counter() - t0
            self.host_calls[name] = self.host_calls.get(name, 0) + 1

    def report(self, *, machine: dict, options: dict, host: dict) -> dict:
        """All figures as one JSON-ready dict (keys say modeled or measured)."""
        per_dir = {}
        for d in DIRECTIONS:
            phases = {f"{p}_s": v for p, v in self.modeled[d].items()}
            total = sum(self.modeled[d].values())
            per_dir[d] = {**phases, "total_s": total, "calls": self.calls[d],
                          "per_call_s": total / self.calls[d] if self.calls[d] else 0.0}
        load = {d: sum(x["modeled_load_s"] for x in self.layouts if x["orientation"] == d) for d in DIRECTIONS}
        return {
            "system": "pim",
            "machine": machine,
            "options": options,
            "configuration": self.layouts,
            "modeled_aggregation_s": per_dir,
            "modeled_aggregation_total_s": sum(per_dir[d]["total_s"] for d in DIRECTIONS),
            "modeled_load_s": {**load, "total": sum(load.values())},
            "measured_simulation_wall_s": {**self.sim_wall, "total": sum(self.sim_wall.values())},
            "measured_host_kernels_wall_s": dict(self.host_wall),
            "host_kernel_calls": dict(self.host_calls),
            "int32_overflow_count": self.overflow,
            "weight_transfers": self.weight_sends,
            "last_quantisation": self.last_quantisation,
            "host_merge_rates": host,
        }
