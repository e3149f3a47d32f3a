"""The producer-only boundary, framework-neutral part.

Before any kernel runs, every tensor argument is checked against the kernel's
declaration (dtype, device, shape with its symbols bound, contiguity, index
range), and the output shapes are evaluated so the *framework* can allocate
them. A violation raises :class:`~gnnbench.errors.BoundaryError` naming the
kernel and the argument. Framework runtimes (``frameworks/*_runtime.py``)
supply the tensors' facts through :class:`TensorFacts`.

Note [producer-only]
    The framework allocates every tensor a system touches: outputs, saved
    tensors and workspaces. Systems receive zero-copy views and write in
    place. So the boundary must know every shape *before* the call, which is
    why specs give each output a shape expression.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

from gnnbench.errors import BoundaryError

__all__ = ["ArgDecl", "arg", "KernelDecl", "TensorFacts", "check_call", "check_inputs", "allocation_plan",
           "graph_symbols", "DTYPE_SETS"]

#: dtype name in specs -> admitted NumPy dtype names.
DTYPE_SETS = {
    "float": ("float32", "float64"),
    "f32": ("float32",),
    "f64": ("float64",),
    "i32": ("int32",),
    "i64": ("int64",),
}


class ArgDecl(NamedTuple):
    """One tensor argument as its spec declares it (see ``dsl/spec.py``); ``shape`` is already parsed."""

    name: str
    dtype: str
    shape: tuple[tuple[Any, ...], ...]
    optional: bool = False
    zero: bool = False
    indexes: str | None = None


def arg(name: str, declared: str, optional: bool = False, zero: bool = False,
        indexes: str | None = None) -> ArgDecl:
    """Build an :class:`ArgDecl` from its spec text, e.g. ``arg("x", "float[N, H*D]")``.

    A shorthand for tests and hand-built declarations. Generated glue never
    calls it: systems' declarations come already parsed (``gnnbench.runtime.glue.bind_system``).
    """
    dtype, _, dims = declared.partition("[")
    shape = tuple(
        tuple(int(f) if f.strip().isdigit() else f.strip() for f in dim.split("*"))
        for dim in dims.rstrip("]").split(",") if dim.strip()
    )
    return ArgDecl(name, dtype, shape, optional, zero, indexes)


@dataclass(frozen=True)
class KernelDecl:
    """A kernel's declaration plus the function implementing it."""

    system: str
    name: str
    fn: Callable
    inputs: tuple[ArgDecl, ...]
    outputs: tuple[ArgDecl, ...]
    saves: tuple[ArgDecl, ...] = ()
    workspaces: tuple[ArgDecl, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)   # name -> allowed values or a type name

    @property
    def qualname(self) -> str:
        return f"{self.system}.{self.name}"



class TensorFacts(NamedTuple):
    """What the boundary needs to know about a framework tensor."""

    dtype: str          # NumPy dtype name
    shape: tuple[int, ...]
    device: str         # "cpu" or "cuda"
    contiguous: bool


def _dim_value(dim: tuple[Any, ...], env: dict[str, int]) -> int:
    value = 1
    for factor in dim:
        value *= factor if isinstance(factor, int) else env[factor]
    return value


def _shape_text(shape: tuple[tuple[Any, ...], ...]) -> str:
    return "[" + ", ".join("*".join(str(f) for f in d) for d in shape) + "]"


def check_call(kernel: KernelDecl, attrs: dict[str, Any], arrays: str, device: str) -> None:
    """What a runtime checks before it looks at a tensor: the kernel can see inputs on ``device`` as
    ``arrays``, and every attribute it declares is given, with a value it allows."""
    if arrays == "numpy" and device != "cpu":
        raise BoundaryError(kernel.qualname, "*", f"receives NumPy views, which exist on the CPU only "
                            f"(inputs are on {device})")
    for name, allowed in kernel.attrs.items():
        if name not in attrs:
            raise BoundaryError(kernel.qualname, name, "is a required attribute and was not given")
        if isinstance(allowed, tuple) and attrs.get(name) not in allowed:
            raise BoundaryError(kernel.qualname, name,
                                f"is {attrs.get(name)!r}; expected one of {', '.join(allowed)}")


