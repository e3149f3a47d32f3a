"""The row operations of isplib's SpMM loop: zero a row, add gathered rows, write a row.

Each operation has two implementations, picked when numba compiles the loop:

* the accumulator is a pointer from
  :func:`~gnnbench.systems.isplib.intrinsics.stack_row` and the width a
  compile-time constant (the width-specialised kernel): one LLVM vector of
  ``width`` elements per row (Note [explicit row vectors]);
* otherwise (the generic kernel, whose width is known only at run time, and
  whose accumulator is the output row): a loop over the columns.

numba's disk cache stamps a kernel with its own source file only, so after
editing this module clear the cache (``__pycache__/*.nbi``, ``*.nbc``) or
touch ``spmm_numba.py``, or the old machine code is loaded.

Both sum the gathered rows in the same pairwise order, ``(x0 + x1) + (x2 + x3)``
for four edges, so the two kernels differ only in the fused multiply-adds of
the weighted sums.

Note [explicit row vectors]
    Written as ``for f in range(F): acc[f] += x[j0, f] + x[j1, f] + ...``
    with ``F`` a constant, LLVM fully unrolls the column loop and then
    vectorises the *edge* loop instead (with ``reassoc`` the per-column sums
    over edges are reductions it may reorder): each group of edges became
    ``vpgatherqq`` of the indices and ``F`` hardware gathers ``vgatherqps``
    of one column across 4 edges, plus a sign fix-up of every index
    (numba's negative-index wraparound). At F = 8 that loop ran slower than
    DGL's ``copy_u_sum`` even with the gathered rows resident in L2;
    without ``reassoc`` it stayed scalar (8 ``vaddss`` per edge) and no faster.

    Here a row is one ``<F x float>`` value: a gathered row is one vector load,
    the sum one vector add per edge, and the accumulator, only ever
    accessed whole, is promoted from the stack into vector registers for the
    whole row. The loop vectoriser does not touch a loop that already holds
    vector values. On the 4M-edge R-MAT graph it beat the former loop at
    every width measured (F = 8 to 128), and DGL's ``copy_u_sum`` too:
    ``results/studies/isplib-kernels.md``.

Note [streaming stores]
    An SpMM writes each output row once and never reads it back, yet a
    plain store first reads the line it writes (a read for ownership) and
    leaves it in the caches, where it evicts feature rows the gathers would
    have hit. ``stream_row`` writes a row as one aligned non-temporal store
    per 64-byte line (``vmovntps``), past the caches, and the kernel ends
    each block of rows with an ``sfence`` so the rows are visible before the
    block counts as done. Only the width-specialised kernel has the form (its
    row is a register value); the row must start on a line and be whole
    lines (:func:`~gnnbench.systems.isplib.variant.streams` checks at every
    call, and writes through the caches otherwise). PyTorch and TensorFlow
    allocate 64-byte aligned, so the framework's outputs qualify at widths
    that are multiples of 16 (float32) or 8 (float64).

    It is a tuning knob (``Variant.stores``, stage 3 of Note [tuning search]),
    not the default, because the row is then in memory and not in the cache
    when the next operation reads it. Its gain is a few per cent of the
    kernel, which the next reader did not give back at the sizes measured,
    and timed in a stage of its own it drowned in the drift between stages,
    so the tuner times it together with the variant it modifies. A prefetch
    that bypasses the caches too (``prefetchnta``) only lost: the rows it
    fetches are not kept in the last-level cache, so every later gather of
    them goes to memory. The figures: ``results/studies/isplib-variants.md``.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["zero_row", "add_rows", "add_scaled_rows", "store_row", "store_scaled_row", "stream_row",
           "stream_scaled_row", "stream_fence", "STREAM_ALIGN"]

#: Bytes a streamed row's address and length must be multiples of (one cache line; Note [streaming stores]).
STREAM_ALIGN = 64


def zero_row(acc, width):
    """``acc[:width] = 0``."""
    raise NotImplementedError("zero_row is compiled by numba only")


def add_rows(acc, x, rows, width):
    """``acc[:width] += x[rows[0], :width] + ...``, summed pairwise; ``rows`` holds 1, 4 or 8 indices."""
    raise NotImplementedError("add_rows is compiled by numba only")


def add_scaled_rows(acc, x, rows, coefs, width):
    """``acc[:width] += coefs[0] * x[rows[0], :width] + ...``, summed pairwise (1, 4 or 8 terms)."""
    raise NotImplementedError("add_scaled_rows is compiled by numba only")


def store_row(out, row, acc, width):
    """``out[row, :width] = acc[:width]``."""
    raise NotImplementedError("store_row is compiled by numba only")


def store_scaled_row(out, row, acc, scale, width):
    """``out[row, :width] = acc[:width] * scale``."""
    raise NotImplementedError("store_scaled_row is compiled by numba only")


def stream_row(out, row, acc, width):
    """``out[row, :width] = acc[:width]`` past the caches (Note [streaming stores]); the row must be line-aligned."""
    raise NotImplementedError("stream_row is compiled by numba only")


def stream_scaled_row(out, row, acc, scale, width):
    """``out[row, :width] = acc[:width] * scale`` past the caches (Note [streaming stores])."""
    raise NotImplementedError("stream_scaled_row is compiled by numba only")


def stream_fence():
    """Order every streamed store before what follows (``sfence``; Note [streaming stores])."""
    raise NotImplementedError("stream_fence is compiled by numba only")


def _vectorised(acc, width) -> bool:
    return isinstance(acc, types.CPointer) and isinstance(width, types.IntegerLiteral)


# --- the width-specialised forms: one LLVM vector per row -------------------------------------------------------

def _vector_type(context, dtype, width: int) -> ir.VectorType:
    return ir.VectorType(context.get_value_type(dtype), width)


def _as_vector_pointer(builder, pointer, vector_type):
    return builder.bitcast(pointer, vector_type.as_pointer())


def _row_pointer(context, builder, array_type, array, row, row_type):
    r = context.cast(builder, row, row_type, types.intp)
    zero = context.get_constant(types.intp, 0)
    return cgutils.get_item_pointer(context, builder, array_type, array, [r, zero], wraparound=False)


def _load_rows(context, builder, x_type, x_value, rows_type, rows_value, vector_type):
    x = context.make_array(x_type)(context, builder, x_value)
    loaded = []
    for u in range(len(rows_type)):
        ptr = _row_pointer(context, builder, x_type, x, builder.extract_value(rows_value, u), rows_type[u])
        loaded.append(builder.load(_as_vector_pointer(builder, ptr, vector_type), align=x_type.dtype.bitwidth // 8))
    return loaded


def _pairwise_sum(builder, values):
    while len(values) > 1:
        values = [builder.fadd(values[k], values[k + 1]) if k + 1 < len(values) else values[k]
                  for k in range(0, len(values), 2)]
    return values[0]


def _broadcast(builder, scalar, vector_type):
    i32 = ir.IntType(32)
    one_lane = builder.insert_element(ir.Constant(vector_type, ir.Undefined), scalar, ir.Constant(i32, 0))
    zeros = ir.Constant(ir.VectorType(i32, vector_type.count), [0] * vector_type.count)
    return builder.shuffle_vector(one_lane, ir.Constant(vector_type, ir.Undefined), zeros)


def _fused_multiply_add(builder, a, b, c):
    """``a * b + c`` rounded once, on vectors (llvmlite's ``IRBuilder.fma`` takes scalars only)."""
    vector_type = a.type
    element = "f32" if vector_type.element == ir.FloatType() else "f64"
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vector_type, [vector_type] * 3),
                                         f"llvm.fma.v{vector_type.count}{element}")
    return builder.call(fma, [a, b, c])


