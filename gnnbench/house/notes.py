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

__all__ = ["Place", "definitions", "references", "dangling", "render_index", "measured", "measured_places", "SCANNED",
           "MEASURED_SCANNED", "INDEX"]

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


# ---------------------------------------------------------------- measured tables

#: where Note [measured tables] holds: the package, and the study scripts (whose findings are their results')
MEASURED_SCANNED = ("gnnbench", "systems", "dsl", "models", "datasets", "benchmarks")
#: a figure: a number with a unit of time, memory, bandwidth, ratio or share, or a decimal
_FIGURE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|us|s|MiB|GiB|GB/s|x|%)(?!\w)|(?<![\w.])\d+\.\d+(?![\w.])")
_TIME = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|us|s)(?!\w)")
_LITERAL = re.compile(r"``[^`]*``")
_BORDER = re.compile(r"^\s*={3,}(?:\s+={3,})+\s*$")
_MARKDOWN_ROW = re.compile(r"^\s*\|.*\|\s*$")
_COMMIT = re.compile(r"\b(?i:commits?|at|after|before|since)\s+`*(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}\b")


def _blocks(source: str) -> list[list[tuple[int, str]]]:
    """The module's docstrings (every string that stands as a statement) and runs of comment lines, each as
    its ``(line number, text)`` lines; a comment's ``#`` or ``#:`` is dropped."""
    import ast
    import io
    import tokenize

    lines = source.split("\n")
    blocks = [[(n, lines[n - 1]) for n in range(node.value.lineno, node.value.end_lineno + 1)]
              for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str)]
    run: list[tuple[int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        number = token.start[0]
        if run and run[-1][0] != number - 1:
            blocks.append(run)
            run = []
        run.append((number, re.sub(r"^#:?", "", token.string)))
    return blocks + ([run] if run else [])


def _figures(line: str) -> tuple[int, int]:
    """``(figures, times)`` in ``line``, its double-backquoted examples left out."""
    prose = _LITERAL.sub("", line)
    return len(_FIGURE.findall(prose)), len(_TIME.findall(prose))


def _measured_lines(block: list[tuple[int, str]]) -> list[int]:
    found, border, paragraph = [], [], []
    for i, (number, line) in enumerate(block):
        if _BORDER.match(line):
            border.append(i)
            if len(border) == 3:
                if any(_figures(text)[0] for _, text in block[border[1] + 1:border[2]]):
                    found.append(block[border[0]][0])
                border = []
        if (_MARKDOWN_ROW.match(line) and _figures(line)[0]) or _COMMIT.search(line):
            found.append(number)
    for number, line in block + [(0, "")]:  # paragraphs: runs of lines that are not blank
        if line.strip():
            paragraph.append((number, line))
            continue
        counts = [_figures(text) for _, text in paragraph]
        if sum(c[0] for c in counts) >= 3 and any(c[1] for c in counts):
            found.append(paragraph[0][0])
        paragraph = []
    return found


def measured(source: str) -> list[int]:
    """The lines where a docstring or comment of the Python ``source`` holds a measured table.

    Note [measured tables]
        A Note says why; the figures that showed it live in results/ (the
        table a campaign or a study wrote, or results/studies/<topic>.md with
        the commit, machine and load they were taken under), and the Note
        links them. A docstring or comment holds a measured table when one of
        its blocks (a docstring, or a run of comment lines) has:

        * a reStructuredText table (``====`` borders) whose body holds a figure;
        * a Markdown table row (a line opening and closing with ``|``) that
          holds a figure;
        * a commit hash after ``commit``, ``at``, ``after``, ``before`` or
          ``since``, in any case: a figure's provenance;
        * a paragraph with three figures or more, one of them a time: a
          table written as prose.

        A figure is a number with a unit (``ms``, ``us``, ``s``, ``MiB``,
        ``GiB``, ``GB/s``, ``x``, ``%``) or a decimal; a time is a number
        with ``ms``, ``us`` or ``s``. Text between double backquotes is an
        example of output, not a measurement, and is left out. A string that
        is code's value (a header a script renders) is neither a docstring
        nor a comment. ``tests/test_notes.py`` holds the package and the
        study scripts (:data:`MEASURED_SCANNED`) to it.
    """
    return sorted({n for block in _blocks(source) for n in _measured_lines(block)})


def measured_places(root: Path) -> list[Place]:
    """Every place under :data:`MEASURED_SCANNED` where a docstring or comment holds a measured table."""
    return [Place(path.relative_to(root).as_posix(), line)
            for folder in MEASURED_SCANNED for path in sorted((root / folder).rglob("*.py"))
            for line in measured(path.read_text(encoding="utf-8"))]