def graph_symbols(view: Any) -> dict[str, int]:
    """The graph's shape symbols on ``view``: ``N`` its rows, ``S`` its columns, ``E`` its edges.

    On a block's forward view ``N`` is the destinations and ``S`` the sources;
    on the transposed view they swap (Note [rows and columns] in ``api.gnn``),
    so an ``x`` of the wrong length is refused before any kernel reads it.
    """
    return {"N": int(view.num_rows), "S": int(view.num_cols), "E": int(view.num_edges)}


def check_inputs(kernel: KernelDecl, inputs: Sequence[Any], facts: Callable[[Any], TensorFacts],
                 env: dict[str, int], device: str,
                 value_range: Callable[[Any], tuple[int, int]] | None = None) -> str | None:
    """Check ``inputs`` against ``kernel.inputs``; bind shape symbols into ``env``.

    Returns the call's float dtype (the type variable ``float``), or ``None``
    when no float argument is present.
    """
    if len(inputs) != len(kernel.inputs):
        raise BoundaryError(kernel.qualname, "*", f"expects {len(kernel.inputs)} inputs, got {len(inputs)}")
    float_dtype: str | None = None
    for decl, tensor in zip(kernel.inputs, inputs):
        if tensor is None:
            if decl.optional:
                continue
            raise BoundaryError(kernel.qualname, decl.name, "is required but was None")
        f = facts(tensor)
        allowed = DTYPE_SETS[decl.dtype]
        if f.dtype not in allowed:
            raise BoundaryError(kernel.qualname, decl.name,
                                f"has dtype {f.dtype}; expected {' or '.join(allowed)}")
        if decl.dtype == "float":
            if float_dtype is None:
                float_dtype = f.dtype
            elif f.dtype != float_dtype:
                raise BoundaryError(kernel.qualname, decl.name,
                                    f"has dtype {f.dtype} but an earlier float argument is {float_dtype}; "
                                    "all float arguments of one call share a dtype")
        if f.device != device:
            raise BoundaryError(kernel.qualname, decl.name, f"is on device {f.device}; expected {device}")
        if len(f.shape) != len(decl.shape):
            raise BoundaryError(kernel.qualname, decl.name,
                                f"has shape {tuple(f.shape)}; expected {len(decl.shape)} dimensions "
                                f"{_shape_text(decl.shape)}")
        for axis, (dim, size) in enumerate(zip(decl.shape, f.shape)):
            if len(dim) == 1 and isinstance(dim[0], str) and dim[0] not in env:
                env[dim[0]] = int(size)
                continue
            try:
                expected = _dim_value(dim, env)
            except KeyError:  # a product of unbound symbols: nothing to check against yet
                continue
            if expected != size:
                bound = ", ".join(f"{s}={env[s]}" for d in decl.shape for s in d if isinstance(s, str) and s in env)
                raise BoundaryError(kernel.qualname, decl.name,
                                    f"has shape {tuple(f.shape)}; expected {_shape_text(decl.shape)} "
                                    f"with {bound} (axis {axis} should be {expected})")
        if not f.contiguous:
            raise BoundaryError(kernel.qualname, decl.name,
                                "is not contiguous; kernels receive zero-copy views of dense row-major "
                                "memory (call .contiguous() first)")
    for decl, tensor in zip(kernel.inputs, inputs):  # after every shape: an index may name a later input's symbol
        if decl.indexes and tensor is not None and value_range is not None and 0 not in facts(tensor).shape:
            lo, hi = value_range(tensor)
            limit = env[decl.indexes]
            if lo < -1 or hi >= limit:
                raise BoundaryError(kernel.qualname, decl.name,
                                    f"holds indices in [{lo}, {hi}]; expected values in [-1, {decl.indexes}={limit})")
    return float_dtype


def allocation_plan(kernel: KernelDecl, env: dict[str, int], float_dtype: str | None
                    ) -> list[tuple[ArgDecl, tuple[int, ...], str]]:
    """(declaration, shape, dtype) for every output, save and workspace, in call order."""
    plan = []
    for decl in (*kernel.outputs, *kernel.saves, *kernel.workspaces):
        shape = tuple(_dim_value(d, env) for d in decl.shape)
        if decl.dtype == "float":
            if float_dtype is None:
                raise BoundaryError(kernel.qualname, decl.name,
                                    "has dtype 'float' but no float input fixes which float")
            dtype = float_dtype
        else:
            dtype = DTYPE_SETS[decl.dtype][0]
        plan.append((decl, shape, dtype))
    return plan
