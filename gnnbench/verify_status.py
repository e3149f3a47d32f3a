"""Whether a system's figures count: its latest verification record for this exact build."""
from __future__ import annotations

__all__ = ["verification_status"]


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
