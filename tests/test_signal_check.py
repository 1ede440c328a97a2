"""The signal check's rule (campaign/claims/signal.py) on synthetic bonuses whose answer is known: a
constant, one pinned at its clip, one partly clipped, noise, and an informative novelty bonus."""

import numpy as np
import pytest

try:
    from analysis_fixtures import STEPS, T, write_run
except ImportError:  # tests/ imported as a package
    from tests.analysis_fixtures import STEPS, T, write_run

from analysis import collect
from campaign.claims.signal import AT_MAX, CV, RANK, RULE, judge, signal_cells, signal_md, t_interval

N = 8  # runs per cell


def columns(at_max, cv, rank=None, seed=0):
    """A run's per-window signal columns around the given levels (small noise over windows)."""
    rng = np.random.default_rng(seed)
    cols = {AT_MAX: np.clip(at_max + rng.normal(0, 0.002, T), 0, 1),
            CV: np.maximum(cv + rng.normal(0, 0.01 * cv, T), 0)}
    if rank is not None:   # a panel with a coverage grid: its runs record coverage too
        cols[RANK] = rank + rng.normal(0, 0.05, T)
        cols["coverage"] = np.linspace(0.1, 0.5, T)
    return cols


# bonus -> (at_max, cv, rank on a grid panel) per window, as each kind of bonus records them
SYNTHETIC = {"constant": (1.0, 0.0, 0.0), "saturated": (0.9, 0.05, -0.1), "partly": (0.2, 0.8, -0.5),
             "noise": (1 / 4096, 1.0, 0.0), "informative": (1 / 4096, 1.5, -0.6)}


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    root = tmp_path_factory.mktemp("signal")
    for env, grid in (("mountaincar", True), ("minatar_breakout", False)):
        for bonus, (top, cv, rank) in SYNTHETIC.items():
            for s in range(N):
                write_run(root, "synth", env, bonus, s, STEPS, np.linspace(0, 1, T),
                          extra=columns(top, cv, rank if grid else None, seed=s))
        for s in range(N):   # PPO: no reward, not judged; and an old run without the statistics
            write_run(root, "synth", env, "none", s, STEPS, np.linspace(0, 1, T))
            write_run(root, "synth", env, "old", s, STEPS, np.linspace(0, 1, T))
    coll = collect(root, "synth")
    return coll, {(c.env, coll.bonus_of(c.method)): c for c in signal_cells(coll)}


def test_each_synthetic_bonus_gets_its_known_answer(cells):
    _, by = cells
    grid = {b: by[("mountaincar", b)] for b in SYNTHETIC}
    assert grid["constant"].verdict == "degenerate"
    causes = " ".join(grid["constant"].causes)
    assert "at its clip" in causes and "constant within a batch" in causes
    assert grid["saturated"].verdict == "degenerate" and "at its clip (0.90" in grid["saturated"].causes[0]
    # no visit maps here, so no distance reference (tests/test_signal_calibration.py has them): the note says so
    assert grid["partly"].verdict == "ok" and grid["partly"].notes == (
        "partly at its clip (0.20)", "no distance reference (no visit maps): compared with 0 only")
    assert grid["noise"].verdict == "degenerate" and grid["noise"].causes[0].startswith("blind to visits")
    assert grid["informative"].verdict == "ok" and grid["informative"].rank == pytest.approx(-0.6, abs=0.02)
    lo, hi = grid["informative"].rank_interval
    assert lo < -0.6 < hi < 0
    # without a coverage grid only the clip and the spread are testable: noise passes there, and says why
    nogrid = {b: by[("minatar_breakout", b)] for b in SYNTHETIC}
    assert nogrid["noise"].verdict == "ok" and nogrid["noise"].rank is None
    assert "visits not testable (no coverage grid)" in nogrid["noise"].notes
    assert nogrid["constant"].verdict == "degenerate" and nogrid["informative"].verdict == "ok"


def test_ppo_is_not_judged_and_runs_without_the_statistics_are_not_measured(cells):
    coll, by = cells
    assert ("mountaincar", "none") not in by
    assert by[("mountaincar", "old")].verdict == "not measured" and by[("mountaincar", "old")].runs == 0
    assert all(c.runs == N for k, c in by.items() if k[1] in SYNTHETIC)


