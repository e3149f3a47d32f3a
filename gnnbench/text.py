"""Text from specs, files and workers made safe to print on a terminal.

A spec's summary, a system report or a worker's stderr may hold terminal
escape sequences (``\\x1b[2J`` clears the screen, OSC 8 forges links) or
bidirectional overrides that reorder what a reader sees. :func:`printable`
shows them as visible escapes (``\\x1b``) instead of sending them raw.

Note [names escaped once]
    A name the user supplies (a system or dataset from argv or a campaign, a
    baseline, a stored value) reaches the terminal through this one helper:
    the CLI passes every one-line error (:class:`~gnnbench.errors.UserError`)
    through :func:`printable` where it prints it (``gnnbench.cli.main``), so a
    message may quote the name as given and never send its escape sequences;
    tables pass their cells through it in every format, CSV and HTML included
    (Note [cells escaped for their medium] in :mod:`gnnbench.results.tables`).
"""
from __future__ import annotations

import unicodedata

__all__ = ["printable"]


def printable(text: object, keep_newlines: bool = False) -> str:
    """``text`` with control and format characters written as visible escapes.

    Args:
        text: anything; ``str(text)`` is cleaned.
        keep_newlines (bool): keep ``\\n`` as a line break (default: False, escaped as ``\\n``).
            Tabs are kept as spaces.

    Example: ``printable("ok\\x1b[31m")`` is ``'ok\\\\x1b[31m'``.
    """
    out = []
    for ch in str(text):
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch == "\t":
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(ch)
    return "".join(out)
