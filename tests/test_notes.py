"""Notes as documentation: docs/notes.md indexes every Note (generated, kept current), and no citation dangles.

Note [notes] in gnnbench/house/notes.py says what a Note and a citation are.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from gnnbench.house.notes import INDEX, Place, dangling, definitions, render_index

REPO = Path(__file__).resolve().parents[1]


def test_the_index_is_current():
    assert (REPO / INDEX).read_text(encoding="utf-8") == render_index(REPO), \
        f"{INDEX} is stale; run: python -m gnnbench.house write"


def test_every_citation_names_a_note_that_exists():
    missing = dangling(REPO)
    assert not missing, "citations of Notes defined nowhere (define the Note, or cite the one meant):\n" + "\n".join(
        f"  {name!r}: {', '.join(map(str, places))}" for name, places in missing.items())


def test_no_note_is_defined_twice():
    twice = {name: places for name, places in definitions(REPO).items() if len(places) > 1}
    assert not twice, f"Notes defined in more than one place: {twice}"


def test_a_dangling_citation_is_found_and_a_wrapped_one_is_not(tmp_path):
    note = "Note"  # spelt apart, so that this file cites nothing itself
    (tmp_path / "gnnbench").mkdir()
    (tmp_path / "gnnbench" / "a.py").write_text(
        f'"""A module.\n\n{note} [real one]\n    Why it is so.\n"""\n'
        f"#: {note} [real one]\n"          # a comment naming it above a constant cites it
        f"X = 1  # as {note} [real\n"
        f"#: one] says\n"                  # a name wrapped onto a comment's next line
        f'Y = ("see {note} [real " "one]", f"and {note} [no such "\n    f"note]")\n')
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert definitions(tmp_path) == {"real one": [Place("gnnbench/a.py", 3)]}
    assert dangling(tmp_path) == {"no such note": [Place("gnnbench/a.py", 9)]}