def test_the_table_names_every_degenerate_cell_with_its_cause_and_states_the_rule(cells):
    coll, by = cells
    text = signal_md(coll, list(by.values()), lambda e: e)
    assert text.count("**degenerate**") == 4 and "at its clip" in text        # constant and saturated, twice
    assert "blind, as the control must be: (rank correlation" in text          # the noise control, on the grid
    assert "| minatar_breakout † |" in text and "| mountaincar |" in text
    assert f"coefficient of variation below {RULE.constant_cv:g}" in text and "fixed 2026-11-28" in text


def test_thresholds_are_the_rules_own():
    one = np.ones(4)
    assert judge(one * RULE.at_clip, one, None)[0] == "degenerate"
    assert judge(one * (RULE.at_clip - 1e-3), one, None)[0] == "ok"
    assert judge(one * 0.0, one * RULE.constant_cv, None)[0] == "ok"
    assert judge(one * 0.0, one * RULE.constant_cv * 0.99, None)[0] == "degenerate"
    assert judge(np.zeros(0), np.zeros(0), None)[0] == "not measured"
    # a rank correlation whose interval touches 0 is blind; one wholly below is not
    assert judge(one * 0, one, np.array([-0.3, -0.2, -0.25, -0.35]))[0] == "ok"
    assert judge(one * 0, one, np.array([-0.3, 0.2, -0.25, 0.1]))[0] == "degenerate"


def test_t_interval_matches_the_formula():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    lo, hi = t_interval(x, 0.95)
    half = 3.182446305284263 * np.std(x, ddof=1) / 2.0     # t_{0.975, 3}, n = 4
    assert (lo, hi) == pytest.approx((x.mean() - half, x.mean() + half))


def test_the_control_table_sets_each_bonus_against_ppo_and_the_control(tmp_path):
    """Scores built so that the control beats PPO (the machinery helps) and one bonus only matches
    the control (its gain over PPO is the machinery's), another beats both."""
    from campaign.claims.claims import panels_of
    from campaign.claims.control import control_comparisons, control_md

    level = {"none": 0.0, "noise": 2.0, "rnd": 2.0, "rfig": 4.0}
    for bonus, mu in level.items():
        rng = np.random.default_rng(int(mu))   # RND's scores are the control's: no gain over it
        for s in range(16):
            write_run(tmp_path, "synth", "mountaincar", bonus, s, STEPS, np.full(T, mu + rng.normal(0, 0.5)))
    coll = collect(tmp_path, "synth")
    p = panels_of(coll, ["mountaincar"])
    d = control_comparisons(p, ["rnd", "rfig"], "noise", "none")
    assert d[("mountaincar", "noise", "none")].point > 0.95 and d[("mountaincar", "rnd", "none")].point > 0.95
    lo, hi = d[("mountaincar", "rnd", "noise")].interval()
    assert lo < 0.5 < hi                                   # no gain over the control
    assert d[("mountaincar", "rfig", "noise")].point > 0.95 and ("all", "rfig", "noise") in d
    text = control_md(p, degenerate={("mountaincar", "rnd"): ("blind to visits",)})
    assert "| Noise > PPO | RND > PPO / > Noise | RFIG > PPO / > Noise |" in text
    assert text.split("\n\n")[0].count("(degenerate)") == 1 and "**mean over panels**" in text


