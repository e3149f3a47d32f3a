"""Every relative link in the project's Markdown leads to a file that exists.

A newcomer follows README into docs/ and results/; a link left behind when a table moved to results/studies/, or a
script became a campaign, is a dead end that no other test sees. Links to the web and to anchors within a page
are not checked (nothing downloads in tests).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: an inline Markdown link or image: [text](target) or ![alt](target), the target up to a space, ')' or '#'
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]+)")
_WEB = ("http://", "https://", "mailto:")


def broken_links(root: Path, files: list[str]) -> list[str]:
    """``file:line: target`` for each relative link among ``files`` (paths under ``root``) whose target is
    missing."""
    found = []
    for name in files:
        page = root / name
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for target in _LINK.findall(line):
                if not target.startswith(_WEB) and not (page.parent / target).exists():
                    found.append(f"{name}:{number}: {target}")
    return found


def _tracked_markdown() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.splitlines() if (REPO / name).is_file()]


def test_every_relative_link_in_the_projects_markdown_exists():
    broken = broken_links(REPO, _tracked_markdown())
    assert not broken, "links to files that do not exist (moved? results/studies/ holds the studies):\n  " + \
        "\n  ".join(broken)


def test_a_missing_target_is_reported_and_web_links_and_anchors_are_not(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "table.md").write_text("# a table\n")
    (tmp_path / "docs" / "page.md").write_text(
        "[table](../results/table.md) and [its row](../results/table.md#row), [web](https://example.org/x.md)\n"
        "[here](#a-heading) ![figure](../results/gone.png)\n"
        "[moved](../results/old.md)\n")
    assert broken_links(tmp_path, ["docs/page.md"]) == ["docs/page.md:2: ../results/gone.png",
                                                        "docs/page.md:3: ../results/old.md"]
