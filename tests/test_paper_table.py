"""The paper's Table 1 in the campaign (campaign.repro.paper_table): its rows, and the campaign's
comparison of methods that shows them beside the measured columns."""

from __future__ import annotations

from analysis_fixtures import make_clean_tree

from analysis import collect
from analysis.maker import ReportOptions
from analysis.names import METHOD_ORDER
from analysis.report import MAKERS, build_report
from campaign.repro.paper_table import PAPER_TABLE, REPORT_MAKERS, TABLE_1
from rfig_exp.bonuses import bonus_names, declared_bonuses


def test_the_table_describes_declared_bonuses_and_lists_the_papers_in_the_reports_order():
    assert set(TABLE_1) <= set(bonus_names())
    assert PAPER_TABLE == ("rnd", "vime", "hashexplo", "rfig")
    # the reports place the baselines as the paper's table lists them (the bonuses' declared order)
    assert PAPER_TABLE == tuple(b for b in METHOD_ORDER if b in PAPER_TABLE)
    # the framework's declarations carry no row of the paper's
    assert not any(hasattr(cls, "paper") for cls in declared_bonuses().values())


def test_the_campaigns_report_shows_the_papers_columns_beside_the_measured_ones(tmp_path):
    make_clean_tree(tmp_path / "tree")  # PPO, RND and RFIG
    out = tmp_path / "report"
    assert [name for name, _ in REPORT_MAKERS] == [name for name, _ in MAKERS]
    build_report(collect(tmp_path / "tree", "synth"), out, ReportOptions(reps=50), only=["method_comparison"],
                 makers=REPORT_MAKERS, strict=True)
    md = (out / "method_comparison.md").read_text()
    assert md.splitlines()[0] == ("| Method | Principle | Representation | Computation | Sensitivity (paper) | "
                                  "Seed spread (IQR) |")
    rows = [line.split(" | ")[0].lstrip("| ") for line in md.splitlines()[2:]]
    assert rows == ["PPO", "RND", "VIME", "#Explo", "RFIG"]  # the paper's bonuses, measured here or not
    assert "| VIME | Information gain | ✓ | Bayesian NN | High | — |" in md
    assert "| RFIG | Information gain (kernel theory) | ✗ | Closed-form | Low | " in md
    assert "\\#Explo" in (out / "method_comparison.tex").read_text()
    assert "are the paper's Table 1; seed spread is measured" in (out / "index.md").read_text()
