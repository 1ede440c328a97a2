"""The paper's Table 1 ("Comparison of exploration methods"): what it says of each bonus, and the
report's comparison of methods with its columns beside the measured ones.

The table is the paper's, not a property of a bonus: it lives here, with the reproduction that
quotes it, and the framework's declarations of the bonuses know nothing of it (their ``role`` and
``order`` place them in any report). Nothing here imports JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from analysis.maker import Maker, ReportContext, Section
from analysis.markdown import DASH
from analysis.report import MAKERS
from analysis.tables import Described, method_comparison


@dataclass(frozen=True)
class PaperRow:
    """A bonus's row in the paper's Table 1."""

    row: int | None               # its row there (None: not in the paper's table)
    principle: str
    representation: bool | None   # does the method need to *learn* a representation
    computation: str
    sensitivity: str


# bonus -> its row. Plain PPO and the noise control are not in the paper's table: PPO is the reference
# row of the measured columns, the noise the control of the comparison.
TABLE_1: Mapping[str, PaperRow] = MappingProxyType({
    "none": PaperRow(None, "No bonus", None, "—", "—"),
    "noise": PaperRow(None, "None (i.i.d. noise)", False, "—", "—"),
    "rnd": PaperRow(1, "Prediction error", False, "Distillation", "Medium"),
    "vime": PaperRow(2, "Information gain", True, "Bayesian NN", "High"),
    "hashexplo": PaperRow(3, "Count-based", True, "Auto-encoder", "High"),
    "rfig": PaperRow(4, "Information gain (kernel theory)", False, "Closed-form", "Low"),
})
# the bonuses of the paper's Table 1, in its order
PAPER_TABLE: tuple[str, ...] = tuple(sorted((b for b, r in TABLE_1.items() if r.row), key=lambda b: TABLE_1[b].row))


def _cells(row: PaperRow) -> tuple[str, ...]:
    return (row.principle, {True: "✓", False: "✗", None: DASH}[row.representation], row.computation,
            row.sensitivity)


DESCRIBED = Described(
    columns=("Principle", "Representation", "Computation", "Sensitivity (paper)"),
    cells=MappingProxyType({b: _cells(r) for b, r in TABLE_1.items()}),
    unknown=("?", DASH, "?", "?"),
    listed=PAPER_TABLE,
    source="Principle, Representation (does the method learn one), Computation and Sensitivity are the paper's "
           "Table 1")


def method_comparison_maker(ctx: ReportContext, out_dir: Path) -> Section:
    """The comparison of methods with the paper's Table 1 beside the measured columns."""
    return method_comparison(ctx, out_dir, DESCRIBED)


# The report's blocks as analysis.report runs them, the comparison of methods with the paper's table.
REPORT_MAKERS: tuple[tuple[str, Maker], ...] = tuple(
    (name, method_comparison_maker if name == "method_comparison" else maker) for name, maker in MAKERS)
