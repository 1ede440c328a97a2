"""Every relative link of the README and of docs/ leads somewhere: the file, and the heading a
``#fragment`` names (as GitHub makes a heading's anchor). Two kinds of generated page are read as
what they are: a report's ``summary.md`` is the README's block, its links relative to the README;
and a report links each figure's PDF, which ``make figures`` writes beside the PNG and git ignores
(``.gitignore``), so such a link is taken as resolved where git says the file is ignored."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = CODE.sub("", page.read_text())
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(CODE.sub("", page.read_text()))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", m.group(1))]  # http:, mailto: ... are not checked here


def ignored_by_git(path: Path) -> bool:
    if not shutil.which("git") or not (ROOT / ".git").exists():
        return False
    return subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT).returncode == 0


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    base = ROOT if page.name == "summary.md" and "results" in page.parts else page.parent
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        where = (base / path).resolve() if path else page
        if not where.exists():
            if not ignored_by_git(where):
                broken.append(f"{target} (no such file)")
        elif fragment and where.suffix == ".md" and fragment not in anchors(where):
            broken.append(f"{target} (no heading #{fragment} in {where.name})")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_check_sees_a_broken_link_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[ok](#a-title) [gone](nothing.md) [no heading](#elsewhere) `[code](x.md)`\n")
    assert links(page) == ["#a-title", "nothing.md", "#elsewhere"]
    assert anchors(page) == {"a-title"}
