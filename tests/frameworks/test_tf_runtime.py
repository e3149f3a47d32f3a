"""Producer-only under TensorFlow: DLPack views, fresh buffers, and the same kernels bit for bit.

The last part calls every operator of every system that has both glues
through its PyTorch glue and its TensorFlow glue on identical inputs and
asserts exactly equal outputs and gradients.
"""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import torch  # noqa: E402

from gnnbench.runtime.boundary import KernelDecl, arg  # noqa: E402
from gnnbench.errors import BoundaryError  # noqa: E402
from gnnbench.frameworks.tf_runtime import GradContext, data_pointer, run, to_view  # noqa: E402
from gnnbench.runtime.graph import Graph  # noqa: E402

GRAPH = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 1], 3)


class Recorder:
    """A kernel that remembers what it was handed (and the outputs' first contents), then writes in place."""

    def __init__(self, value: float = 7.0):
        self.seen, self.value = None, value

    def __call__(self, graph, x, idx, out, saved, *, reduce):
        self.seen = (x, idx, out, saved)
        self.saved_on_arrival = np.array(saved, copy=True)
        out[...] = self.value
        saved[...] = 3


def _decl(fn, out_shape="float[N, F*2]", out_zero=False):
    return KernelDecl("demo", "k", fn,
                      inputs=(arg("x", "float[N, F]"), arg("idx", "i64[E]", optional=True, indexes="N")),
                      outputs=(arg("out", out_shape, zero=out_zero),), saves=(arg("saved", "i32[E]", zero=True),),
                      attrs={"reduce": ("sum", "mean")})


# ----------------------------------------------------------------- zero copy
def test_numpy_views_are_zero_copy_by_data_pointer():
    rec = Recorder()
    x = tf.random.normal([3, 4])
    idx = tf.constant([0, 1, 2, 0], dtype=tf.int64)
    out, saved = run(_decl(rec), GRAPH.view(), (x, idx), {"reduce": "sum"})
    vx, vidx, vout, vsaved = rec.seen
    assert all(isinstance(v, np.ndarray) for v in rec.seen)
    # the address DLPack reports for each TensorFlow tensor is the address the kernel read or wrote
    assert data_pointer(vx) == data_pointer(x)
    assert data_pointer(vidx) == data_pointer(idx)
    assert data_pointer(vout) == data_pointer(out)
    assert data_pointer(vsaved) == data_pointer(saved)
    assert out.shape == (3, 8) and out.dtype == tf.float32 and bool(tf.reduce_all(out == 7.0))
    assert saved.dtype == tf.int32 and saved.numpy().tolist() == [3, 3, 3, 3]


def test_torch_arrays_are_the_same_memory():
    seen = {}

    def kernel(graph, x, idx, out, saved, *, reduce):
        seen.update(x=x, out=out)
        out.fill_(1.0)

    x = tf.random.normal([3, 2], dtype=tf.float64)
    out, _ = run(_decl(kernel), GRAPH.view(), (x, None), {"reduce": "mean"}, arrays="torch")
    assert isinstance(seen["x"], torch.Tensor) and seen["x"].data_ptr() == data_pointer(x)
    assert seen["out"].data_ptr() == data_pointer(out)
    assert out.dtype == tf.float64 and bool(tf.reduce_all(out == 1.0))


def test_kernels_see_the_same_array_types_as_under_torch():
    # numba compiles one specialisation per argument type, read-only-ness included: the same
    # types under both frameworks are what makes outputs bit-identical (Note [TensorFlow buffers])
    from gnnbench.frameworks import torch_runtime

    seen = {}

    def kernel(tag):
        def fn(graph, x, idx, out, saved, *, reduce):
            seen[tag] = [(a.dtype, a.flags.writeable, a.flags.c_contiguous, a.flags.aligned)
                         for a in (x, idx, out, saved)]
            out[...] = 0.0
        return fn

    x = np.ones((3, 2), np.float32)
    idx = np.array([0, 1, 2, 0])
    run(_decl(kernel("tf")), GRAPH.view(), (tf.constant(x), tf.constant(idx)), {"reduce": "sum"})
    torch_runtime.run(_decl(kernel("torch")), GRAPH.view(), (torch.tensor(x), torch.tensor(idx)), {"reduce": "sum"})
    assert seen["tf"] == seen["torch"]


