"""Notes as documentation: docs/notes.md indexes every Note (generated, kept current), no citation dangles, and no
docstring or comment holds a measured table.

Note [notes] in gnnbench/house/notes.py says what a Note and a citation are.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from gnnbench.house.notes import INDEX, Place, dangling, definitions, measured, measured_places, render_index

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


def test_no_docstring_or_comment_holds_a_measured_table_or_a_commit():
    places = measured_places(REPO)
    assert not places, ("measured tables and commit hashes belong in results/ (a study or the table they came "
                        "from); keep the reason in the Note and link the figure (Note [measured tables] in "
                        "gnnbench/house/notes.py):\n  " + "\n  ".join(map(str, places)))


def test_a_measured_table_and_a_commit_are_found():
    doc = '"""A module.\n\n{}"""\n'
    rst = "    ====  =====\n    size  time\n    ====  =====\n    4M    3.1 s\n    ====  =====\n"
    reference = "    ====  =====\n    kernel  call\n    ====  =====\n    spmm  mm\n    ====  =====\n"
    assert measured(doc.format(rst)) == [3] and measured(doc.format(reference)) == []
    assert measured("x = 1\n# fixed at commit 5ae7ac4, 2x faster\n") == [2]
    assert measured(doc.format("| width | ms |\n|---|---|\n| 64 | 27.0 |\n")) == [5]
    prose = "Why:\n    The gather took 40 ms against 18 ms at width 64\n    (31 ms once prefetched).\n"
    assert measured(doc.format(prose)) == [3]
    assert measured("x = 1\n# The gather took 40 ms against\n# 18 ms (31 ms once prefetched).\n") == [2]


def test_a_reason_an_example_and_a_rendered_header_are_not_measured_tables():
    doc = '"""A module.\n\n{}"""\n'
    assert measured(doc.format("A hand-off took ~20 ms per call, so small graphs run serially.\n")) == []
    assert measured(doc.format("``forward 1.00 ms, backward 2.00 ms, optimizer 0.10 ms``\n")) == []
    assert measured(doc.format("Pages of 2 MiB and 4 KiB; 64 MiB arrays, 10 % of them.\n")) == []
    assert measured(doc.format("Took 40 ms.\n\nThen 18 ms.\n\nThen 1.5x.\n")) == []  # paragraphs apart
    assert measured('HEADER = ["| arm | median ms |", "| 1.0 ms | 2.0 ms | 3.0 ms |"]\n') == []
