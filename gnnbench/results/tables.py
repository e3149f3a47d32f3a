"""One way to show a table: rich on a terminal, plain text, markdown, CSV or HTML elsewhere.

Commands and benchmarks build a :class:`Table` (header, rows of text cells,
which columns are numeric, footnotes) and hand it to :func:`print_table` or
:meth:`Table.render`; none of them aligns columns by hand. On a terminal
:func:`print_table` draws it with rich; piped or redirected it writes the plain
``text`` rendering, so scripts and ``grep`` see no colour codes or box glyphs.
``--json`` output never goes through here.

Renderings: ``text`` and ``markdown`` through tabulate (``simple`` and ``pipe``,
numeric columns right-aligned), ``html`` through tabulate's escaping ``html``
format, ``csv`` through the :mod:`csv` module.

Note [cells escaped for their medium]
    Cells hold stored names (a system, a dataset, a build), which anyone who
    can write a store chooses. Text, markdown and rich renderings pass every
    cell, title and note through :func:`gnnbench.text.printable`, so a terminal
    escape sequence shows as ``\x1b`` instead of acting. Markdown cells and the
    title also write ``&``, ``<`` and ``>`` as entities and ``|`` as ``\\|``, so a
    stored ``<script>`` stays text under a plain CommonMark renderer, which
    passes raw HTML through; notes are gnnbench's own Markdown and keep theirs.
    CSV and HTML cells go through :func:`~gnnbench.text.printable` too (Note [names escaped once]): a CSV is
    read on terminals (``cat``, ``column``) as often as by programs, and an HTML page's text is copied into
    them; HTML's ``<`` and ``&`` are then tabulate's to escape.
"""
from __future__ import annotations

import csv
import io
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from gnnbench.errors import UserError
from gnnbench.text import printable

__all__ = ["Table", "print_table", "FORMATS", "fmt_number", "flat_records", "records_csv"]

FORMATS = ("text", "markdown", "csv", "html")


def records_csv(records: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Records as CSV with a header, text values through :func:`~gnnbench.text.printable` (Note [cells escaped
    for their medium]): the one CSV writer of comparisons; numbers keep full precision."""
    import pandas as pd

    frame = pd.DataFrame(list(records), columns=list(columns) if columns is not None else None)
    frame = frame.map(lambda v: printable(v) if isinstance(v, str) else v)
    frame.columns = [printable(c) for c in frame.columns]
    return frame.to_csv(index=False, lineterminator="\n")


def fmt_number(value: float) -> str:
    """Three significant digits or so: 0.123, 1.23, 12.3, 123."""
    digits = 3 if abs(value) < 1 else 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
    return f"{value:.{digits}f}"


@dataclass
class Table:
    """A table of text cells.

    Args:
        header (sequence of str): column titles.
        rows (list of sequences): cells; ``None`` shows as an empty cell, other
            values through ``str``.
        numeric (sequence of bool, optional): right-align these columns
            (default: none).
        title (str, optional): shown above the table on a terminal and in markdown.
        notes (list of str): footnotes printed after the table (not in CSV).
        multiline (sequence of bool, optional): these columns keep a cell's line breaks as line breaks (the
            cell's lines stack inside its column; ``<br>`` in markdown) where other columns show ``\\x0a``
            (default: none). For gnnbench's own text, such as verify's details, never for stored names.
    """

    header: Sequence[str]
    rows: list[Sequence[Any]]
    numeric: Sequence[bool] = ()
    title: str | None = None
    notes: list[str] = field(default_factory=list)
    multiline: Sequence[bool] = ()

    def _cells(self) -> list[list[str]]:
        return [["" if v is None else str(v) for v in row] for row in self.rows]

    def _shown_cells(self, markdown: bool = False) -> list[list[str]]:
        """Cells made safe to show (Note [cells escaped for their medium])."""
        multiline = list(self.multiline) + [False] * (len(self.header) - len(self.multiline))
        if markdown:
            return [["<br>".join(map(_markdown_cell, c.split("\n"))) if keep else _markdown_cell(c)
                     for c, keep in zip(row, multiline)] for row in self._cells()]
        return [[printable(c, keep_newlines=keep) for c, keep in zip(row, multiline)] for row in self._cells()]

    def _align(self) -> tuple[str, ...]:
        numeric = list(self.numeric) + [False] * (len(self.header) - len(self.numeric))
        return tuple("right" if n else "left" for n in numeric)

    def render(self, format: str = "text") -> str:
        """The table as ``text`` (aligned columns), ``markdown``, ``csv`` or ``html``, ending in a newline."""
        if format not in FORMATS:
            raise UserError(f"unknown table format {format!r}; choose one of {list(FORMATS)}")
        if format == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow([printable(h) for h in self.header])
            writer.writerows(self._shown_cells())
            return buf.getvalue()
        from tabulate import tabulate

        cells = self._shown_cells(markdown=format == "markdown")
        fmt = {"text": "simple", "markdown": "pipe", "html": "html"}[format]
        body = tabulate(cells, list(self.header), tablefmt=fmt, colalign=self._align(), disable_numparse=True)
        if format == "text":
            body = "\n".join(line.rstrip() for line in body.splitlines())
            return "\n".join([body, *([""] + [printable(n) for n in self.notes] if self.notes else [])]) + "\n"
        if format == "markdown":
            head = [f"**{_markdown_cell(self.title)}**", ""] if self.title else []
            return "\n".join(head + [body]) + "".join(f"\n\n{printable(n)}" for n in self.notes) + "\n"
        import html

        body = body.replace("<table>", '<table class="gnnbench-table">', 1)
        return body + "\n" + "".join(f"<p>{html.escape(n)}</p>\n" for n in self.notes)

    def rich(self) -> Any:
        """The table as a ``rich.table.Table`` (cells are not parsed as rich markup)."""
        from rich.table import Table as RichTable
        from rich.text import Text

        out = RichTable(title=None if self.title is None else Text(printable(self.title)), header_style="bold",
                        caption_justify="left")
        for name, align in zip(self.header, self._align()):
            out.add_column(Text(printable(name)), justify=align)
        for row in self._shown_cells():
            out.add_row(*(Text(c) for c in row))
        return out


def _markdown_cell(text: str) -> str:
    """``text`` as literal Markdown text (Note [cells escaped for their medium])."""
    import html

    return html.escape(printable(text), quote=False).replace("|", "\\|")


def flat_records(results: Sequence[Any]) -> list[dict[str, Any]]:
    """Result dataclasses as plain dicts, each one's ``group`` mapping flattened into it: ``--json`` and CSV."""
    out = []
    for result in results:
        record = asdict(result)
        record.update(record.pop("group"))
        out.append(record)
    return out


def print_table(table: Table, file: IO[str] | None = None) -> None:
    """Shows ``table`` on ``file`` (default: stdout): rich on a terminal, plain ``text`` otherwise."""
    file = sys.stdout if file is None else file
    if getattr(file, "isatty", lambda: False)():
        from rich.console import Console

        console = Console(file=file, highlight=False)
        console.print(table.rich())
        for note in table.notes:
            console.print(printable(note), markup=False, style="dim")
    else:
        file.write(table.render("text"))
