"""The run-time check of a sampled run: the system's forward on the blocks the run computes on, against ``reference``.

Note [run-time check on blocks]
    A sampled run (Note [sampled batching] in :mod:`gnnbench.run.sampled`)
    never computes on the full graph: every layer runs on a rectangular block
    (Note [blocks] in :mod:`gnnbench.runtime.graph`), where a kernel that
    takes the destination count for ``x``'s rows is wrong and every square
    graph hides it. So before its first epoch, outside every timer, the run
    calls :func:`check_blocks` on two batches of its first epoch: batch 0 and
    one later batch the run's seed picks (:func:`checked_batches`), drawn by
    the run's own sampler with the run's keys, so they are the very blocks
    epoch 0 computes on (Note [sampling determinism]). Each batch is checked
    as Note [run-time check] checks the full graph: one forward of the model
    (no dropout, no autograd) with every kernel call's inputs checksummed,
    the first call of every operator variant on every layer's block
    recorded, and each recomputed by ``reference`` in float64 on
    :data:`~gnnbench.check.run_check.SAMPLED_ROWS` sampled destination rows
    of that block (plus its longest), with the same tolerance, the same
    quantised bound and the same messages.

    ``extra.run_check`` holds ``status``, ``dtype``, ``operators`` (every
    variant checked), ``batches`` (the checked batches' indices in epoch
    0), ``layers`` (per layer, outermost first: the ``operators`` checked on
    its block and the ``rows_sampled`` per checked batch), ``forward_seconds``
    (the system's checksummed forwards), ``seconds`` (the whole check) and
    ``share``: ``seconds`` over the wall time from the check's start to the
    end of the last epoch (the sampler's set-up excluded), which the loop
    adds after its epochs. A wrong block stores the row ``failed`` naming
    the operator, the layer and the batch (``operator``, ``layer``,
    ``batch``). ``--no-check`` turns it off (``status`` ``off``), as for
    full-graph runs; a native baseline runs no system kernels and is not
    checked.

    After the timed epochs and the per-block tuning of the warm-ups (Note
    [tuning blocks] in :mod:`gnnbench.run.sampled`), the run checks the last
    batch of its last epoch the same way (:func:`check_blocks_after_epochs`,
    Note [closing check] in :mod:`gnnbench.check.run_check`), drawn again
    with that epoch's keys: ``extra.run_check.closing`` holds it, with
    ``epoch`` and ``when``, and a mismatch there turns the finished row
    ``failed`` naming the operator, the layer, the batch and the epoch.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from gnnbench.check.run_check import (CLOSING, OPENING, RunCheckError, _checksummed, _recording, _sample_rows,
                                      _verdict, check_not_run, checked, failed_after_epochs, judged, mismatch,
                                      prefix)

__all__ = ["check_blocks", "check_blocks_after_epochs", "checked_batches"]


def checked_batches(num_batches: int, seed: int) -> list[int]:
    """Indices of the batches of epoch 0 the check runs on: the first, and one later one ``seed`` picks."""
    if num_batches <= 1:
        return [0] * num_batches
    return [0, 1 + int(np.random.default_rng([seed, num_batches]).integers(num_batches - 1))]


def check_blocks(config, F, blocks, sampler, seed_nodes: np.ndarray, features: np.ndarray, self_loops: bool,
                 clock=time.perf_counter, epoch: int = 0, last_batch: bool = False) -> dict[str, Any]:
    """Note [run-time check on blocks]: ``extra.run_check`` of a sampled run, or raises :class:`RunCheckError`.

    Args:
        config (RunConfig): the run (``config.check`` off: nothing runs).
        F: the run's frontend; ``blocks`` the system's model on blocks (``KernelBlocks``).
        sampler (Sampler): the run's sampler; ``seed_nodes`` its epochs' seed nodes.
        features: the dataset's features (per node type on a typed dataset), gathered per batch as the loop
            gathers them (``batch.gather``).
        self_loops (bool): whether the model's blocks carry destination self loops.
        clock (callable): the timer (default: ``time.perf_counter``).
        epoch (int): the epoch whose batches are checked (the opening check: 0).
        last_batch (bool): check that epoch's last batch (the closing check, Note [closing check]) instead of
            :func:`checked_batches`.
    """
    from gnnbench.sampling import epoch_batches

    not_run = check_not_run(config, F)
    if not_run is not None:
        return not_run
    start = clock()
    seeds = epoch_batches(seed_nodes, config.batch_size, sampler.seed, epoch, shuffle=config.mode == "train")
    when = CLOSING if last_batch else OPENING
    details: dict[str, Any] = {"status": "passed", "dtype": config.dtype, "operators": [], "batches": [],
                               "layers": [], "forward_seconds": 0.0, **({"epoch": epoch, "when": when}
                                                                         if last_batch else {})}
    try:
        for b in [len(seeds) - 1] if last_batch else checked_batches(len(seeds), config.seed):
            batch = sampler.sample(seeds[b], epoch, b)
            prepared = blocks.prepare(batch.graphs(self_loops))
            _check_batch(config, F, blocks, prepared, batch.gather(F, features), b, details, clock, when)
            details["batches"].append(b)
    finally:
        details["seconds"] = clock() - start
    return details


def check_blocks_after_epochs(row: dict[str, Any], config, F, blocks, sampler, seed_nodes: np.ndarray,
                              features: np.ndarray, self_loops: bool, epoch: int) -> dict[str, Any]:
    """Note [closing check]: ``row`` with the last batch of ``epoch`` (the last the run trained) checked into
    ``extra.run_check.closing``, turned ``failed`` if the check failed; nothing runs unless the opening check
    passed."""
    opening = (row.get("extra") or {}).get("run_check") or {}
    if opening.get("status") != "passed":
        return row
    try:
        opening["closing"] = check_blocks(config, F, blocks, sampler, seed_nodes, features, self_loops, epoch=epoch,
                                          last_batch=True)
    except RunCheckError as err:
        return failed_after_epochs(row, err)
    return row


def _check_batch(config, F, blocks, prepared: list, xb, b: int, details: dict[str, Any], clock,
                 when: str = OPENING) -> None:
    """One batch's forward on the system, every layer's recorded calls compared (on a typed block, every relation's:
    Note [run-time check of relational blocks]); fills ``details`` or raises."""
    where_of = _graphs_of(prepared)
    calls: dict[tuple[int, str | None, str], tuple] = {}
    written: list[str] = []
    start = clock()
    with _recording(F, calls, key=lambda graph, label: (*where_of[id(graph)][:2], label)), \
            _checksummed(prepared[0].system, written), F.no_grad():
        blocks.forward(prepared, xb, False)
    details["forward_seconds"] += clock() - start
    if written:
        details.update(status="failed", batch=b)
        raise RunCheckError(f"{prefix(when)}: {written[0]} during the forward on batch {b}'s blocks of "
                            f"{config.dataset} ({config.dtype}); {_verdict(when)}", details)
    layers = details["layers"]
    layers.extend({"operators": [], "rows_sampled": []} for _ in range(len(prepared) - len(layers)))
    rng = np.random.default_rng([config.seed, b])
    graph_of = {where[:2]: where[2] for where in where_of.values()}
    rows_of = {key: _sample_rows(graph, rng) for key, graph in graph_of.items()}  # in layer, relation order
    for (layer, relation, label), call in calls.items():
        graph, rows = graph_of[layer, relation], rows_of[layer, relation]
        bad = judged(call, graph, rows, config, F)
        named = label if relation is None else f"{label} on relation {relation}"
        if bad:
            details.update(status="failed", operator=named, layer=layer, batch=b,
                           **({} if relation is None else {"relation": relation}))
            epoch = f" of epoch {details['epoch']}" if "epoch" in details else ""
            where = f"layer {layer}'s block of batch {b}{epoch} of {config.dataset}"
            raise RunCheckError(mismatch(config, named, where, graph, call[2], rows, bad, when), details)
        checked(details, layer, label, call)
        if relation is not None:
            relations = layers[layer].setdefault("relations", [])
            if relation not in relations:
                relations.append(relation)
    sampled = {}
    for (layer, _), rows in rows_of.items():
        sampled[layer] = sampled.get(layer, 0) + int(len(rows))
    for layer, count in sampled.items():
        layers[layer]["rows_sampled"].append(count)


def _graphs_of(prepared: list) -> dict[int, tuple[int, str | None, Any]]:
    """``id(bound graph) -> (layer, relation or None, graph)`` of every graph a batch's forward runs operators on.

    Note [run-time check of relational blocks]
        A typed block (Note [typed layers on blocks] in models/typed.py) is one bipartite graph per relation,
        each bound to the system apart. The check records the first call of every operator variant on every
        relation of every layer, judges it on sampled rows of that relation's block, and names the relation,
        the layer and the batch on a mismatch (as Note [run-time check of relations] does on the full graph).
        ``layers[l].relations`` lists the relations checked at layer ``l``; a relation that has no destination
        or no source in a block runs nothing there and has nothing to check.
    """
    out: dict[int, tuple[int, str | None, Any]] = {}
    for layer, bound in enumerate(prepared):
        relations = getattr(bound, "relations", None)
        if relations is None:
            out[id(bound)] = (layer, None, bound.graph)
            continue
        for r, b in zip(bound.graph.relations, relations):
            if b is not None:
                out[id(b)] = (layer, str(r), b.graph)
    return out
