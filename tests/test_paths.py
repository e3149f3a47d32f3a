"""gnnbench/paths.py: an output path that cannot be written fails at once, in one line, leaving nothing."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.paths import check_output_dir, check_output_file, check_path_length


def test_writable_file_and_folder_pass_and_leave_nothing(tmp_path):
    assert check_output_file(tmp_path / "out.csv", "CSV") == tmp_path / "out.csv"
    assert check_output_dir(tmp_path / "report", "report folder") == tmp_path / "report"
    assert list(tmp_path.iterdir()) == []  # probes removed, nothing created


def test_existing_file_is_appended_to_not_truncated(tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("kept")
    check_output_file(out, "CSV")
    assert out.read_text() == "kept"


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing" / "out.csv", "folder .*missing does not exist; create it first"),
    (lambda p: p, "is a folder: expected a file path"),
])
def test_bad_output_file(tmp_path, make, message):
    with pytest.raises(UserError, match=message):
        check_output_file(make(tmp_path), "CSV")


def test_bad_output_folder(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="is a file: expected a folder"):
        check_output_dir(tmp_path / "file", "figure folder")
    with pytest.raises(UserError, match="does not exist; create it first"):
        check_output_dir(tmp_path / "a" / "b", "figure folder")


def test_overlong_name_is_one_line(tmp_path):
    with pytest.raises(UserError, match="name of 300 bytes"):
        check_path_length(tmp_path / ("x" * 300), "CSV")
