"""The list of report makers (figures, tables, anything that goes in index.md).

A maker is ``fn(ctx: ReportContext, out_dir: Path) -> Section | list[Section] | None``:
it writes its files under ``out_dir`` and returns the markdown that shows them
(None = nothing to show for this data, e.g. a maze-only figure on MinAtar).
Register one with::

    from analysis.registry import register_maker, Section

    @register_maker("visitation", order=55)
    def visitation_maps(ctx, out_dir):
        ...
        return Section("State visitation", "![...](visitation.png)", [out_dir / "visitation.png"])

and put the module in ``analysis/makers/``: every module there is imported
when a report is built, so a new figure needs no edit of the main script.
Built-in orders: 10 data (seeds found, problems), 20 learning curves, 22 state
coverage curves, 24 visit heat maps (makers/coverage.py), 30 final-score
tables, 33 final coverage, 36 sensitivity (makers/sensitivity.py), 40-65
cross-env aggregates, 70 method comparison, 80 intrinsic reward, 82 env/<name>
columns, 90 exports.
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
_MAKERS: dict[str, tuple[int, Maker]] = {}


def register_maker(name: str, order: int = 100):
    """Decorator adding a maker under ``name`` (re-registering a name replaces it)."""

    def deco(fn: Maker) -> Maker:
        _MAKERS[name] = (order, fn)
        return fn

    return deco


def unregister_maker(name: str) -> None:
    _MAKERS.pop(name, None)


def makers() -> list[tuple[str, Maker]]:
    """Registered makers in report order."""
    return [(n, fn) for n, (o, fn) in sorted(_MAKERS.items(), key=lambda kv: (kv[1][0], kv[0]))]
