"""LLVM features that numba does not expose: a software prefetch and a stack row.

Note [software prefetch]
    SpMM gathers rows ``x[indices[p]]`` in an order only the index array
    knows, so the hardware prefetcher (which follows strides) cannot fetch
    them early. Issuing ``llvm.prefetch`` for the rows ``dist`` edges ahead
    keeps several independent cache misses in flight per core, which is what
    bounds a gather-heavy kernel once the feature rows leave L2. The distance
    is a tuning knob (``Variant.prefetch``); 0 disables it.

    The hint is ``prefetcht0`` (into every level). Prefetching into L2 only
    helped one cell of ``benchmarks/bench_spmm.py`` and hurt two, and the
    locality is an immediate of the instruction, so as a knob it would
    double the kernels compiled per width for one cell: it is left out.
    Prefetching far ahead into L2 and near into L1 together lost too, and so
    did telling hot rows (the most gathered, which stay in L2 anyway) from
    cold ones, by hint or by a second pass that only re-reads ``out``. The
    measurements: ``results/studies/isplib-variants.md``.
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
