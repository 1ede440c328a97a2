"""What a report maker is: the function behind one block of a report's index.md.

A maker is ``fn(ctx: ReportContext, out_dir: Path) -> Section | list[Section] | None``: it writes
its files under ``out_dir`` and returns the markdown that shows them (None = nothing to show for
this data, e.g. a maze-only figure on MinAtar). The report runs them in the order of
``analysis.report.MAKERS``, where a new figure or table is one more entry::

    def visitation_maker(ctx, out_dir):
        ...
        return Section("State visitation", "![...](visitation.png)", [out_dir / "visitation.png"])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from .collect import Collection


@dataclass
class Section:
    """One block of index.md. files: what the maker wrote (paths)."""

    title: str
    markdown: str
    files: list[Path] = field(default_factory=list)


@dataclass
class ReportOptions:
    reps: int = 2000
    last_k: int = 1
    normalisation: str = "minmax"
    seed: int = 0
    curve_points: int = 40
    # The report's "Results as of" line; None: the newest run file's time (report.results_as_of).
    as_of: str | None = None
    # run key -> device, for runs whose summary records none (analysis.devices.devices_from_data).
    run_devices: dict | None = None


@dataclass
class ReportContext:
    """What every maker gets: the collected data, the options, and the
    aggregates (computed on first use, then shared by all makers)."""

    data: Collection
    options: ReportOptions = field(default_factory=ReportOptions)

    @cached_property
    def aggregates(self):
        from .aggregate import compute_aggregates

        o = self.options
        return compute_aggregates(self.data, reps=o.reps, last_k=o.last_k, normalisation=o.normalisation,
                                  seed=o.seed, curve_points=o.curve_points)


Maker = Callable[[ReportContext, Path], "Section | list[Section] | None"]
