"""gnnbench/text.py: text from specs, files and workers cannot drive the terminal."""
from __future__ import annotations

import pytest

from gnnbench.text import printable


@pytest.mark.parametrize("raw, shown", [
    ("ok\x1b[31m", "ok\\x1b[31m"),                # an escape sequence is shown, not sent
    ("a\u202eb", "a\\u202eb"),                      # a bidirectional override
    ("tab\there", "tab here"),                      # tabs become spaces
    ("line\nnext", "line\\x0anext"),                # newlines escaped by default
    ("caf\u00e9 \u2192 ok", "caf\u00e9 \u2192 ok"),  # printable text unchanged
])
def test_control_and_format_characters_become_visible(raw, shown):
    assert printable(raw) == shown


def test_newlines_kept_on_request_and_anything_is_stringified():
    assert printable("a\nb\x07", keep_newlines=True) == "a\nb\\x07"
    assert printable(42) == "42"
