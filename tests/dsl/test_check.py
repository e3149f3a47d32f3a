"""Static checks at `gen`: the system API, `provides`, shapes against operators and gradient rules.

Each malformed spec pins its exact first line (``file:line:col: message``).
"""
from __future__ import annotations

import pytest

from gnnbench.dsl.check import did_you_mean
from gnnbench.dsl.parse import parse_spec
from gnnbench.dsl.spec import SpecError
from gnnbench.dsl.system_api import standard_kernels, system_api

SPMM_ONLY = """\
system tiny 0.1
    kernels tiny.kernels
    provides spmm_sum
"""

OWN_SPMM = """\
system tiny 0.1
    kernels tiny.kernels

kernel {name} implements spmm(reduce={reduce})
    input  x: float[S, H, D]
    input  weight: float[E, H]?
    output {out}: float[{shape}]
"""


def own_spmm(name="spmm_sum", reduce="sum", out="out", shape="N, H, D") -> str:
    return OWN_SPMM.format(name=name, reduce=reduce, out=out, shape=shape)


SDDMM_CALLING = SPMM_ONLY + """
kernel k implements sddmm(op=dot)
    input  src: float[S, H, D]
    input  dst: float[N, H, D]
    output out: float[E, H]
    grad   src = {call} transposed
"""

RESERVED = "(reserved: ARRAYS, SYSTEM, attrs, bind_system, ctx, graph, run, self); rename it"

