"""LLVM features that numba does not expose: a software prefetch and a stack row.

Note [software prefetch]
    SpMM gathers rows ``x[indices[p]]`` in an order only the index array
    knows, so the hardware prefetcher (which follows strides) cannot fetch
    them early. Issuing ``llvm.prefetch`` for the rows ``dist`` edges ahead
    keeps several independent cache misses in flight per core, which is what
    bounds a gather-heavy kernel once the feature rows leave L2. The distance
    is a tuning knob (``Variant.prefetch``); 0 disables it.

    The hint is ``prefetcht0`` (into every level). Prefetching into L2 only
    (``prefetcht1``/``prefetcht2``, LLVM locality 2/1) was tried as a
    further knob: ``benchmarks/bench_spmm.py``, 4M edges, 9 rounds, each
    locality tuned for itself in its own process, DGL's ``copy_u_sum`` as
    the yardstick in each. It helped one cell and hurt two: R-MAT F = 32
    9.7 -> 8.7 / 8.8 ms (1.45x -> 1.54x / 1.52x DGL), R-MAT F = 64 15.1 ->
    17.0, R-MAT F = 128 40.0 -> 55.1 / 53.5 (the tuner then chose no
    prefetch at all), uniform F = 128 60.7 -> 66.1 / 62.0; F = 16 and
    uniform F = 32 / 64 unchanged. The locality is an immediate of the
    instruction, so as a knob it would double the kernels compiled per width
    for one cell; it is left out.

    Both together (``prefetcht1`` far ahead, to get more misses in flight
    than the core's fill buffers hold, and ``prefetcht0`` near) lose too.
    The fixed width-``F`` loop with 4-edge unroll and streaming stores, one
    process, 9 interleaved rounds, ms for ``t0`` at 16 edges alone against
    ``t1`` at 48-256 edges added: uniform F = 32 14.1 against 15.9-16.1,
    uniform F = 64 19.7 against 22.1-22.8, R-MAT F = 128 39.8 against
    41.5-42.3. Uniform F = 128 gave 63.3 against 54.3 (``t1`` at 96) in
    one run and 53.8 against 57.5 in the next, so that gain was drift.

    Nor does telling hot rows from cold ones help. "Hot" = the most gathered
    source rows whose bytes fit 0.5-2 MiB (R-MAT F = 128: 35-60 % of the
    edges; the uniform graph: 1-12 %). Same loop, same setup, ms for ``t0``
    on every row against the variants:

    * ``prefetchnta`` for cold rows (fetched around L2, so they cannot evict
      the hot ones), ``t0`` for hot: R-MAT F = 128 45.8-46.3 against
      53.3-97.8; uniform F = 128 58.1-59.4 against 193-200; uniform F = 32
      13.9-14.0 against 37.6-40.8;
    * no prefetch for hot rows (L2 hits anyway), ``t0`` for cold: 45.6-47.5
      on R-MAT, 63.0-64.8 and 18.5-20.7 on the uniform graph.

    A two-pass split fares no better: each row's indices reordered hot
    first, one pass summing the cold edges into ``out``, a second adding
    the hot ones (their rows then meet no cold traffic in L2). R-MAT F =
    128: 45.7-46.0 against 44.9 in one pass (hot set 1-3 MiB), F = 64:
    16.4-18.1 against 14.9. The hot rows already stay in L2 in one pass;
    the second pass only re-reads ``out``.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch_row", "prefetch_item", "stack_row"]


@intrinsic
def prefetch_row(typingctx, array, row, col):
    """Prefetch ``array[row, col]`` of a C-contiguous 2-D array into all cache levels.

    Compiles to one ``prefetcht0`` instruction; it never faults, so an index
    past the end is harmless but should still be avoided (it wastes a fill).

    Args:
        array: a 2-D NumPy array (numba type).
        row: the row index.
        col: the column index.
    """
    if not (isinstance(array, types.Array) and array.ndim == 2):
        return None
    sig = types.void(array, row, col)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        r = context.cast(builder, args[1], signature.args[1], types.intp)
        c = context.cast(builder, args[2], signature.args[2], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [r, c], wraparound=False)
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, rw=0 read, locality=3 keep in all levels, cache type=1 data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch_item(typingctx, array, index):
    """Prefetch ``array[index]`` of a C-contiguous 1-D array into all cache levels (see :func:`prefetch_row`)."""
    if not (isinstance(array, types.Array) and array.ndim == 1):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def stack_row(typingctx, like, size):
    """A pointer to ``size`` uninitialised elements of ``like``'s dtype on the stack (Note [stack accumulator]).

    ``size`` must be a compile-time constant (a closure constant of a
    width-specialised kernel); wrap the result with ``numba.carray(ptr,
    (size,))``. The space lives in the entry block of the compiled function,
    so a call inside a loop does not grow the stack.
    """
    if not (isinstance(like, types.Array) and isinstance(size, types.IntegerLiteral)):
        return None
    n = size.literal_value
    sig = types.CPointer(like.dtype)(like, size)

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(signature.args[0].dtype), size=n)

    return sig, codegen
