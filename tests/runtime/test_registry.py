"""gnnbench/runtime/registry.py: systems by name, what they need, their glue, their build hash."""
from __future__ import annotations

import pytest

from gnnbench.errors import UnavailableError, UserError
from gnnbench.runtime.registry import (NATIVE_SYSTEMS, list_systems, load_system, native_configure, system_hash,
                                       system_info, system_names)


def test_shipped_kernel_systems_and_native_baselines_are_listed():
    names = system_names()
    assert {"reference", "isplib", "mkl", "pyg", "dgl"} <= set(names)
    assert set(NATIVE_SYSTEMS) <= set(names)
    kinds = {info.name: info.kind for info in list_systems()}
    assert kinds["reference"] == "kernel" and kinds["pyg-native"] == "native"


def test_unknown_name_lists_the_choices_and_suggests_the_closest():
    with pytest.raises(UserError, match="unknown system 'refrence'; choose one of: .*did you mean 'reference'"):
        system_info("refrence")


def test_reference_runs_here_and_declares_its_operators():
    info = system_info("reference")
    assert info.unavailable_reason("torch", "cpu") is None
    assert "spmm" in info.operators
    assert "spmm" in load_system("reference").operators


def test_a_native_baseline_has_no_glue_and_its_options_come_from_its_module():
    with pytest.raises(UserError, match="is a native baseline, not a kernel system"):
        load_system("pyg-native")
    assert native_configure("dgl-native") is None
    assert callable(native_configure("pyg-native"))


def test_unavailable_reason_names_what_is_missing():
    from dataclasses import replace

    info = replace(system_info("reference"), missing=("fancy_lib",))
    assert info.unavailable_reason() == "needs the Python package(s) fancy_lib (pip install fancy_lib)"
    assert "has no jax glue" in replace(system_info("reference")).unavailable_reason("jax")
    assert replace(system_info("reference"), error="bad spec").unavailable_reason() == "broken: bad spec"


def test_system_hash_is_stable_and_differs_between_systems():
    assert system_hash("reference") == system_hash("reference")
    assert len(system_hash("reference")) == 16
    assert system_hash("reference") != system_hash("mkl")
    assert system_hash("pyg-native") != system_hash("dgl-native")


def test_load_system_refuses_a_framework_without_glue():
    with pytest.raises(UnavailableError, match="system 'reference' is unavailable: has no jax glue"):
        load_system("reference", "jax")


def test_system_hash_covers_the_kernel_sources_a_system_borrows():
    """Note [system hash]: cusparse runs mkl's kernels and dgnn reuses isplib's."""
    from pathlib import Path

    from gnnbench.runtime.registry import _source_folders, system_info

    folders = lambda name: [f.name for f in _source_folders(Path(system_info(name).spec_path).parent)]  # noqa: E731
    assert folders("cusparse") == ["cusparse", "mkl"]
    assert folders("dgnn") == ["dgnn", "isplib"]
    assert folders("isplib") == ["isplib"]


def test_block_support_comes_from_the_spec():
    from dataclasses import replace

    ref, cusparse = system_info("reference"), system_info("cusparse")
    assert (ref.blocks, ref.blocks_unavailable_reason(), ref.blocks_note()) == ("yes", None, "")
    assert cusparse.blocks == "unverified" and cusparse.blocks_unavailable_reason() is None
    assert cusparse.blocks_note().startswith("blocks unverified (its spec): mkl's kernels")
    no = replace(ref, blocks="no", blocks_reason="builds an N x N matrix")
    assert no.blocks_unavailable_reason() == ("does not support sampled blocks (its spec: `blocks no`): "
                                              "builds an N x N matrix")


def test_native_baselines_are_found_by_their_declaration_without_importing_them(tmp_path):
    """Note [native baseline discovery]: a module declaring NATIVE_BASELINE is listed by its position."""
    from gnnbench.runtime.registry import _find_native_baselines

    declared = ('NATIVE_BASELINE = {{"name": "{0}", "requires": (), "summary": "s", "version_of": "torch", '
                '"position": {1}}}\nraise RuntimeError("never imported")\n')
    (tmp_path / "b_native.py").write_text(declared.format("b-native", 0))
    (tmp_path / "a_native.py").write_text(declared.format("a-native", 1))
    (tmp_path / "_helpers.py").write_text("X = 1\n")
    found = _find_native_baselines(tmp_path)
    assert list(found) == ["b-native", "a-native"]
    assert found["a-native"]["module"] == "gnnbench.peers.a_native" and found["a-native"]["requires"] == ()
    assert list(NATIVE_SYSTEMS) == ["pyg-native", "dgl-native"]
    (tmp_path / "c_native.py").write_text('NATIVE_BASELINE = {"name": "c-native"}\n')
    with pytest.raises(ValueError, match="c_native.py: NATIVE_BASELINE must be a literal dict with exactly the keys"):
        _find_native_baselines(tmp_path)