def _accumulate(builder, acc_pointer, vector_type, align, value):
    acc = _as_vector_pointer(builder, acc_pointer, vector_type)
    builder.store(builder.fadd(builder.load(acc, align=align), value), acc, align=align)


@intrinsic
def _vector_zero(typingctx, acc, width):
    if not _vectorised(acc, width):
        return None

    def codegen(context, builder, signature, args):
        vt = _vector_type(context, acc.dtype, width.literal_value)
        builder.store(ir.Constant(vt, None), _as_vector_pointer(builder, args[0], vt), align=acc.dtype.bitwidth // 8)
        return context.get_dummy_value()
    return types.void(acc, width), codegen


@intrinsic
def _vector_add_rows(typingctx, acc, x, rows, width):
    if not _vectorised(acc, width):
        return None

    def codegen(context, builder, signature, args):
        vt = _vector_type(context, x.dtype, width.literal_value)
        loaded = _load_rows(context, builder, x, args[1], rows, args[2], vt)
        _accumulate(builder, args[0], vt, acc.dtype.bitwidth // 8, _pairwise_sum(builder, loaded))
        return context.get_dummy_value()
    return types.void(acc, x, rows, width), codegen


@intrinsic
def _vector_add_scaled_rows(typingctx, acc, x, rows, coefs, width):
    if not _vectorised(acc, width):
        return None

    def codegen(context, builder, signature, args):
        vt = _vector_type(context, x.dtype, width.literal_value)
        loaded = _load_rows(context, builder, x, args[1], rows, args[2], vt)
        scales = [_broadcast(builder, context.cast(builder, builder.extract_value(args[3], u), coefs[u], x.dtype), vt)
                  for u in range(len(coefs))]
        # pairs as one multiply and one fused multiply-add, as ``contract`` lets LLVM do for the loop form
        terms = [_fused_multiply_add(builder, scales[k + 1], loaded[k + 1], builder.fmul(scales[k], loaded[k]))
                 if k + 1 < len(loaded) else builder.fmul(scales[k], loaded[k])
                 for k in range(0, len(loaded), 2)]
        _accumulate(builder, args[0], vt, acc.dtype.bitwidth // 8, _pairwise_sum(builder, terms))
        return context.get_dummy_value()
    return types.void(acc, x, rows, coefs, width), codegen


def _output_row(context, builder, signature, args):
    """``(acc [* scale], pointer to out[row, 0], vector type)`` for a store intrinsic ``(out, row, acc, scale, width)``."""
    out, row, _, scale, width = signature.args
    vt = _vector_type(context, out.dtype, width.literal_value)
    value = builder.load(_as_vector_pointer(builder, args[2], vt), align=out.dtype.bitwidth // 8)
    if not isinstance(scale, types.NoneType):
        value = builder.fmul(value, _broadcast(builder, context.cast(builder, args[3], scale, out.dtype), vt))
    array = context.make_array(out)(context, builder, args[0])
    return value, _row_pointer(context, builder, out, array, args[1], row), vt


@intrinsic
def _vector_store(typingctx, out, row, acc, scale, width):
    if not _vectorised(acc, width):
        return None

    def codegen(context, builder, signature, args):
        value, target, vt = _output_row(context, builder, signature, args)
        builder.store(value, _as_vector_pointer(builder, target, vt), align=out.dtype.bitwidth // 8)
        return context.get_dummy_value()
    return types.void(out, row, acc, scale, width), codegen


@intrinsic
def _vector_stream(typingctx, out, row, acc, scale, width):
    """The streamed twin of :func:`_vector_store`: one aligned non-temporal store per 64-byte line."""
    if not _vectorised(acc, width):
        return None

    def codegen(context, builder, signature, args):
        value, target, vt = _output_row(context, builder, signature, args)
        per_line = STREAM_ALIGN // (out.dtype.bitwidth // 8)
        line_type = _vector_type(context, out.dtype, per_line)
        nontemporal = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        i32 = ir.IntType(32)
        for start in range(0, vt.count, per_line):
            lanes = ir.Constant(ir.VectorType(i32, per_line), list(range(start, start + per_line)))
            part = builder.shuffle_vector(value, ir.Constant(vt, ir.Undefined), lanes)
            where = builder.gep(target, [ir.Constant(ir.IntType(64), start)])
            store = builder.store(part, _as_vector_pointer(builder, where, line_type), align=STREAM_ALIGN)
            store.set_metadata("nontemporal", nontemporal)
        return context.get_dummy_value()
    return types.void(out, row, acc, scale, width), codegen


@intrinsic
def _sfence(typingctx):
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


# --- dispatch: the vector form when the width is compiled in, a column loop otherwise -------------------------

@overload(zero_row, inline="always", prefer_literal=True)
def _zero_row(acc, width):
    if _vectorised(acc, width):
        return lambda acc, width: _vector_zero(acc, width)

    def loop(acc, width):
        for f in range(width):
            acc[f] = 0
    return loop


@overload(add_rows, inline="always", prefer_literal=True)
def _add_rows(acc, x, rows, width):
    if _vectorised(acc, width):
        return lambda acc, x, rows, width: _vector_add_rows(acc, x, rows, width)
    if len(rows) == 1:
        def loop(acc, x, rows, width):
            j0 = rows[0]
            for f in range(width):
                acc[f] += x[j0, f]
    elif len(rows) == 4:
        def loop(acc, x, rows, width):
            j0, j1, j2, j3 = rows
            for f in range(width):
                acc[f] += (x[j0, f] + x[j1, f]) + (x[j2, f] + x[j3, f])
    elif len(rows) == 8:
        def loop(acc, x, rows, width):
            j0, j1, j2, j3, j4, j5, j6, j7 = rows
            for f in range(width):
                acc[f] += (((x[j0, f] + x[j1, f]) + (x[j2, f] + x[j3, f]))
                           + ((x[j4, f] + x[j5, f]) + (x[j6, f] + x[j7, f])))
    else:
        return None
    return loop


@overload(add_scaled_rows, inline="always", prefer_literal=True)
def _add_scaled_rows(acc, x, rows, coefs, width):
    if _vectorised(acc, width):
        return lambda acc, x, rows, coefs, width: _vector_add_scaled_rows(acc, x, rows, coefs, width)
    if len(rows) == 1:
        def loop(acc, x, rows, coefs, width):
            j0 = rows[0]
            c0 = coefs[0]
            for f in range(width):
                acc[f] += c0 * x[j0, f]
    elif len(rows) == 4:
        def loop(acc, x, rows, coefs, width):
            j0, j1, j2, j3 = rows
            c0, c1, c2, c3 = coefs
            for f in range(width):
                acc[f] += (c0 * x[j0, f] + c1 * x[j1, f]) + (c2 * x[j2, f] + c3 * x[j3, f])
    elif len(rows) == 8:
        def loop(acc, x, rows, coefs, width):
            j0, j1, j2, j3, j4, j5, j6, j7 = rows
            c0, c1, c2, c3, c4, c5, c6, c7 = coefs
            for f in range(width):
                acc[f] += (((c0 * x[j0, f] + c1 * x[j1, f]) + (c2 * x[j2, f] + c3 * x[j3, f]))
                           + ((c4 * x[j4, f] + c5 * x[j5, f]) + (c6 * x[j6, f] + c7 * x[j7, f])))
    else:
        return None
    return loop


@overload(store_row, inline="always", prefer_literal=True)
def _store_row(out, row, acc, width):
    if _vectorised(acc, width):
        return lambda out, row, acc, width: _vector_store(out, row, acc, None, width)

    def loop(out, row, acc, width):
        for f in range(width):
            out[row, f] = acc[f]
    return loop


@overload(store_scaled_row, inline="always", prefer_literal=True)
def _store_scaled_row(out, row, acc, scale, width):
    if _vectorised(acc, width):
        return lambda out, row, acc, scale, width: _vector_store(out, row, acc, scale, width)

    def loop(out, row, acc, scale, width):
        for f in range(width):
            out[row, f] = acc[f] * scale
    return loop


def _streamable(acc, width) -> bool:
    """A width-specialised row of whole cache lines: only then is there a streamed form."""
    return _vectorised(acc, width) and (width.literal_value * acc.dtype.bitwidth // 8) % STREAM_ALIGN == 0


@overload(stream_row, inline="always", prefer_literal=True)
def _stream_row(out, row, acc, width):
    if _streamable(acc, width):
        return lambda out, row, acc, width: _vector_stream(out, row, acc, None, width)
    return lambda out, row, acc, width: store_row(out, row, acc, width)  # no streamed form: a plain store


@overload(stream_scaled_row, inline="always", prefer_literal=True)
def _stream_scaled_row(out, row, acc, scale, width):
    if _streamable(acc, width):
        return lambda out, row, acc, scale, width: _vector_stream(out, row, acc, scale, width)
    return lambda out, row, acc, scale, width: store_scaled_row(out, row, acc, scale, width)


@overload(stream_fence, inline="always")
def _stream_fence():
    return lambda: _sfence()