MISTAKES = {
    # the mistakes listed in issue 14
    "kernel named run": (
        own_spmm(name="run"),
        f"tiny.gnn:4:1: kernel name 'run' is reserved: the generated glue and the runtimes use it {RESERVED}"),
    "kernel named ARRAYS": (
        own_spmm(name="ARRAYS"),
        f"tiny.gnn:4:1: kernel name 'ARRAYS' is reserved: the generated glue and the runtimes use it {RESERVED}"),
    "output named ctx": (
        own_spmm(out="ctx"),
        f"tiny.gnn:7:5: argument name 'ctx' is reserved: the generated glue and the runtimes use it {RESERVED}"),
    "kernel name with a leading underscore": (
        own_spmm(name="_spmm"),
        "tiny.gnn:4:1: kernel name '_spmm' starts with '_', which the generated glue keeps for its own names; "
        "rename it"),
    "alpha=1e999": (
        SDDMM_CALLING.format(call="spmm_sum(dst, grad_out, reduce=sum, alpha=1e999)"),
        "tiny.gnn:9:60: attribute value 'alpha=1e999' is not a finite number; write a value a float can hold, "
        "e.g. 1e300"),
    "spmm output of the wrong shape": (
        own_spmm(shape="N, D"),
        "tiny.gnn:7:5: kernel 'spmm_sum' implements spmm: its output 'out' is float[N, D]; the operator needs "
        "float[N, H, D]"),
    "gradient output of the wrong shape, own rule": (
        own_spmm() + "    grad   weight = wb(x, grad_out)\n\nkernel wb\n    input  x: float[S, H, D]\n"
                     "    input  grad_out: float[N, H, D]\n    output grad_weight: float[E]\n",
        "tiny.gnn:8:5: backward of 'spmm_sum' (`grad weight = wb(...)`): output 'grad_weight' of 'wb' is "
        "float[E], but the gradient of 'weight' must be float[E, H] like 'weight'"),
    "spmm input by destinations": (
        OWN_SPMM.format(name="spmm_sum", reduce="sum", out="out", shape="N, H, D").replace("x: float[S", "x: float[N"),
        "tiny.gnn:5:5: kernel 'spmm_sum' implements spmm: its input 'x' is float[N, H, D]; the operator needs "
        "float[S, H, D]"),
    "transposed rule whose callee writes the columns": (
        own_spmm() + "    grad   x = b(grad_out, weight) transposed\n\nkernel b\n    input  g: float[S, H, D]\n"
                     "    input  w: float[E, H]?\n    output grad_x: float[S, H, D]\n",
        "tiny.gnn:8:5: backward of 'spmm_sum' (`grad x = b(...) transposed`): output 'grad_x' of 'b' is "
        "float[S, H, D] on the transposed view, but the gradient of 'x' must be float[S, H, D] like 'x'"),
    "untransposed rule reading grad_out by sources": (
        own_spmm() + "    grad   x = b(grad_out, weight)\n\nkernel b\n    input  g: float[S, H, D]\n"
                     "    input  w: float[E, H]?\n    output grad_x: float[N, H, D]\n",
        "tiny.gnn:8:5: backward of 'spmm_sum' (`grad x = b(...)`) passes 'grad_out' (float[N, H, D]) as input "
        "'g' of 'b', declared float[S, H, D]"),
    "frameworks tor:ch": (
        SPMM_ONLY.replace("    kernels", "    frameworks tor:ch\n    kernels"),
        "tiny.gnn:2:19: unexpected ':'; a system line lists names separated by commas, e.g. "
        "`frameworks torch, tensorflow`"),
    # shapes and dtypes against the operator
    "symbols matched by position": (
        own_spmm(shape="N, D, H"),
        "tiny.gnn:7:5: kernel 'spmm_sum' implements spmm: its output 'out' is float[N, D, H]; the operator "
        "needs float[N, H, D]"),
    "integer output where the operator has floats": (
        own_spmm().replace("output out: float", "output out: i64"),
        "tiny.gnn:7:5: kernel 'spmm_sum' implements spmm: its output 'out' is i64[N, H, D]; the operator needs "
        "float[N, H, D]"),
    "output named differently": (
        own_spmm(out="result"),
        "tiny.gnn:4:1: kernel 'spmm_sum' implements spmm, whose outputs are (out); the kernel "
        "declares (result)"),
    "sddmm add with dot's shapes": (
        SPMM_ONLY.replace("spmm_sum", "edge_sum") + "\nkernel k implements sddmm(op=add)\n"
        "    input  src: float[S, H, D]\n    input  dst: float[N, H, D]\n    output out: float[E, H]\n",
        "tiny.gnn:6:5: kernel 'k' implements sddmm(op=add): its input 'src' is float[S, H, D]; the operator "
        "needs float[S, H]"),
    # gradient rules against the kernels they call
    "rule passes a tensor of the wrong shape": (
        SDDMM_CALLING.format(call="spmm_sum(grad_out, dst, reduce=sum)"),
        "tiny.gnn:9:5: backward of 'k' (`grad src = spmm_sum(...) transposed`) passes 'grad_out' (float[E, H]) "
        "as input 'x' of 'spmm_sum', declared float[S, H, D] (N and S swap on the transposed view)"),
    "rule passes an optional tensor as a required one": (
        own_spmm() + "    grad   x = b(grad_out, weight) transposed\n\nkernel b\n    input  g: float[S, H, D]\n"
                     "    input  w: float[E, H]\n    output grad_x: float[N, H, D]\n",
        "tiny.gnn:8:5: backward of 'spmm_sum' (`grad x = b(...) transposed`) passes 'weight', which may be absent "
        "(declared `?`), as the required input 'w' of 'b'; declare that input `?`"),
    "own kernel replacing a standard one breaks its caller": (
        SPMM_ONLY + "\nkernel spmm_weight_backward\n    attr   reduce in {sum, mean}\n    input  x: float[S, H, D]\n"
                    "    input  grad_out: float[N, H, D]\n    output grad_weight: float[E]\n",
        "tiny.gnn:9:5: kernel 'spmm_weight_backward' replaces a standard kernel that the backward of 'spmm_sum' "
        "calls ({api}:{weight_rule}:5); its output 'grad_weight' is float[E], but the gradient of 'weight' must be "
        "float[E, H]"),
    "float attribute bound to a name": (
        SPMM_ONLY + "\nkernel g implements gat_aggregate\n    attr   negative_slope: float\n"
                    "    input  x: float[S, H, D]\n    input  score_src: float[S, H]\n"
                    "    input  score_dst: float[N, H]\n    output out: float[N, H, D]\n"
                    "    grad   x = gb(x, negative_slope=steep)\n\nkernel gb\n    attr   negative_slope: float\n"
                    "    input  x: float[S, H, D]\n    output grad_x: float[S, H, D]\n",
        "tiny.gnn:11:5: attribute 'negative_slope' of kernel 'gb' is a float; the rule binds "
        "'negative_slope=steep'"),
    # names: did you mean, in plain words
    "misspelt keyword": (
        SPMM_ONLY + "\nkernel helper\n    input  x: float[N]\n    outptu y: float[N]\n",
        "tiny.gnn:7:5: unexpected 'outptu' (did you mean `output`?); a kernel body holds `attr`, `input`, "
        "`output`, `saves`, `workspace` and `grad` lines"),
    "misspelt system line": (
        SPMM_ONLY.replace("provides", "provide"),
        "tiny.gnn:3:5: unexpected 'provide' (did you mean `provides`?); expected `arrays`, `blocks`, `configure`, "
        "`devices`, `floats`, `formats`, `frameworks`, `hint`, `kernel`, `kernels`, `operator`, `prepare`, "
        "`provides`, `report`, `requires`, `summary`, `tune`, end of file"),
    "misspelt provided kernel": (
        SPMM_ONLY.replace("provides spmm_sum", "provides spmm_summ"),
        "tiny.gnn:3:5: `provides spmm_summ`: the system API has no standard kernel or operator 'spmm_summ' "
        "(did you mean `spmm_sum`?); choose from: edge_softmax, edge_softmax_backward, edge_sum, gat_aggregate, "
        "sddmm, sddmm_add, sddmm_dot, spmm, spmm_max, spmm_max_backward, spmm_max_weight_backward, spmm_sum, "
        "spmm_sum_backward, spmm_weight_backward, typed_aggregate, typed_aggregate_backward, typed_weight_backward"),
    "misspelt kernel in a rule": (
        SDDMM_CALLING.format(call="spmm_sun(dst, grad_out, reduce=sum)"),
        "tiny.gnn:9:5: backward of 'k' calls unknown kernel 'spmm_sun' (did you mean `spmm_sum`?); kernels in "
        "this spec: spmm_sum, spmm_sum_backward, spmm_weight_backward, k"),
    "standard kernel not provided": (
        SDDMM_CALLING.format(call="edge_sum(grad_out)"),
        "tiny.gnn:9:5: backward of 'k' calls unknown kernel 'edge_sum' (a standard kernel: add it to "
        "`provides`); kernels in this spec: spmm_sum, spmm_sum_backward, spmm_weight_backward, k"),
    "misspelt framework": (
        SPMM_ONLY.replace("    kernels", "    frameworks pytorch\n    kernels"),
        "tiny.gnn:1:1: unknown framework 'pytorch' (did you mean `torch`?); expected one of: torch, tensorflow"),
    "floats that are not floats": (
        SPMM_ONLY + "    floats i32\n",
        "tiny.gnn:4:5: `floats i32`: a system's floats are f32 or f64 (did it mean `floats f32`?)"),
    "an operator in a system spec": (
        SPMM_ONLY + "\noperator spmv\n    input x: float[N]\n    output out: float[N]\n",
        "tiny.gnn:5:1: a system spec cannot declare operators (found `operator spmv`); the operators are the "
        "system API's, in gnnbench/api.gnn: write `kernel <name> implements <operator>` or `provides <operator>`"),
    "unexpected end of file": (
        "system tiny",
        "tiny.gnn:1:12: unexpected end of line; a spec starts with `system <name> <version>`, e.g. "
        "`system mysys 0.1`"),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_malformed_spec_message(case):
    text, message = MISTAKES[case]
    with pytest.raises(SpecError) as info:
        parse_spec(text, "tiny.gnn")
    weight_rule = _api_line("grad   weight = spmm_weight_backward")
    assert str(info.value).splitlines()[0] == message.format(api=system_api().path, weight_rule=weight_rule)


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_messages_never_name_grammar_terminals(case):
    with pytest.raises(SpecError) as info:
        parse_spec(MISTAKES[case][0], "tiny.gnn")
    for terminal in ("$END", "NAME", "ROLE", "_NL", "SIGNED_NUMBER", "VERSION", "HOOK", "STRING", "LPAR"):
        assert terminal not in info.value.message


def test_an_spmm_only_system_is_three_lines_and_gets_the_standard_kernels():
    spec = parse_spec(SPMM_ONLY, "tiny.gnn")
    assert [k.name for k in spec.kernels] == ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]
    assert all(k.standard for k in spec.kernels)
    assert spec.kernel("spmm_sum") == system_api().kernel("spmm_sum")
    assert parse_spec(str(spec)) == spec


