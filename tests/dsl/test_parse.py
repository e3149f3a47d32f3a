"""The .gnn language: round trips, and each malformed spec pinned to its exact message."""
from __future__ import annotations

import pytest

from gnnbench.dsl.gen import spec_paths
from gnnbench.dsl.parse import load_spec, parse_spec
from gnnbench.dsl.syntax import grammar
from gnnbench.dsl.spec import SpecError

TINY = """\
system tiny 0.1
    kernels tiny.kernels

kernel spmm_sum implements spmm
    attr   reduce in {sum}
    input  x: float[S, H, D]
    input  weight: float[E, H]?
    output out: float[N, H, D]
    grad   x = spmm_sum_backward(grad_out, weight) transposed

kernel spmm_sum_backward
    attr   reduce in {sum}
    input  grad_out: float[S, H, D]
    input  weight: float[E, H]?
    output grad_x: float[N, H, D]
"""


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "tiny.gnn")
    return info.value


def test_grammar_has_no_conflicts_or_collisions():
    grammar(strict=True)


def test_tiny_spec_fits_in_fifteen_lines_and_parses():
    spec = parse_spec(TINY, "tiny.gnn")
    assert len(TINY.splitlines()) == 15
    assert [k.name for k in spec.kernels] == ["spmm_sum", "spmm_sum_backward"]
    k = spec.kernel("spmm_sum")
    assert k.implements == "spmm" and k.attr("reduce").values == ("sum",)
    assert k.param("weight").optional and k.param("x").shape == (("S",), ("H",), ("D",))
    assert str(k.grads[0]) == "grad x = spmm_sum_backward(grad_out, weight) transposed"


@pytest.mark.parametrize("path", spec_paths(), ids=lambda p: p.parent.name)
def test_every_shipped_spec_round_trips(path):
    spec = load_spec(path)
    assert parse_spec(str(spec), str(path)) == spec


def test_pinned_attributes_round_trip_and_dispatch():
    text = TINY.replace("kernel spmm_sum implements spmm\n    attr   reduce in {sum}\n",
                        "kernel spmm_sum implements spmm(reduce=sum)\n")
    spec = parse_spec(text)
    assert spec.kernel("spmm_sum").pinned == (("reduce", "sum"),)
    assert spec.kernel("spmm_sum").dispatch_attrs() == {"reduce": ("sum",)}
    assert parse_spec(str(spec)) == spec