# ----------------------------------------------------------------- fresh buffers
def _scalar_kernel(graph, x, idx, out, saved, *, reduce):
    out[...] = 7.0


def test_outputs_never_share_a_buffer_with_constants_or_cached_tensors():
    # eager TensorFlow hands the same buffer to every tf.constant(0.0): a
    # kernel writing into such a buffer would change all of them
    first, second = tf.constant(0.0), tf.constant(0.0)
    assert data_pointer(first) == data_pointer(second)
    shared = {"scalar 0.0": first, "zeros": tf.zeros([3, 8]), "fill": tf.fill([3, 8], 0.0),
              "zeros_like": tf.zeros_like(tf.ones([3, 8])), "constant": tf.constant(np.zeros((3, 8), np.float32))}
    x = tf.ones([3, 2])
    for decl in (_decl(_scalar_kernel, "float[]", out_zero=True), _decl(_scalar_kernel, "float[]"),
                 _decl(Recorder(), out_zero=True), _decl(Recorder())):
        out, saved = run(decl, GRAPH.view(), (x, None), {"reduce": "sum"})
        assert data_pointer(out) not in {data_pointer(t) for t in shared.values()}
        assert bool(tf.reduce_all(out == 7.0))
    for name, t in shared.items():
        assert not np.any(t.numpy()), f"{name} was written through"
    assert float(tf.constant(0.0)) == 0.0 and float(first + 1.0) == 1.0


def test_each_call_gets_its_own_zero_filled_buffers():
    rec = Recorder()
    x = tf.ones([3, 2])
    outs = []
    for value in (1.0, 2.0, 3.0):
        rec.value = value
        out, saved = run(_decl(rec), GRAPH.view(), (x, None), {"reduce": "sum"})
        assert not rec.saved_on_arrival.any()            # `= 0` saves arrive zeroed, whatever the allocator reuses
        outs.append(out)
    assert len({data_pointer(o) for o in outs}) == 3
    assert [float(o[0, 0]) for o in outs] == [1.0, 2.0, 3.0]


# ----------------------------------------------------------------- checks
def test_non_contiguous_dlpack_views_are_refused():
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    with pytest.raises(BoundaryError, match="demo.k: argument 'x' arrives through DLPack with strides"):
        to_view(strided, "numpy", kernel=_decl(Recorder()), name="x")
    with pytest.raises(BoundaryError, match="not dense row-major"):
        to_view(torch.randn(4, 3).t(), "torch", name="x")


@pytest.mark.parametrize("inputs,attrs,message", [
    ((tf.zeros([3, 2], tf.float16), None), {"reduce": "sum"},
     "demo.k: argument 'x' has dtype float16; expected float32 or float64"),
    ((tf.zeros([4, 2]), None), {"reduce": "sum"},
     r"demo.k: argument 'x' has shape \(4, 2\); expected \[N, F\] with N=3 \(axis 0 should be 3\)"),
    ((tf.zeros([3, 2]), tf.constant([0, 1, 2, 3], tf.int64)), {"reduce": "sum"},
     r"demo.k: argument 'idx' holds indices in \[0, 3\]; expected values in \[-1, N=3\)"),
    ((tf.zeros([3, 2]), None), {"reduce": "max"}, "demo.k: argument 'reduce' is 'max'; expected one of sum, mean"),
    ((tf.zeros([3, 2]), None), {}, "demo.k: argument 'reduce' is a required attribute"),
])
def test_boundary_checks_fire_under_tensorflow(inputs, attrs, message):
    rec = Recorder()
    with pytest.raises(BoundaryError, match=message):
        run(_decl(rec), GRAPH.view(), inputs, attrs)
    assert rec.seen is None


def test_variables_and_indexed_slices_arrive_as_dense_tensors():
    rec = Recorder()
    v = tf.Variable(tf.ones([3, 2]))
    run(_decl(rec), GRAPH.view(), (v, None), {"reduce": "sum"})
    assert np.array_equal(rec.seen[0], np.ones((3, 2), np.float32))
    slices = tf.IndexedSlices(tf.ones([1, 2]), tf.constant([1]), tf.constant([3, 2]))
    assert GradContext.dense(slices).numpy().tolist() == [[0, 0], [1, 1], [0, 0]]


