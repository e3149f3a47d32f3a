"""How one verification runs: :class:`VerifySettings`, built once from ``gnnbench verify``'s options.

The settings travel unchanged from the CLI to :func:`gnnbench.verify.suite.verify`
and on to the child process that runs the checks
(:mod:`gnnbench.verify.isolation`), so a frozen dataclass of plain values:
it pickles, and nothing on the way can change it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VerifySettings", "DEFAULT_TIME_LIMIT"]

#: Seconds one check group may run without finishing a case before it counts as hung (numba-compiled
#: systems compile on first use, which takes minutes on a busy machine).
DEFAULT_TIME_LIMIT = 1200.0


@dataclass(frozen=True)
class VerifySettings:
    """What one verification checks, and how.

    Args:
        operator (str, optional): only this operator's conformance cases (no end-to-end parity)
            (default: every operator).
        slow (bool): also run the ``2**31``-element case (default: ``False``).
        profile (str): conformance profile, ``full`` or ``fast`` (default: ``full``).
        framework (str): framework whose glue is verified (default: ``torch``).
        device (str): ``cpu`` or ``cuda`` (default: ``cpu``).
        threads (int, optional): torch threads for the system (default: unchanged).
        e2e (bool): run end-to-end parity and the model checks (default: ``True``).
        fallback (str, optional): system lending end-to-end training the operators the verified system
            lacks (Note [fallback accounting] in :mod:`gnnbench.runtime.fallback`; default: none).
        guard (bool): run kernels under the guarded runtime (default: ``True``).
        isolate (bool): run the checks in child processes (Note [isolated verification]) (default: ``True``).
        time_limit (float): seconds one check group may take before it counts as hung
            (default: :data:`DEFAULT_TIME_LIMIT`).
        models (str, optional): ``"module:attribute"`` of a model table to check instead of
            ``models.MODELS`` (Note [model check]; for testing the check itself) (default: ``None``).
        kinds (tuple of str, optional): only these check groups: ``op``, ``dims``, ``quantised``, ``repeat``, ``large``,
            ``model``, ``e2e``
            (default: all); like ``operator``, a partial run is recorded only when it fails.
    """

    operator: str | None = None
    slow: bool = False
    profile: str = "full"
    framework: str = "torch"
    device: str = "cpu"
    threads: int | None = None
    e2e: bool = True
    fallback: str | None = None
    guard: bool = True
    isolate: bool = True
    time_limit: float = DEFAULT_TIME_LIMIT
    models: str | None = None
    kinds: tuple[str, ...] | None = None

    @property
    def partial(self) -> bool:
        """Whether only some checks run: such a run is recorded only when it fails (passing part does not verify)."""
        return self.operator is not None or self.kinds is not None
