"""A hyperparameter sweep's report as a new user meets it: messages that say why a number is
missing, one row per method, the hyperparameter view, a per-seed figure one can read."""

from __future__ import annotations

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pytest
from analysis_fixtures import STEPS, T, write_run

from analysis import collect
from analysis.aggregate import compute_aggregates
from analysis.maker import ReportContext, ReportOptions
from analysis.makers.hyperparameters import grid_tables, hyperparameters_maker, swept_bonuses
from analysis.makers.seeds import SEED_CURVES_DPI, draw_seed_curves, seed_curves_layout, seed_curves_maker
from analysis.methods import build_methods
from analysis.report import build_report

REPS = 40
BUDGET = {"agent.total_timesteps": 4096}
LR_DEFAULT = 3e-4


def _sweep(root, experiment="hp", bonuses=("none", "rfig"), lrs=(None, 1e-3), betas=(None,), level=None,
           seeds=3, envs=("mountaincar",)):
    """``launch.py -m bonus=... 'agent.lr=1e-3,3e-4' ['bonus.beta=...'] agent.total_timesteps=4096`` as the
    launcher writes it: the default lr (None here) is left out of the variant's overrides. ``level``:
    every return (None: a return that grows with the lr, the beta and the seed)."""
    for env in envs:
        for b in bonuses:
            for lr in lrs:
                for beta in betas:
                    ov = {**BUDGET, **({"agent.lr": lr} if lr else {}), **({"bonus.beta": beta} if beta else {})}
                    for s in range(seeds):
                        gain = 1000 * (lr or LR_DEFAULT) + 10 * (beta or 0.5) + (b == "rfig") + 0.3 * s
                        r = np.full(T, float(level)) if level is not None else -200 + gain * np.linspace(0, 1, T)
                        write_run(root, experiment, env, b, s, STEPS, r, overrides=ov,
                                  defaults={"agent.lr": LR_DEFAULT, "bonus.beta": 0.5})


# --------------------------------------------------------------------------- messages that say why


def test_equal_scores_are_named_as_such_not_as_missing_scores(tmp_path):
    for b in ("none", "rfig"):  # every seed at -200 on MountainCar: every run scored
        for s in range(3):
            write_run(tmp_path, "flat", "mountaincar", b, s, STEPS, np.full(T, -200.0))
    coll = collect(tmp_path, "flat")
    agg = compute_aggregates(coll, reps=REPS)
    text = " ".join(agg.notes)
    assert "every return of every counted run is -200" in text and "undefined" in text
    assert "No env's final scores can be normalised" in text
    assert "no final score" not in text.lower() and "No env has final scores" not in text
    # The probability of improvement needs no normalisation: all ties, 0.5.
    assert [(x, y, iv.point) for x, y, iv, _ in agg.poi] == [("rfig", "none", 0.5)]
    # The comparison's missing seed spread says the same, not only "not measured".
    build_report(coll, tmp_path / "rep", ReportOptions(reps=REPS), only=["method_comparison"], strict=True)
    assert "no env's scores can be normalised" in (tmp_path / "rep" / "method_comparison.tex").read_text()


def test_no_probability_of_improvement_says_why(tmp_path):
    _sweep(tmp_path / "a", lrs=(1e-3, 1e-4), betas=(0.1, 1.0))  # four RFIG variants, none at the defaults
    notes = " ".join(compute_aggregates(collect(tmp_path / "a", "hp"), reps=REPS).notes)
    assert "RFIG has 4 variants here" in notes and "none runs its defaults" in notes
    assert "RFIG (lr=0.001, beta=0.1)" in notes and "no final scores" not in notes
    _sweep(tmp_path / "b", bonuses=("none",))
    assert "No RFIG runs in this report" in " ".join(compute_aggregates(collect(tmp_path / "b", "hp"),
                                                                        reps=REPS).notes)


