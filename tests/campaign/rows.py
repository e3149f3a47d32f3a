"""Stored runs made up for the campaign tests: what a sweep stores, with seeded epoch times."""
from __future__ import annotations

import random


def fake_row(i: int, system: str, model: str = "gcn", edges: int = 4_000_000, scale: float = 1.0,
             status: str = "ok", commit: str = "0123456789abcdef", allocator: str = "auto") -> dict:
    rng = random.Random(i)
    times = [0.1 * scale * (1 + 0.01 * rng.random()) for _ in range(6)]
    ok = status == "ok"
    return {
        "id": i, "timestamp": f"2026-12-01T00:{i // 60:02d}:{i % 60:02d}+00:00", "status": status,
        "error": None if ok else "Killed: out of memory", "system": system, "system_hash": f"h-{system}",
        "model": model, "dataset": f"rmat:nodes=1000,edges={edges},features=128,classes=8",
        "framework": "torch", "epochs": 8, "warmup": 2, "threads": 2, "allocator": "tcmalloc", "seed": 0,
        "git_commit": commit, "verified": "passed",
        "epoch_times": times if ok else None, "epoch_time_median_s": sorted(times)[3] if ok else None,
        "forward_median_s": 0.04 * scale if ok else None, "backward_median_s": 0.05 * scale if ok else None,
        "kernel_median_s": 0.03 * scale if ok else None, "prepare_time_s": 0.5 if ok else None,
        "tune_time_s": 1.5 if system == "isplib" and ok else None,
        "peak_memory_bytes": int(2**28 * scale) if ok else None,
        "machine": {"cpu_count": 2}, "machine_state": {"load_before": [1.0 + i / 100, 1, 1],
                                                       "load_after": [1.5 + i / 100, 1, 1]},
        "hyperparameters": {"mode": "train"},
        "extra": {"held_bytes": 2**26, "sweep": {"spec": {"allocator": allocator}}},
    }


def fake_rows(systems=("isplib", "dgl-native"), models=("gcn", "sage"), sizes=(4_000_000, 16_000_000),
              rounds: int = 3) -> list[dict]:
    rows, i = [], 1
    for size in sizes:
        for _ in range(rounds):
            for model in models:
                for s, system in enumerate(systems):
                    rows.append(fake_row(i, system, model, size, scale=(1 + s * 0.2) * size / 4e6))
                    i += 1
    return rows
