"""Tests of gnnbench.results.tables: the renderings, and rich only on a terminal."""
from __future__ import annotations

import csv
import io

import pytest

from gnnbench.errors import UserError
from gnnbench.results.tables import Table, fmt_number, print_table


@pytest.fixture
def table():
    return Table(["system", "ms"], [["a|b", "1.00"], ["<c>", None]], [False, True], title="T", notes=["unit: ms"])


def test_text_is_aligned_plain(table):
    assert table.render("text") == "system      ms\n--------  ----\na|b       1.00\n<c>\n\nunit: ms\n"


def test_markdown_escapes_pipes_and_right_aligns(table):
    text = table.render("markdown")
    assert "|:----------|-----:|" in text and "a\\|b" in text and "| &lt;c&gt; |" in text and text.startswith("**T**\n")
    assert text.endswith("\n\nunit: ms\n")


def test_csv_and_html(table):
    assert list(csv.reader(io.StringIO(table.render("csv")))) == [["system", "ms"], ["a|b", "1.00"], ["<c>", ""]]
    html = table.render("html")
    assert html.startswith('<table class="gnnbench-table">') and "&lt;c&gt;" in html and "<c>" not in html
    with pytest.raises(UserError, match=r"unknown table format 'pdf'; choose one of \['text'"):
        table.render("pdf")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_print_table_uses_rich_only_on_a_terminal(table):
    plain = io.StringIO()
    print_table(table, plain)
    assert plain.getvalue() == table.render("text")
    tty = _Terminal()
    print_table(table, tty)
    assert "┃" in tty.getvalue() or "│" in tty.getvalue()  # rich's box drawing
    assert "a|b" in tty.getvalue() and "unit: ms" in tty.getvalue()


def test_fmt_number():
    assert [fmt_number(v) for v in (0.1234, 1.234, 12.34, 123.4)] == ["0.123", "1.23", "12.3", "123"]


def test_text_shows_escape_sequences_from_stored_names_instead_of_sending_them():
    hostile = Table(["system", "ms"], [["evil\x1b[2J\x1b]8;;http://x\x07", "1.00"]], [False, True], title="T\x1b[31m",
                    notes=["from \x1b[1mstore"])
    assert hostile.render("text") == ("system                             ms\n"
                                      "-------------------------------  ----\n"
                                      "evil\\x1b[2J\\x1b]8;;http://x\\x07  1.00\n\nfrom \\x1b[1mstore\n")
    tty = _Terminal()
    print_table(hostile, tty)
    assert "\x1b[2J" not in tty.getvalue() and "\x07" not in tty.getvalue() and "evil\\x1b[2J" in tty.getvalue()


def test_markdown_escapes_html_so_a_stored_script_stays_text():
    hostile = Table(["system", "ms"], [["<script>alert(1)</script> & a|b\x1b[2J", "1.00"]], [False, True])
    assert hostile.render("markdown") == (
        "| system                                                  |   ms |\n"
        "|:--------------------------------------------------------|-----:|\n"
        "| &lt;script&gt;alert(1)&lt;/script&gt; &amp; a\\|b\\x1b[2J | 1.00 |\n")