def test_a_method_without_scores_says_what_its_runs_did(tmp_path):
    for env in ("acrobot", "mountaincar"):
        for b in ("none", "rfig"):
            for s in range(3):
                ep = np.full(T, 4)
                if env == "mountaincar" and b == "rfig":
                    ep[:] = 0  # no episode ever finished (an empty last window alone carries the one before)
                r = np.where(ep > 0, -100.0 + s + np.arange(T), np.nan)
                write_run(tmp_path, "x", env, b, s, STEPS, r, episodes=ep, complete=not (env == "acrobot"
                                                                                         and b == "rfig"))
    notes = compute_aggregates(collect(tmp_path, "x"), reps=REPS).notes
    assert ("RFIG has no final score in any env (acrobot: 3 run(s) here, none with a final score: 3 incomplete; "
            "mountaincar: 3 run(s) here, none with a final score: 3 with no finished episode in the last 1 "
            "window(s)): no probability of improvement.") in notes


# --------------------------------------------------------------------------- one row per method


def test_a_sweep_through_the_default_value_has_one_row_per_method(tmp_path):
    _sweep(tmp_path)  # lr = the default (no override) and 1e-3; every job shares the budget override
    coll = collect(tmp_path, "hp")
    build_report(coll, tmp_path / "rep", ReportOptions(reps=REPS), only=["method_comparison", "aggregate_table"],
                 strict=True)
    assert _comparison_rows(tmp_path / "rep") == ["PPO", "PPO (lr=0.001)", "RFIG", "RFIG (lr=0.001)"]
    # The variant at the defaults (no base folder) stands for its bonus where one is compared with
    # the others: RFIG in the probability of improvement, PPO in the PPO normalisation.
    plain = "rfig/agent.total_timesteps=4096"
    assert coll.label(plain) == "RFIG" and "rfig" not in coll.methods
    agg = compute_aggregates(coll, reps=REPS, normalisation="ppo")
    assert [(x, coll.label(y)) for x, y, _, _ in agg.poi] == [(plain, "PPO"), (plain, "PPO (lr=0.001)"),
                                                              (plain, "RFIG (lr=0.001)")]
    assert agg.normalisation.excluded == {} and agg.agg_envs == ["mountaincar"]
    assert "P(RFIG > PPO)" in (tmp_path / "rep" / "index.md").read_text()


def _comparison_rows(out) -> list[str]:
    return [line.split("|")[1].strip() for line in (out / "method_comparison.md").read_text().splitlines()[2:]]


def test_a_grid_without_a_default_setting_has_no_row_for_the_bare_bonus(grid):
    coll, ctx, _, out = grid
    build_report(coll, out, ctx.options, only=["method_comparison"], strict=True)
    assert _comparison_rows(out) == [coll.label(m) for m in coll.methods]
    assert "PPO" not in _comparison_rows(out) and len(set(_comparison_rows(out))) == 8


def test_methods_with_the_same_overrides_never_share_a_label():
    groups = {("rfig", "base"): {}, ("rfig", "agent.lr=0.001"): {"agent.lr": 1e-3},
              ("rfig", "agent.lr=0.001~1a2b3c4d"): {"agent.lr": 1e-3}}
    labels = [m.label for m in build_methods(groups)[0]]
    assert len(set(labels)) == 3 and labels[0] == "RFIG"
    assert labels[1:] == ["RFIG (lr=0.001) [rfig/agent.lr=0.001]", "RFIG (lr=0.001) [rfig/agent.lr=0.001~1a2b3c4d]"]


# --------------------------------------------------------------------------- the hyperparameter view


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    root = tmp_path_factory.mktemp("grid")
    _sweep(root, lrs=(None, 1e-3), betas=(0.1, 1.0), envs=("mountaincar", "acrobot"))
    coll = collect(root, "hp")
    ctx = ReportContext(coll, ReportOptions(reps=REPS))
    return coll, ctx, hyperparameters_maker(ctx, root / "rep"), root / "rep"