def test_provides_an_operator_takes_its_kernels_and_their_backward_kernels():
    names = [k.name for k in standard_kernels(("sddmm",))]
    assert names == ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "sddmm_dot", "sddmm_add", "edge_sum"]


def test_floats_narrows_every_float_argument():
    spec = parse_spec(SPMM_ONLY + "    floats f32\n", "tiny.gnn")
    assert {p.dtype for k in spec.kernels for p in k.params} == {"f32"}
    assert str(spec).splitlines()[-1] == "    floats f32"


def test_kernels_whose_names_once_collided_stay_apart():
    """`spmm_sum` and `spmm__sum` used to both become `SpmmSumFunction`; glue now derives no names."""
    text = own_spmm() + "\n" + own_spmm(name="spmm__sum", reduce="mean").split("\n\n", 1)[1]
    spec = parse_spec(text, "tiny.gnn")
    assert [(k.name, k.dispatch_attrs()) for k in spec.kernels] == [
        ("spmm_sum", {"reduce": ("sum",)}), ("spmm__sum", {"reduce": ("mean",)})]


def test_did_you_mean_offers_only_close_names():
    assert did_you_mean("outptu", ["input", "output"]) == " (did you mean `output`?)"
    assert did_you_mean("zzz", ["input", "output"]) == ""


