"""The README's summaries of the campaign's grids: the markers each sits between, and the rewrite of
the text between them (``python -m campaign.repro build --readme README.md``)."""

from __future__ import annotations

from pathlib import Path

from .stage_parts import MAIN

README_BEGIN = "<!-- reproduction summary: written by `python -m campaign.repro build --readme README.md` -->"
README_END = "<!-- end of reproduction summary -->"


def readme_markers(experiment: str = MAIN) -> tuple[str, str]:
    """The README markers between which a grid's summary goes (the reproduction's, or one per grid)."""
    if experiment == MAIN:
        return README_BEGIN, README_END
    return (f"<!-- {experiment} summary: written by `python -m campaign.repro build --experiment {experiment} "
            "--readme README.md` -->", f"<!-- end of {experiment} summary -->")


def update_readme(readme: Path, summary: str, experiment: str = MAIN) -> bool:
    """Replace the text between the README's markers with ``summary``; False when it has no markers."""
    begin, end = readme_markers(experiment)
    text = readme.read_text()
    if begin not in text or end not in text:
        return False
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{begin}\n{summary.strip()}\n{end}{tail}")
    return True
