"""gnnbench/safe_write.py: downloads and generated files never written through a link (Note [writes refuse
links])."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.safe_write import make_folder, open_append, write_file


def _link_message(path, target) -> str:
    return (f"{path} is a symbolic link (to {target}); remove it and try again: gnnbench writes only its own files, "
            f"never through a link (Note [writes refuse links])")


def test_a_file_is_written_whole_and_replaces_the_old_one(tmp_path):
    write_file(tmp_path / "a.txt", "one")
    write_file(tmp_path / "a.txt", b"two")
    assert (tmp_path / "a.txt").read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_link_in_the_files_place_or_on_a_folder_below_within_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "a.txt").symlink_to(victim)
    with pytest.raises(UserError) as err:
        write_file(tmp_path / "a.txt", "x")
    assert str(err.value) == _link_message(tmp_path / "a.txt", victim)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "sub").symlink_to(elsewhere)
    for write in (lambda: write_file(root / "sub" / "f", "x", root), lambda: make_folder(root / "sub" / "d", root),
                  lambda: open_append(root / "sub" / "f", root)):
        with pytest.raises(UserError) as err:
            write()
        assert str(err.value) == _link_message(root / "sub", elsewhere)
    assert victim.read_text() == "precious" and list(elsewhere.iterdir()) == []


def test_a_folder_is_made_below_within_and_a_file_in_its_way_is_one_line(tmp_path):
    assert make_folder(tmp_path / "a" / "b", tmp_path).is_dir()
    (tmp_path / "f").write_text("")
    with pytest.raises(UserError) as err:
        make_folder(tmp_path / "f", tmp_path)
    assert str(err.value) == f"{tmp_path / 'f'} is a file where gnnbench needs a folder; move it away and try again"