def test_a_cell_the_grid_cannot_measure_is_judged_on_the_audit_and_says_so():
    from campaign.claims.signal import CellSignal
    from campaign.repro.baselines import AUDIT_NOTE, with_audit

    def cell(env, method, verdict, runs=8, variant="base"):
        return CellSignal(env, method, runs, 0.0, 1.0, -0.5, (-0.6, -0.4), verdict, bonus=method.split("/")[0],
                          variant=variant)

    old = "bonus.bin_penalty=10"
    grid = [cell("acrobot", "rnd", "not measured", 0), cell("acrobot", "vime", "ok"),
            cell("breakout", "rnd", "not measured", 0), cell("acrobot", "hashexplo", "not measured", 0),
            cell("acrobot", f"hashexplo/{old}", "not measured", 0, variant=old)]
    # in the audit the old-default runs are the bonus's only variant, so they carry the bonus's own key
    audit = [cell("acrobot", "rnd", "degenerate"), cell("acrobot", "vime", "degenerate"),
             cell("acrobot", "hashexplo", "degenerate", variant=old)]
    out = {(c.env, c.method): c for c in with_audit(grid, audit)}
    assert out[("acrobot", "rnd")].verdict == "degenerate" and out[("acrobot", "rnd")].notes == (AUDIT_NOTE,)
    assert out[("acrobot", "vime")].verdict == "ok" and not out[("acrobot", "vime")].notes   # the grid's own first
    assert out[("breakout", "rnd")].verdict == "not measured"
    # the audit's runs at the old values judge the grid's old variant, never the fixed bonus
    assert out[("acrobot", "hashexplo")].verdict == "not measured"
    filled = out[("acrobot", f"hashexplo/{old}")]
    assert filled.verdict == "degenerate" and filled.method == f"hashexplo/{old}" and filled.notes == (AUDIT_NOTE,)


def test_where_the_fixed_baselines_have_runs_is_counted_from_the_data(tmp_path):
    """The sentence the README's block and the report show: the most common seed count as a number of
    panels, every other count with its panels named, a panel without runs as 'none yet'."""
    from campaign.repro.baselines import fixed_runs_md
    from campaign.repro.fixes import FIXES

    envs = ["mountaincar", "acrobot", "pointmaze_umaze", "pointmaze_medium"]
    for env, n in (("mountaincar", 4), ("acrobot", 4), ("pointmaze_umaze", 4), ("pointmaze_medium", 2)):
        for s in range(n):
            write_run(tmp_path, "synth", env, "vime", s, STEPS, np.linspace(0, 1, T))
    for s in range(3):
        write_run(tmp_path, "synth", "mountaincar", "hashexplo", s, STEPS, np.linspace(0, 1, T))
    write_run(tmp_path, "synth", "acrobot", "none", 0, STEPS, np.linspace(0, 1, T))
    before = collect(tmp_path, "synth")
    # data whose old runs were never filed apart: its base runs may be the old ones, so nothing is said
    assert fixed_runs_md(before, envs, before) == ""
    for bonus, old in (("vime", "bonus.init_sigma=0.5,bonus.kl_ratio_len=0"), ("hashexplo", "bonus.bin_penalty=10")):
        fix = next(f for f in FIXES if f.bonus == bonus)
        write_run(tmp_path, "synth", "acrobot", bonus, 0, STEPS, np.linspace(0, 1, T), variant=old,
                  overrides=dict(fix.old_defaults))
    every = collect(tmp_path, "synth", variants=None)
    main = collect(tmp_path, "synth", variants=["base"])
    text = fixed_runs_md(main, envs, every)
    assert "VIME: 4 seeds on 3 of 4 panels; 2 seeds on PointMaze-Medium." in text
    assert "#Explo: none yet on 3 of 4 panels; 3 seeds on MountainCar." in text
    full = fixed_runs_md(main, envs[:3], every, fixes=FIXES[:1])
    assert "VIME: 4 seeds on all 3 panels.*" in full and "#Explo" not in full
    assert fixed_runs_md(main, envs, every, fixes=()) == ""


def test_the_degenerate_cells_at_the_defaults_are_named_with_where_each_bonus_says_why(cells, tmp_path):
    """Every degenerate cell by bonus, its causes in short, the bonus's page where it has one; the
    noise control's cells (blind, as it must be) are not named."""
    from campaign.claims.signal import degenerate
    from campaign.repro.baselines import degenerate_md

    coll, by = cells
    flagged = degenerate(list(by.values()))
    assert ("mountaincar", "noise") in flagged           # the control is blind there, as it must be
    (tmp_path / "constant.md").write_text("why it is constant")
    text = degenerate_md(flagged, coll, docs=tmp_path)
    assert ("constant on Breakout (at its clip; constant within a batch), MountainCar (at its clip; constant within "
            "a batch; blind to visits); why: [docs/bonuses/constant.md](../../bonuses/constant.md)") in text
    assert "saturated on Breakout (at its clip), MountainCar (at its clip)." in text
    assert "noise" not in text.lower().replace("no verdict", "")
    assert degenerate_md({}, coll) == "*No bonus is degenerate at its defaults on any panel.*"
    assert degenerate_md({}, coll, measured=False) == ""   # runs without the statistics: nothing to say