def test_the_system_api_declares_each_operator_of_gnnbench_api():
    from gnnbench.api import OPERATORS

    api = system_api()
    assert list(dict.fromkeys(o.name for o in api.operators)) == list(OPERATORS)
    for name, op in OPERATORS.items():
        for decl in api.operator(name):
            assert tuple(p.name + ("?" if p.optional else "") for p in decl.inputs) == op.inputs
            assert tuple(p.name for p in decl.outputs) == op.outputs
        assert api.operator_attrs(name) == op.attrs


def _api_line(text: str) -> int:
    """The line of gnnbench/api.gnn that holds ``text``: messages name it, and a new operator moves it."""
    from gnnbench.places import api_spec_path

    return next(n for n, line in enumerate(api_spec_path().read_text().splitlines(), 1) if text in line)


def test_the_system_api_round_trips_and_is_checked_like_a_spec():
    from gnnbench.dsl.syntax import parse_api
    from gnnbench.places import api_spec_path as _api_path

    api = system_api()
    assert parse_api(str(api), api.path) == api
    text = _api_path().read_text().replace("    output grad_weight: float[E, H]\n", "    output grad_weight: float[E]\n", 1)
    with pytest.raises(SpecError) as info:
        parse_api(text, "gnnbench/api.gnn")
    assert str(info.value).splitlines()[0] == (
        f"gnnbench/api.gnn:{_api_line('grad   weight = spmm_weight_backward')}:5: backward of 'spmm_sum' "
        "(`grad weight = spmm_weight_backward(...)`): output "
        "'grad_weight' of 'spmm_weight_backward' is float[E], but the gradient of 'weight' must be float[E, H] "
        "like 'weight'")
    # Note [rows and columns]: the backward on the transposed view writes its rows, the forward's sources
    text = _api_path().read_text().replace("    input  weight: float[E, H]?\n    output grad_x: float[N, H, D]\n",
                                           "    input  weight: float[E, H]?\n    output grad_x: float[S, H, D]\n", 1)
    with pytest.raises(SpecError) as info:
        parse_api(text, "gnnbench/api.gnn")
    assert str(info.value).splitlines()[0] == (
        f"gnnbench/api.gnn:{_api_line('grad   x = spmm_sum_backward')}:5: backward of 'spmm_sum' "
        "(`grad x = spmm_sum_backward(...) transposed`): output "
        "'grad_x' of 'spmm_sum_backward' is float[S, H, D] on the transposed view, but the gradient of 'x' must "
        "be float[S, H, D] like 'x'")


def test_a_system_spec_is_not_the_system_api():
    with pytest.raises(SpecError) as info:
        parse_spec("api gnnbench 1.0\n", "tiny.gnn")
    assert str(info.value).splitlines()[0] == (
        "tiny.gnn:1:1: this file declares the system API (`api ...`); a system spec starts with "
        "`system <name> <version>`")
