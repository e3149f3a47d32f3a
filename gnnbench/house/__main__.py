"""``python -m gnnbench.house write`` rewrites docs/architecture.md and docs/notes.md; ``check`` lists stale ones."""
from __future__ import annotations

import sys
from pathlib import Path

from gnnbench.house.layers import ARCHITECTURE, render_architecture
from gnnbench.house.notes import INDEX, render_index

REPO = Path(__file__).resolve().parents[2]


def documents(root: Path = REPO) -> dict[str, str]:
    """``{path relative to the repository: its text as the code says it}``."""
    return {ARCHITECTURE: render_architecture(root), INDEX: render_index(root)}


def main(argv: list[str]) -> int:
    if argv not in (["write"], ["check"]):
        print("usage: python -m gnnbench.house write|check", file=sys.stderr)
        return 2
    stale = [rel for rel, text in documents().items()
             if not (REPO / rel).is_file() or (REPO / rel).read_text(encoding="utf-8") != text]
    if argv == ["check"]:
        for rel in stale:
            print(f"{rel} is stale; run: python -m gnnbench.house write")
        return 1 if stale else 0
    for rel, text in documents().items():
        (REPO / rel).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
