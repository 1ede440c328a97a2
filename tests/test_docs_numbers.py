"""The intervals a bonus page quotes from a committed report are the report's own cells, so a page
cannot drift from the table it cites when the report is rebuilt."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTERVAL = re.compile(r"-?\d+\.\d+ \[-?\d+\.\d+, -?\d+\.\d+\]")


def quoted_intervals(page: str, start: str, end: str) -> list[str]:
    """Every ``IQM [lo, hi]`` between the headings or sentences ``start`` and ``end`` of ``page``,
    line breaks inside one read as spaces."""
    section = page.split(start, 1)[1].split(end, 1)[0]
    return INTERVAL.findall(re.sub(r"\s+", " ", section))


def unmatched(page: str, table: str, start: str, end: str) -> list[str]:
    cells = {c.strip() for line in table.splitlines() for c in line.split("|")}
    return [q for q in quoted_intervals(page, start, end) if q not in cells]


HASH_PAGE = ROOT / "docs" / "bonuses" / "hashexplo.md"
LOW_DIM_TABLE = ROOT / "docs" / "results" / "hashexplo_low_dim" / "final_scores_iqm.md"
SECTION = ("The granularity is to be chosen per domain", "## A grid count")


def test_the_low_dimensional_hashexplo_scores_quoted_are_the_committed_tables():
    quoted = quoted_intervals(HASH_PAGE.read_text(), *SECTION)
    assert len(quoted) >= 25  # four panels' variants: the section is where this test looks
    assert unmatched(HASH_PAGE.read_text(), LOW_DIM_TABLE.read_text(), *SECTION) == []


def test_the_check_sees_a_third_digit_that_drifted():
    page = HASH_PAGE.read_text().replace("-84.26 [-85.54, -83.55]", "-84.26 [-85.54, -83.54]")
    assert unmatched(page, LOW_DIM_TABLE.read_text(), *SECTION) == ["-84.26 [-85.54, -83.54]"]
