"""The ``2**31`` case: ``spmm`` on a tensor whose flat element index passes what 32-bit arithmetic holds.

``verify --slow`` runs it (:func:`large_index_case`); where free memory is
short of what it needs, it is skipped with the numbers, never silently.
"""
from __future__ import annotations

import time

import numpy as np

from gnnbench.check.conformance import TOLERANCES, CaseResult, _nullcontext, _torch_threads, compare, guarded

__all__ = ["large_index_case", "LARGE_INDEX_LABEL", "LARGE_WIDTH"]

#: ``x`` is ``[N, 1, LARGE_WIDTH]`` float32 with ``N * LARGE_WIDTH`` just above ``2**31``, on a ring graph.
LARGE_WIDTH = 64
#: the row of the case as verify runs it
LARGE_INDEX_LABEL = f"large index (N x F > 2^31, F={LARGE_WIDTH})"


def _available_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    import psutil

    return int(psutil.virtual_memory().available)


def large_index_case(system: str, framework: str = "torch", device: str = "cpu", threads: int | None = None,
                     guard: bool = True, min_elements: int = 2**31, width: int = LARGE_WIDTH) -> CaseResult:
    """``spmm(reduce=sum)`` forward and ``grad x`` on a ring whose ``x`` has more than ``min_elements`` elements.

    Edge ``i+1 -> i`` (mod N), int32 indices, float32: ``out[i] = x[i+1]`` and
    ``grad_x[j] = grad_out[j-1]`` exactly, so a flat index computed in 32-bit
    arithmetic (``i * F`` overflowing) shows as a wrong row past element
    ``2**31``. Values are ``(i * F + d) mod p`` for a prime ``p < 2**24``: exact in
    float32 and different for rows ``2**32 / F`` apart. Skipped, with the
    numbers, when free memory is short of what the case needs.
    """
    import torch

    from gnnbench.frameworks.torch_frontend import TorchFrontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    n = min_elements // width + 1024
    if framework != "torch":
        return CaseResult(f"large index (F={width})", "skipped", reason=f"runs under torch only (got {framework})")
    label = f"large index (N x F > 2^31, F={width})" if min_elements >= 2**31 else \
        f"large index (N x F > {min_elements}, F={width})"
    tensor_bytes = n * width * 4
    need = 5 * tensor_bytes + 16 * n * 8   # x, out, grad_x, the oracle-style message buffer, slack; graph arrays
    have = _available_bytes(device)
    if need > have:
        return CaseResult(label, "skipped", reason=f"needs about {need / 2**30:.0f} GiB of free memory for "
                          f"N={n}, F={width} float32 ({n * width} elements per tensor); "
                          f"{have / 2**30:.0f} GiB available on {device}")
    row = CaseResult(label, cases=1)
    begin = time.perf_counter()
    where = f"spmm(reduce=sum) {{}} on 'ring' (int32, N={n}, F={width}, H=1)"
    try:
        idx = np.arange(n, dtype=np.int64)
        graph = Graph.from_edges((idx + 1) % n, idx, n, np.int32)
        del idx
        glue = load_system(system, framework, device)
        F = TorchFrontend(device=device, dtype="float32")
        x = torch.empty((n, 1, width), dtype=torch.float32, device=device)
        _fill_pattern(x)
        x.requires_grad_(True)
        with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or torch.get_num_threads()):
            try:
                out = F.spmm(BoundGraph(graph, glue), x, None, reduce="sum")
            except Exception as err:  # noqa: BLE001
                row.failures.append(where.format("output") + f": raised {type(err).__name__}: {err}")
                out = None
            if out is not None:
                bad = _check_shift(out.detach(), x.detach(), +1)
                if bad:
                    row.failures.append(where.format("output") + f": {bad}")
                try:
                    (grad_x,) = torch.autograd.grad(out, [x], x.detach())
                    bad = _check_shift(grad_x, x.detach(), -1)
                    if bad:
                        row.failures.append(where.format("grad x") + f": {bad}")
                except Exception as err:  # noqa: BLE001
                    row.failures.append(where.format("backward") + f": raised {type(err).__name__}: {err}")
    finally:
        row.seconds = time.perf_counter() - begin
    if row.failures:
        row.status, row.failed_cases = "failed", 1
    return row


_PRIME = 16777213  # the largest prime below 2**24: every value is an exact float32


def _fill_pattern(x, rows_per_chunk: int = 1 << 20) -> None:
    import torch

    n, _, width = x.shape
    d = torch.arange(width, dtype=torch.int64, device=x.device)
    for a in range(0, n, rows_per_chunk):
        i = torch.arange(a, min(a + rows_per_chunk, n), dtype=torch.int64, device=x.device)
        x[a:a + len(i), 0] = ((i[:, None] * width + d) % _PRIME).to(torch.float32)


def _check_shift(actual, x, shift: int, rows_per_chunk: int = 1 << 20) -> str | None:
    """``actual[i] == x[(i + shift) mod N]`` chunk by chunk; the first mismatch described with global indices."""
    import torch

    n = x.shape[0]
    for a in range(0, n, rows_per_chunk):
        b = min(a + rows_per_chunk, n)
        src = torch.arange(a, b, device=x.device).add_(shift).remainder_(n)
        expected = x[src]
        if not torch.equal(actual[a:b], expected):
            bad = compare(actual[a:b].cpu().numpy(), expected.cpu().numpy(), TOLERANCES["float32"]) or "differs"
            rows = torch.nonzero((actual[a:b] != expected).any(-1).any(-1))
            first = a + int(rows[0]) if rows.numel() else a
            return f"first wrong row {first} (flat element {first * x.shape[-1]}); in its chunk of rows from {a}: {bad}"
    return None
