"""Each fixed baseline's final scores before and after its fix (campaign.repro.fix_scores): the IQM and
its interval per panel at the old and the new defaults, and the panels the fix lowered or raised,
counted on runs whose scores are known."""

from __future__ import annotations

import numpy as np
import scipy.stats
from analysis_fixtures import STEPS, T, write_run

from analysis import collect
from campaign.repro.fix_scores import scores_before_after


def _cell(root, env, bonus, last: np.ndarray, overrides=None):
    for s, value in enumerate(last):
        write_run(root, "paper32", env, bonus, s, STEPS, np.linspace(value - 10, value, T), overrides=overrides)


def test_the_table_gives_each_panel_s_iqm_before_and_after_and_counts_what_the_fix_changed(tmp_path):
    rng = np.random.default_rng(0)
    low, high = rng.normal(0.0, 1.0, 8), rng.normal(50.0, 1.0, 8)
    # #Explo: far lower after its fix on MountainCar, a little higher (intervals overlapping) on Acrobot
    _cell(tmp_path, "mountaincar", "hashexplo", high, {"bonus.bin_penalty": 10})
    _cell(tmp_path, "mountaincar", "hashexplo", low)
    _cell(tmp_path, "acrobot", "hashexplo", low, {"bonus.bin_penalty": 10})
    _cell(tmp_path, "acrobot", "hashexplo", low + 0.1)
    _cell(tmp_path, "acrobot", "rnd", low)  # a bonus without a fix: no column
    md = scores_before_after(collect(tmp_path, "paper32"), ["mountaincar", "acrobot"], reps=500)
    header = md.splitlines()[0]
    assert header == "| Panel | #Explo before (bin_penalty 10) | #Explo after (the defaults) |"
    mc = next(line for line in md.splitlines() if line.startswith("| MountainCar"))
    before, after = (float(c.split(" [")[0]) for c in mc.strip("|").split("|")[1:])
    assert before == float(f"{scipy.stats.trim_mean(high, 0.25):.3g}")
    assert after == float(f"{scipy.stats.trim_mean(low, 0.25):.3g}")
    assert ("The new defaults lowered #Explo's IQM final score on 1 of 2 panels (the intervals apart on 1: "
            "MountainCar) and raised it on 1 (apart on 0: none).") in md
    assert "RND" not in md


def test_no_fix_with_runs_on_both_sides_gives_no_table(tmp_path):
    _cell(tmp_path, "mountaincar", "hashexplo", np.zeros(4))
    assert scores_before_after(collect(tmp_path, "paper32"), ["mountaincar"], reps=100) == ""