def test_which_runs_carry_the_statistics_is_counted_seed_by_seed_with_the_audit_s_reruns(tmp_path):
    """A run carries the statistics itself or through the audit's rerun of the same panel, variant and
    seed; a seed with neither is named, and a rerun of a seed the grid lacks counts for nothing."""
    from campaign.repro.baselines import signal_coverage, signal_coverage_md

    stats = columns(1 / 4096, 1.5, -0.6)
    for env in ("mountaincar", "acrobot"):
        for s in range(4):
            write_run(tmp_path, "grid", env, "rfig", s, STEPS, np.linspace(0, 1, T))       # made before the statistics
            write_run(tmp_path, "grid", env, "vime", s, STEPS, np.linspace(0, 1, T), extra=stats)
            write_run(tmp_path, "grid", env, "none", s, STEPS, np.linspace(0, 1, T))
    for s in (0, 1, 2, 3, 9):   # the audit: every rfig seed of MountainCar (and one the grid lacks), Acrobot's 0-1
        write_run(tmp_path, "signal", "mountaincar", "rfig", s, STEPS, np.linspace(0, 1, T), extra=stats)
    for s in (0, 1):
        write_run(tmp_path, "signal", "acrobot", "rfig", s, STEPS, np.linspace(0, 1, T), extra=stats)
    main, audit = collect(tmp_path, "grid"), collect(tmp_path, "signal")
    by = {c.method: c for c in signal_coverage(main, audit, list(main.envs))}
    assert set(by) == {"rfig", "vime"}                                         # PPO has no reward to check
    assert (by["vime"].runs, by["vime"].own, by["vime"].audited, by["vime"].missing) == (8, 8, 0, {})
    assert (by["rfig"].runs, by["rfig"].own, by["rfig"].audited) == (8, 0, 6)
    assert by["rfig"].missing == {"acrobot": [2, 3]}
    text = signal_coverage_md(list(by.values()), main)
    assert "14 of 16" in text and "RFIG 6 of 8 (6 through the audit's rerun)" in text
    assert "VIME 8 of 8 (8 their own)" in text and "Without them: RFIG seeds 2-3 on Acrobot.*" in text
    none = signal_coverage(main, None, list(main.envs))
    assert "RFIG seeds 0-3 on all 2 panels" in signal_coverage_md(none, main)
    full = signal_coverage(main, audit, ["mountaincar"])
    assert signal_coverage_md(full, main).endswith("Every run carries them.*")


def test_the_runs_at_a_fixed_baseline_s_old_defaults_are_counted_apart(tmp_path):
    """The runs kept at a fixed baseline's old defaults are not in the count of the defaults' runs;
    one more sentence counts them (their own statistics, the audit's reruns of the same variant) and
    PPO's runs, which have no bonus; data that files no old runs apart says nothing."""
    from campaign.repro.baselines import old_defaults_coverage_md
    from campaign.repro.fixes import FIXES

    stats = columns(1 / 4096, 1.5, -0.6)
    envs = ["mountaincar", "acrobot"]
    fixes = {f.bonus: f for f in FIXES}
    for env in envs:
        for s in range(3):
            write_run(tmp_path, "grid", env, "vime", s, STEPS, np.linspace(0, 1, T), extra=stats)
            write_run(tmp_path, "grid", env, "none", s, STEPS, np.linspace(0, 1, T))
    assert old_defaults_coverage_md(collect(tmp_path, "grid"), None, envs) == ""
    for env in envs:
        for s in range(3):
            for bonus in ("vime", "hashexplo"):
                old = fixes[bonus].old_defaults
                write_run(tmp_path, "grid", env, bonus, s, STEPS, np.linspace(0, 1, T), overrides=dict(old))
    old = dict(fixes["hashexplo"].old_defaults)
    for s in (0, 1, 7):   # the audit reruns #Explo's old runs of seeds 0-1 on MountainCar (and a seed the grid lacks)
        write_run(tmp_path, "signal", "mountaincar", "hashexplo", s, STEPS, np.linspace(0, 1, T), extra=stats,
                  overrides=old)
    every, audit = collect(tmp_path, "grid"), collect(tmp_path, "signal")
    text = old_defaults_coverage_md(every, audit, envs)
    assert "VIME (init_sigma=0.5, kl_ratio_len=0) 0 of 6;" in text
    assert "#Explo (bin_penalty=10) 2 of 6 (2 through the audit's rerun)." in text
    assert "PPO's 6 runs have no bonus to measure" in text and "VIME 6" not in text
    assert "2 of 6" not in old_defaults_coverage_md(every, None, envs)


