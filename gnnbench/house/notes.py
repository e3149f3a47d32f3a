"""The index of Notes: every Note block, where it is, and every citation that names none.

Note [notes]
    A Note is a paragraph that says why, under a heading line that holds
    only the word Note and the Note's name in square brackets (in a
    docstring, or after ``#`` in a comment), indented below it; other places
    cite it by the same words, with the file when it is not their own
    (torchgen's style, STYLE.md). :func:`definitions` finds
    the headings in every file git tracks under the scanned folders,
    :func:`dangling` the citations that name no heading, and
    :func:`render_index` writes ``docs/notes.md``, which
    ``tests/test_notes.py`` keeps current (``python -m gnnbench.house write``
    rewrites it). A name may wrap onto the next line of a docstring or a
    comment; whitespace in it counts as one space.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Place", "definitions", "references", "dangling", "render_index", "SCANNED", "INDEX"]

#: the folders (and top-level files) whose tracked text files hold Notes and their citations
SCANNED = ("gnnbench", "systems", "dsl", "models", "datasets", "benchmarks", "tests", "docs", "campaigns", ".ci",
           "README.md", "pyproject.toml", "setup.py")
#: the generated index, relative to the repository
INDEX = "docs/notes.md"
_SUFFIXES = {".py", ".md", ".toml", ".gnn", ".j2", ".lark", ".txt", ".cfg", ""}

#: a heading: the line holds only the name, after a comment's ``#`` or ``#:`` or a docstring's opening quotes
_HEADING = re.compile(r'^[ \t]*(?:#:?[ \t]*|[rR]?""")?Note \[([^\]\n]+)\][ \t]*$', re.M)
_CITATION = re.compile(r"Note\s+\[([^\]]+)\]")
#: what a name wrapped onto the next line carries: a comment's ``#`` or ``#:``, or a string literal's
#: closing and opening quotes (implicit concatenation, ``f`` prefix included)
_WRAP = re.compile(r"""\n[ \t]*#:?[ \t]*|["'][ \t]*\n?[ \t]*[fFrRbB]{0,2}["']""")


@dataclass(frozen=True, order=True)
class Place:
    """A file (relative to the repository, with ``/``) and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def _files(root: Path) -> list[Path]:
    tracked = subprocess.run(["git", "ls-files", "-z", "--", *SCANNED], cwd=root, capture_output=True,
                             check=True).stdout.decode().split("\0")
    others = subprocess.run(["git", "ls-files", "-z", "--others", "--exclude-standard", "--", *SCANNED], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    names = sorted({n for n in tracked + others if n and n != INDEX and Path(n).suffix in _SUFFIXES})
    return [root / n for n in names if (root / n).is_file()]


def _texts(root: Path):
    for path in _files(root):
        try:
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def _name(raw: str) -> str:
    return " ".join(raw.split())


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _headings(text: str):
    """The heading matches of ``text``: a name alone on its line with the Note's body below it (the next
    line a comment too, after a comment's heading; not blank, in a docstring). A comment naming a Note
    alone just above a constant (``#: Note [fastmath]``) cites it."""
    for m in _HEADING.finditer(text):
        following = text[m.end():].split("\n", 2)[1:2] or [""]  # the heading's own line ends at m.end()
        following = following[0]
        comment = m.group(0).lstrip().startswith("#")
        if following.strip() and (not comment or following.lstrip().startswith("#")):
            yield m


def definitions(root: Path) -> dict[str, list[Place]]:
    """``{name: [places of its headings]}`` (one place each, unless a name is defined twice)."""
    found: dict[str, list[Place]] = {}
    for rel, text in _texts(root):
        for m in _headings(text):
            found.setdefault(_name(m.group(1)), []).append(Place(rel, _line(text, m.start(1))))
    return found


def references(root: Path) -> dict[str, list[Place]]:
    """``{name: [places citing it]}``, headings left out; a name wrapped onto a comment's next line is joined."""
    cited: dict[str, list[Place]] = {}
    for rel, text in _texts(root):
        headings = {m.start(1) for m in _headings(text)}
        for m in _CITATION.finditer(text):
            if m.start(1) in headings:
                continue
            name = _name(_WRAP.sub(" ", m.group(1)))
            cited.setdefault(name, []).append(Place(rel, _line(text, m.start())))
    return cited


def dangling(root: Path) -> dict[str, list[Place]]:
    """The citations that name a Note defined nowhere: ``{name: [places]}``."""
    defined = definitions(root)
    return {name: places for name, places in sorted(references(root).items()) if name not in defined}


def render_index(root: Path) -> str:
    """``docs/notes.md``: every Note and the file that holds it (no line numbers, so an edit elsewhere in
    the file leaves the index current)."""
    defined = definitions(root)
    lines = ["# Notes", "",
             "<!-- generated by `python -m gnnbench.house write` from the code; do not edit "
             "(tests/test_notes.py checks it) -->", "",
             "A Note says why the code is as it is; the code cites it by its name in square brackets (Note [notes] in",
             "`gnnbench/house/notes.py`). Measured figures live in `results/`, and a Note links them.", "",
             f"{len(defined)} Notes.", "",
             "| Note | defined in |", "| --- | --- |"]
    for name in sorted(defined, key=str.lower):
        where = ", ".join(f"[{p.path}](../{p.path})" for p in defined[name])
        lines.append(f"| {name} | {where} |")
    return "\n".join(lines) + "\n"