def test_two_swept_keys_give_a_table_per_setting_and_a_grid(grid):
    coll, ctx, sections, out = grid
    agg = ctx.aggregates
    assert [s.title for s in sections] == ["Hyperparameters of PPO", "Hyperparameters of RFIG"]
    rfig = next(s for s in swept_bonuses(coll) if s.bonus == "rfig")
    assert rfig.keys == ["agent.lr", "bonus.beta"]
    table = (out / "hyperparameters_rfig.md").read_text().splitlines()
    assert table[0] == "| Method | lr | beta | Acrobot | MountainCar |"
    key = "rfig/agent.lr=0.001,agent.total_timesteps=4096,bonus.beta=1"
    iv = agg.per_env["mountaincar"][key]["iqm"]
    row = next(line for line in table if line.startswith(f"| {coll.label(key)} |"))
    assert f"{iv.point:.1f} [{iv.lo:.1f}, {iv.hi:.1f}] (n=3)" in row
    # The default lr is read from config.yaml and said to be one.
    assert any(line.startswith("| RFIG (beta=0.1) | 0.0003 (default) | 0.1 |") for line in table)
    # The grid: rows lr, columns beta, the setting's own IQM in its cell.
    env, header, rows = next(g for g in grid_tables(coll, agg, rfig) if g[0] == "mountaincar")
    assert header == ["lr \\ beta", "0.1", "1"] and [r[0] for r in rows] == ["0.0003", "0.001"]
    assert rows[1][2].startswith(f"{iv.point:.1f} [")
    assert (out / "hyperparameters_rfig_grid.png").is_file() and (out / "hyperparameters_rfig_grid.md").is_file()
    assert "hyperparameters_rfig_grid.png" in sections[1].markdown


def test_one_swept_key_gives_the_table_and_no_sweep_gives_nothing(tmp_path):
    _sweep(tmp_path / "one")
    sections = hyperparameters_maker(ReportContext(collect(tmp_path / "one", "hp"), ReportOptions(reps=REPS)),
                                     tmp_path / "r1")
    assert len(sections) == 2 and "grid" not in " ".join(str(f) for s in sections for f in s.files)
    assert (tmp_path / "r1" / "hyperparameters_rfig.md").read_text().startswith("| Method | lr | MountainCar |")
    for b in ("none", "rfig"):
        for s in range(3):
            write_run(tmp_path / "plain", "p", "mountaincar", b, s, STEPS, np.linspace(-200, -150, T) + s)
    assert hyperparameters_maker(ReportContext(collect(tmp_path / "plain", "p"), ReportOptions(reps=REPS)),
                                 tmp_path / "r2") is None


# --------------------------------------------------------------------------- the per-seed figure


def test_a_one_env_per_seed_figure_is_readable_and_the_paper_grid_keeps_its_size(tmp_path):
    for b in ("none", "rfig"):
        for s in range(3):
            write_run(tmp_path, "one", "mountaincar", b, s, STEPS, np.linspace(-200, -190, T) + s)
    seed_curves_maker(ReportContext(collect(tmp_path, "one"), ReportOptions(reps=REPS)), tmp_path / "rep")
    height, width = mpimg.imread(tmp_path / "rep" / "seed_curves.png").shape[:2]
    assert width >= 1000 and height >= 380
    # One env and a sweep's eight methods: one row, and still tall enough to read.
    (w, h), dpi = seed_curves_layout(1, 8)
    assert w * dpi >= 1000 and h * dpi >= 300
    # Five methods or more (the published reports' grids) are as they were: 2.2 x 1.55 in a panel, 90 dpi.
    assert seed_curves_layout(12, 5) == ((2.2 * 5 + 0.8, 1.55 * 12 + 0.6), SEED_CURVES_DPI)
    assert seed_curves_layout(13, 7) == ((2.2 * 7 + 0.8, 1.55 * 13 + 0.6), SEED_CURVES_DPI)
    fig = draw_seed_curves(collect(tmp_path, "one"))
    try:
        assert fig.get_figwidth() > 2.2 * 2 + 0.8  # bigger panels, not only more dots
    finally:
        plt.close(fig)