def test_the_degenerate_method_under_test_is_named_as_judged_not_as_left_out(tmp_path):
    """Rule 6 removes a degenerate baseline from the comparisons, never RFIG: the sentence says which."""
    from analysis_fixtures import STEPS, T, write_run

    from analysis import collect
    from campaign.repro.baselines import degenerate_md

    for bonus in ("rfig", "rnd", "none"):
        write_run(tmp_path, "paper32", "mountaincar", bonus, 0, STEPS, np.linspace(-200, -100, T))
    coll = collect(tmp_path, "paper32")
    flagged = {("mountaincar", "rfig"): ("no better than a distance score",), ("mountaincar", "rnd"): ("constant",)}
    text = degenerate_md(flagged, coll, docs=tmp_path)
    assert text == ("*Degenerate at the defaults, so no verdict compares against them (rule 6): RND on MountainCar "
                    "(constant).* *Degenerate at the defaults and judged as it runs, the method the claims are about "
                    "(rule 6): RFIG on MountainCar (no better than a distance score).*")


def test_novelty_in_the_input_space_judges_a_panel_without_a_grid(tmp_path):
    """Runs that record the input-space novelty are judged on it where visits cannot be (MinAtar):
    noise, blind there to visits by default, is now found blind to novelty; a bonus no better than
    the distance score is degenerate where that comparison is a cause (here, with it a cause on every
    panel; the rule in force makes it one only where its known answers hold, not on MinAtar, where it
    is a note); one that beats it passes, its numbers in the table."""
    from campaign.claims.signal import NOVELTY, NOVELTY_REFERENCE, NOVELTY_RULE_2026_12_04

    levels = {"noise": (0.0, 0.5), "distancelike": (0.53, 0.55), "informative": (0.8, 0.5)}
    for bonus, (nov, ref) in levels.items():
        for s in range(N):
            rng = np.random.default_rng(s)
            extra = {**columns(1 / 4096, 1.0, None, seed=s), NOVELTY: nov + rng.normal(0, 0.03, T),
                     NOVELTY_REFERENCE: ref + rng.normal(0, 0.03, T)}
            write_run(tmp_path, "synth", "minatar_breakout", bonus, s, STEPS, np.linspace(0, 1, T), extra=extra)
    coll = collect(tmp_path, "synth")
    in_force = {coll.bonus_of(c.method): c for c in signal_cells(coll)}
    assert in_force["distancelike"].verdict == "ok" and not in_force["distancelike"].causes
    assert any(n.endswith("reported, not a cause") for n in in_force["distancelike"].notes)
    by = {coll.bonus_of(c.method): c for c in signal_cells(coll, NOVELTY_RULE_2026_12_04)}
    assert by["noise"].verdict == "degenerate" and by["noise"].causes[0].startswith("blind to novelty")
    assert in_force["noise"].verdict == "degenerate" and in_force["noise"].causes == by["noise"].causes
    assert by["distancelike"].verdict == "degenerate"
    assert by["distancelike"].causes[0].startswith("no better than a distance score in its input space")
    assert by["informative"].verdict == "ok" and by["informative"].novelty == pytest.approx(0.8, abs=0.02)
    mean, lo, _ = by["informative"].novelty_difference
    assert mean == pytest.approx(0.3, abs=0.02) and lo > RULE.novelty_margin
    text = signal_md(coll, list(by.values()), lambda e: e)
    assert "novelty ρ +0.80, the distance score's +0.50" in text and "blind to novelty" in text
    # the 2026-11-28 rule judged no novelty: every one of them, noise too, passed there
    from campaign.claims.signal import OLD_RULE
    assert [c.verdict for c in signal_cells(coll, OLD_RULE)] == ["ok"] * 3
