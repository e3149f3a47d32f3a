"""The relations a failing typed call involves: the run-time check's narrowing of a ``typed_aggregate`` mismatch on
the homogeneous form to the relations whose edges reproduce it.

Note [relation of a typed failure]
    R-GCN on a system with the typed operator runs a layer's every relation
    in one ``typed_aggregate`` call on the homogeneous form (Note [R-GCN on
    the typed operator] in models/rgcn.py), so the run-time check records
    one call per layer there, not one per relation (Note [run-time check of
    relations] in :mod:`gnnbench.check.run_check`). A mismatch on it would
    name only "the homogeneous form", where a kernel that indexes the
    relations wrongly is wrong on one relation. So the check narrows it as
    verify does (Note [the relation a failure involves] in
    :mod:`gnnbench.check.conformance`): the candidates are the relations of
    the sampled rows' in-edges (no other edge reaches a judged element,
    Note [backward on sampled rows]); the call runs again on the system with
    its per-edge float inputs (``norm``) zeroed outside a subset of them,
    and is judged again, forward and backward, on the same rows. The
    subsets halve (group testing): a subset whose run still differs is
    split, one that agrees is dropped, so one wrong relation among ``R``
    costs about ``2 log2 R`` runs. A subset that differs while neither half
    does (a fault that needs two relations together) is named whole. At
    most :data:`MOST_RUNS` runs are made, which a fault confined to a few
    relations never reaches. The failure then names the operator and each
    relation found, ``source-name->destination``, and its index:
    ``typed_aggregate on relation fos-rev_topic->paper ...; every wrong element
    involves etype = 6 (of R=7)``. Where no subset reproduces the mismatch
    on its own, the line names the homogeneous form, as before.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["MOST_RUNS", "relations_at_fault", "index_text", "relation_text", "edges_kept"]

#: the most re-runs the narrowing makes (Note [relation of a typed failure])
MOST_RUNS = 32
#: the most relations a failure line names
_SHOWN = 5


def relations_at_fault(candidates: Sequence[int], still_wrong: Callable[[Sequence[int]], bool],
                       most_runs: int = MOST_RUNS) -> list[int]:
    """The relations among ``candidates`` (which together are wrong) that a failure involves: a single
    candidate is named at once; else halves that ``still_wrong(subset)`` keep, down to single relations
    (Note [relation of a typed failure]). ``[]``: no subset is wrong on its own."""
    runs = 0

    def wrong(subset) -> bool:
        nonlocal runs
        runs += 1
        return still_wrong(subset)

    def search(subset: list[int], known: bool = False) -> list[int]:
        if len(subset) == 1:
            return subset
        found: list[int] = []
        half = len(subset) // 2
        for part in (subset[:half], subset[half:]):
            if runs < most_runs and wrong(part):
                found += search(part)
        return found or (subset if not known else [])

    return search(sorted(int(c) for c in candidates), known=True)


def index_text(index: str, values: Sequence[int], symbol: str, count: int) -> str:
    """``'; every wrong element involves etype = 6 (of R=7)'`` (the text verify ends such a failure with)."""
    shown = ", ".join(str(v) for v in values[:_SHOWN]) + (", ..." if len(values) > _SHOWN else "")
    return f"; every wrong element involves {index} = {shown} (of {symbol}={count})"


def relation_text(names: Sequence[str]) -> str:
    """``'relation a-r->b'`` or ``'relations a-r->b, c-s->d'``, the first few."""
    shown = ", ".join(names[:_SHOWN]) + (", ..." if len(names) > _SHOWN else "")
    return f"relation{'s' if len(names) > 1 else ''} {shown}"


def edges_kept(kinds: np.ndarray, subset: Sequence[int]) -> np.ndarray:
    """``[E]`` bool: the edges whose relation is in ``subset``."""
    return np.isin(kinds, np.asarray(list(subset), dtype=kinds.dtype))
