"""Notes as documentation: docs/notes.md indexes every Note (generated, kept current), and no citation dangles.

Note [notes] in gnnbench/house/notes.py says what a Note and a citation are.
"""
from __future__ import annotations

import re
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


#: what a measured figure looks like: a number with a unit of time, memory, bandwidth or ratio, or a decimal
_FIGURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|s|MiB|GiB|GB/s|x)\b|\b\d+\.\d+\b")
_BORDER = re.compile(r"^\s*#?\s*={3,}(?:\s+={3,})+\s*$")
_COMMIT = re.compile(r"\b(?:commits?|at|after|before|since)\s+`*(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}\b")
_PACKAGE = ("gnnbench", "systems", "dsl", "models", "datasets")


def _measured(text: str) -> list[int]:
    """Lines opening a table (reStructuredText's ``====`` borders) that holds measured figures, and lines naming
    a commit: what results/ holds, not the code (Note [notes])."""
    lines, found, border = text.split("\n"), [], []
    for number, line in enumerate(lines, 1):
        if _BORDER.match(line):
            border.append(number)
            if len(border) == 3:
                if any(_FIGURE.search(row) for row in lines[border[1]:border[2] - 1]):
                    found.append(border[0])
                border = []
        if _COMMIT.search(line):
            found.append(number)
    return found


def test_no_docstring_or_comment_holds_a_measured_table_or_a_commit():
    places = [f"{path.relative_to(REPO)}:{line}" for folder in _PACKAGE for path in sorted((REPO / folder).rglob("*.py"))
              for line in _measured(path.read_text(encoding="utf-8"))]
    assert not places, ("measured tables and commit hashes belong in results/ (a study or the table they came "
                        "from); keep the reason in the Note and link the figure:\n  " + "\n  ".join(places))


def test_a_measured_table_and_a_commit_are_found():
    table = "    ====  =====\n    size  time\n    ====  =====\n    4M    3.1 s\n    ====  =====\n"
    reference = "    ====  =====\n    kernel  call\n    ====  =====\n    spmm  mm\n    ====  =====\n"
    assert _measured(table) == [1] and _measured(reference) == []
    assert _measured("x\n# fixed at commit 5ae7ac4, 2x faster\n") == [2]