def test_grad_context_drops_absent_inputs_and_knows_what_the_tape_records():
    w = tf.Variable(tf.ones([3, 2]))
    const = tf.ones([4, 1])
    with tf.GradientTape():
        x = w * 2.0
        ctx = GradContext(None, {}, (x, None, const))
    assert len(ctx.present) == 2 and ctx.present[1] is const
    assert ctx.inputs(["a", "b"]) == ["a", None, "b"]
    assert ctx.present_grads("gx", None, "gc") == ["gx", "gc"]
    assert ctx.needs_input_grad == (False, False, True, False, False)


def test_the_backward_closes_over_only_what_its_gradients_read():
    # Note [saved for backward]: an unweighted spmm's backward holds neither x nor the GradContext's inputs
    import weakref

    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    graph = BoundGraph(GRAPH, load_system("reference", "tensorflow"))
    spmm = graph.system.find("spmm", {"reduce": "sum"})
    v = tf.Variable(tf.ones([3, 1, 2]))
    with tf.GradientTape() as tape:
        h = v * 2.0  # [N, 1, F] as the kernel takes it, so no reshape of the frontend's holds it
        ref = weakref.ref(h)
        out = spmm.apply(graph, {"reduce": "sum"}, h, None)
        del h
        assert ref() is None
    assert tape.gradient(out, v).numpy()[:, 0, 0].tolist() == [2.0, 2.0, 4.0]  # 2 x out-degree


def test_the_frontends_reshapes_around_spmm_keep_neither_input_nor_output():
    import weakref

    from gnnbench.frameworks.tf_frontend import TensorFlowFrontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    F = TensorFlowFrontend()
    graph = BoundGraph(GRAPH, load_system("reference", "tensorflow"))
    v = tf.Variable(tf.ones([3, 2]))
    with tf.GradientTape() as tape:
        h = v * 2.0  # flat [N, F]: the frontend reshapes it to [N, 1, F] and the result back
        ref = weakref.ref(h)
        loss = tf.reduce_sum(F.spmm(graph, h, None) * 3.0)
        del h
        assert ref() is None
    assert tape.gradient(loss, v).numpy()[:, 0].tolist() == [6.0, 6.0, 12.0]  # 2 x 3 x out-degree


# ----------------------------------------------------------------- same kernels, same bits
def _systems_with_both_glues():
    from gnnbench.runtime.registry import list_systems

    return [s.name for s in list_systems() if s.kind == "kernel" and {"torch", "tensorflow"} <= set(s.frameworks)
            and s.unavailable_reason("tensorflow") is None]


def _random_graph():
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    return Graph.from_edges(src, dst, 40)


def _case_inputs(case, graph, rng):
    from gnnbench.check.conformance import OpCase  # noqa: F401  (the cases' shapes)

    arrays = case.inputs(graph, 2, 5, rng)
    # random float32 values (not the exact grid) so that equality is a real bit-for-bit claim
    return {k: a if a is None or a.dtype.kind != "f" else (a + rng.standard_normal(a.shape) * 1e-3).astype(np.float32)
            for k, a in arrays.items()}   # index inputs (typed_aggregate's etype) as drawn