MISTAKES = {
    "unknown dtype": (
        TINY.replace("input  x: float[S, H, D]", "input  x: f16[S, H, D]"),
        "tiny.gnn:6:5: unknown dtype 'f16' (did you mean `f64`?); expected one of: float, f32, f64, i32, i64"),
    "undefined shape symbol": (
        TINY.replace("output out: float[N, H, D]", "output out: float[N, H, K]"),
        "tiny.gnn:8:5: output 'out' of kernel 'spmm_sum' uses the undefined shape symbol 'K'; defined here: "
        "D, E, H, N, S (N, S and E come from the graph, others from the inputs' shapes)"),
    "output without shape": (
        TINY.replace("output out: float[N, H, D]", "output out: float"),
        "tiny.gnn:8:5: output 'out' has no shape; the framework allocates every tensor before the call, "
        "so write e.g. `output out: float[N, F]`"),
    "duplicate kernel": (
        TINY + "\nkernel spmm_sum_backward\n    input g: float[N]\n    output o: float[N]\n",
        "tiny.gnn:17:1: duplicate kernel 'spmm_sum_backward' (first declared at tiny.gnn:11:1)"),
    "backward names unknown kernel": (
        TINY.replace("grad   x = spmm_sum_backward", "grad   x = spmm_sum_bwd"),
        "tiny.gnn:9:5: backward of 'spmm_sum' calls unknown kernel 'spmm_sum_bwd' (did you mean "
        "`spmm_sum_backward`?); kernels in this spec: spmm_sum, spmm_sum_backward"),
    "operator implemented twice": (
        TINY + "\nkernel other implements spmm(reduce=sum)\n    input x: float[S, H, D]\n"
               "    input weight: float[E, H]?\n    output out: float[N, H, D]\n",
        "tiny.gnn:17:1: operator spmm(reduce=sum) is implemented twice: by 'spmm_sum' and 'other'"),
    "attribute value outside its set": (
        TINY.replace("attr   reduce in {sum}\n    input  x", "attr   reduce in {sum, median}\n    input  x"),
        "tiny.gnn:5:5: attribute value 'reduce=median' is outside its set {sum, mean, max} for operator spmm"),
    "python keyword as name": (
        TINY.replace("input  x: float[S, H, D]\n    input  weight", "input  class: float[S, H, D]\n    input  weight"),
        "tiny.gnn:6:5: argument name 'class' is not a usable Python identifier (letters, digits and _, "
        "not a keyword)"),
    "code injected through a name": (
        TINY.replace("kernels tiny.kernels", "kernels tiny.kernels; import os"),
        "tiny.gnn:2:25: unexpected character ';'"),
    "unknown operator": (
        TINY.replace("implements spmm", "implements spmv"),
        "tiny.gnn:4:1: kernel 'spmm_sum' implements unknown operator 'spmv' (did you mean `spmm`?); the "
        "system API has: spmm, sddmm, edge_softmax, gat_aggregate, typed_aggregate"),
    "gradient of something that is not an input": (
        TINY.replace("grad   x =", "grad   y ="),
        "tiny.gnn:9:5: 'grad y': 'y' is not a float input of kernel 'spmm_sum'; its float inputs: weight, x"),
    "missing colon": (
        TINY.replace("input  x: float[S, H, D]", "input  x float[S, H, D]"),
        "tiny.gnn:6:14: unexpected 'float'; a tensor argument reads `input <name>: <dtype>[<shape>]` "
        "(or output, saves, workspace), e.g. `input x: float[N, F]`"),
    "no system line": (
        TINY.replace("system tiny 0.1\n", ""),
        "tiny.gnn:1:5: unexpected 'kernels'; a spec starts with `system <name> <version>`, e.g. `system mysys 0.1`"),
    "blocks no without a reason": (
        TINY.replace("    kernels tiny.kernels\n", "    kernels tiny.kernels\n    blocks no\n"),
        "tiny.gnn:3:5: `blocks no`: write `blocks yes`, `blocks no \"why\"` or `blocks unverified \"why\"` "
        "(whether the kernels take sampled blocks, Note [blocks])"),
    "blocks with an unknown state": (
        TINY.replace("    kernels tiny.kernels\n", "    kernels tiny.kernels\n    blocks maybe \"later\"\n"),
        "tiny.gnn:3:5: `blocks maybe ...`: write `blocks yes`, `blocks no \"why\"` or `blocks unverified \"why\"` "
        "(whether the kernels take sampled blocks, Note [blocks])"),
    "callee attribute left unbound": (
        TINY.replace("kernel spmm_sum implements spmm\n    attr   reduce in {sum}\n",
                     "kernel spmm_sum implements spmm(reduce=sum)\n").replace(
            "kernel spmm_sum_backward\n    attr   reduce in {sum}\n", "kernel spmm_sum_backward\n    attr   mode in {a}\n"),
        "tiny.gnn:8:5: 'spmm_sum_backward' needs attribute 'mode', which 'spmm_sum' neither has nor binds; "
        "write `spmm_sum_backward(..., mode=VALUE)`"),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_malformed_spec_message(case):
    text, message = MISTAKES[case]
    err = error_of(text)
    assert str(err).splitlines()[0] == message


def test_error_keeps_location_apart_and_shows_a_caret():
    err = error_of(MISTAKES["unknown dtype"][0])
    assert (err.location.path, err.location.line, err.location.column) == ("tiny.gnn", 6, 5)
    assert err.message.startswith("unknown dtype 'f16'")
    assert str(err).splitlines()[1:] == ["    input  x: f16[S, H, D]", "    ^"]


def test_missing_file_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="cannot read spec"):
        load_spec(tmp_path / "absent.gnn")


def test_blocks_line_round_trips_and_defaults_to_yes():
    assert parse_spec(TINY).blocks == "yes"
    text = TINY.replace("    kernels tiny.kernels\n", "    kernels tiny.kernels\n    blocks no \"builds an N x N matrix\"\n")
    spec = parse_spec(text)
    assert (spec.blocks, spec.blocks_reason) == ("no", "builds an N x N matrix")
    assert parse_spec(str(spec)) == spec
