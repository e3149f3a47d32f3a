"""Whether a system's figures count: its latest verification record for this exact build."""
from __future__ import annotations

__all__ = ["verification_status", "with_current_status"]


def verification_status(store, system: str | None, system_hash: str | None) -> str:
    """``passed`` or ``failed`` from the latest record matching the system's hash, else ``unverified``.

    Native baselines are the peers' own models, not kernels: they have no
    operator to verify, and count as ``unverified`` unless recorded otherwise.
    """
    if not system:
        return "unverified"
    record = store.latest_verification(system, system_hash)
    if record is None:
        return "unverified"
    return "passed" if record.get("status") == "passed" else "failed"


def with_current_status(store, rows: list[dict]) -> list[dict]:
    """``rows`` with ``verified`` looked up now by system name and build hash (Note [status by build hash]).

    Note [status by build hash]
        A row's ``verified`` column is what was known when the run was made:
        a run made before ``gnnbench verify`` says ``unverified`` for ever,
        beside later ``passed`` rows of the same build. Displays (``run``,
        ``results``, ``compare``) call this instead, so every row of one
        build shows that build's latest verification. Copies are returned;
        the stored rows are not changed.
    """
    cache: dict[tuple, str] = {}
    fresh = []
    for row in rows:
        key = (row.get("system"), row.get("system_hash"))
        if key not in cache:
            cache[key] = verification_status(store, *key)
        fresh.append({**row, "verified": cache[key]})
    return fresh