@pytest.mark.parametrize("system", _systems_with_both_glues())
def test_kernel_outputs_and_gradients_match_torch_bit_for_bit(system):
    from gnnbench.check.conformance import OP_CASES
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    torch_glue, tf_glue = load_system(system, "torch"), load_system(system, "tensorflow")
    graph = _random_graph()
    bt, bf = BoundGraph(graph, torch_glue), BoundGraph(graph, tf_glue)
    rng = np.random.default_rng(0)
    checked = 0
    for case in OP_CASES:
        attrs = dict(case.attrs)
        impl_t, impl_f = torch_glue.find(case.operator, attrs), tf_glue.find(case.operator, attrs)
        assert (impl_t is None) == (impl_f is None)
        if impl_t is None:
            continue
        if system == "pim" and getattr(case, "values", ""):
            continue  # pim's int32 quantisation refuses hard values (its verify checks them, Note [hard values])
        arrays = _case_inputs(case, graph, rng)
        tin = [None if a is None else torch.tensor(a, requires_grad=k in case.gradients) for k, a in arrays.items()]
        fin = [None if a is None else tf.constant(a) for a in arrays.values()]
        out_t = impl_t.apply(bt, attrs, *tin)
        upstream = rng.standard_normal(tuple(out_t.shape)).astype(np.float32)
        with tf.GradientTape() as tape:
            for k, t in zip(arrays, fin):
                if t is not None and k in case.gradients:   # typed_aggregate's norm and etype have none
                    tape.watch(t)
            out_f = impl_f.apply(bf, attrs, *fin)
        assert np.array_equal(out_t.detach().numpy(), out_f.numpy(), equal_nan=True), f"{system} {case.label}: forward differs"
        present = [i for i, (k, t) in enumerate(zip(arrays, fin)) if t is not None and k in case.gradients]
        grads_f = tape.gradient(out_f, [fin[i] for i in present], output_gradients=tf.constant(upstream))
        out_t.backward(torch.tensor(upstream))
        for i, gf in zip(present, grads_f):
            name = list(arrays)[i]
            assert np.array_equal(tin[i].grad.numpy(), gf.numpy(), equal_nan=True), f"{system} {case.label}: grad of {name} differs"
        checked += 1
    assert checked > 0


# ----------------------------------------------------------------- generated glue of a new system
SPEC = """\
system {name} 0.1
    summary "numpy spmm with a gradient for x only"
    devices cpu
    requires numpy
    frameworks torch, tensorflow
    kernels {name}.kernels

kernel spmm_sum implements spmm
    attr   reduce in {{sum, mean}}
    input  x: float[S, H, D]
    input  weight: float[E, H]?
    output out: float[N, H, D]
    grad   x = spmm_sum(grad_out, weight) transposed

"""

KERNELS = """\
import numpy as np


def spmm_sum(graph, x, weight, out, *, reduce):
    out[...] = 0
    for i in range(graph.num_rows):
        for p in range(graph.indptr[i], graph.indptr[i + 1]):
            e = p if graph.edge_ids is None else graph.edge_ids[p]
            w = 1.0 if weight is None else weight[e][:, None]
            out[i] += w * x[graph.indices[p]]
"""


def test_generated_tensorflow_glue_of_a_new_system(tmp_path, monkeypatch):
    from gnnbench.cli import main as cli
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    name = "tfglue_demo"
    folder = tmp_path / "systems" / name
    folder.mkdir(parents=True)
    (folder / f"{name}.gnn").write_text(SPEC.format(name=name))
    (folder / "__init__.py").write_text("")
    (folder / "kernels.py").write_text(KERNELS)
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(tmp_path / "systems"))
    assert cli(["gen", str(folder / f"{name}.gnn")]) == 0
    glue = (folder / "_glue_tensorflow.py").read_text()
    assert glue.startswith("# @generated by gnnbench.dsl.gen from glue_framework.py.j2")
    assert "from gnnbench.frameworks.tf_runtime import bind_system" in glue
    assert cli(["gen", "--check", str(folder / f"{name}.gnn")]) == 0

    system = load_system(name, "tensorflow")
    bound = BoundGraph(GRAPH, system)
    spmm = system.find("spmm", {"reduce": "sum"}).apply
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 1, 2))
    weight = tf.constant(np.full((4, 1), 2.0, np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = spmm(bound, {"reduce": "sum"}, x, None)     # an absent optional input
        weighted = spmm(bound, {"reduce": "sum"}, x, weight)
    dense = np.zeros((3, 3), np.float32)
    for s, d in zip([0, 1, 2, 2], [1, 2, 0, 1]):
        dense[d, s] += 1
    np.testing.assert_array_equal(out.numpy()[:, 0], dense @ x.numpy()[:, 0])
    np.testing.assert_array_equal(weighted.numpy(), 2 * out.numpy())
    grad = tape.gradient([out, weighted], x)              # weight is a constant: no gradient asked for it
    np.testing.assert_array_equal(grad.numpy()[:, 0], 3 * dense.T @ np.ones((3, 2), np.float32))

    w = tf.Variable(weight)
    with tf.GradientTape() as tape:
        out = spmm(bound, {"reduce": "sum"}, x, tf.convert_to_tensor(w))
    with pytest.raises(NotImplementedError, match=f"{name}.spmm_sum declares no gradient for 'weight'"):
        tape.gradient(out, w)
