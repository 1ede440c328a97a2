"""The rule book (campaign/claims/verdicts.py) on synthetic scores whose answer is known: each rule gives
supported, contradicted, undecided or does-not-discriminate where it must, and a case next to each
threshold fails if the rule is loosened (a lower bound at the threshold is not "above" it, a Bonferroni
interval is not the 95% one, a saturated panel is not a win)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

try:
    from analysis_fixtures import STEPS, T, write_run
except ImportError:  # tests/ imported as a package
    from tests.analysis_fixtures import STEPS, T, write_run

from analysis import collect
from analysis.aggregate import compute_aggregates
from campaign.claims import pooled as P
from campaign.claims import verdicts as V
from campaign.claims.claims import beyond_paper_claims, claims_table, comparisons_table

REPS = 400
PAPER = ("mountaincar", "acrobot", "minatar_breakout", "sparse_halfcheetah", "pointmaze_umaze")


# --------------------------------------------------------------------------- rule 4 and rule 6


def test_a_verdict_needs_the_whole_interval_on_one_side_of_the_threshold():
    assert V.judge(0.7, 0.55, 0.85, 0.5, 8).kind == V.SUPPORTED
    assert V.judge(0.3, 0.15, 0.45, 0.5, 8).kind == V.CONTRADICTED
    # a bound on the threshold is not beyond it, on either side
    assert V.judge(0.7, 0.5, 0.85, 0.5, 8).kind == V.UNDECIDED
    assert V.judge(0.3, 0.15, 0.5, 0.5, 8).kind == V.UNDECIDED
    # the mirrored claim ("below the threshold") gives the mirrored verdicts
    assert V.judge(0.3, 0.15, 0.45, 0.5, 8, claim_above=False).kind == V.SUPPORTED
    assert V.judge(0.7, 0.55, 0.85, 0.5, 8, claim_above=False).kind == V.CONTRADICTED


# rule 4's 80% power: n ((z + z_0.8) (h / z) / e)^2 = n (h / e)^2 ((1.96 + 0.8416) / 1.96)^2
POWER_FACTOR = ((scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)) / scipy.stats.norm.ppf(0.975)) ** 2


def test_an_undecided_verdict_gives_its_direction_and_the_seeds_that_would_resolve_it():
    v = V.judge(0.6, 0.45, 0.75, 0.5, 8)
    assert (v.kind, v.toward) == (V.UNDECIDED, 1)
    assert POWER_FACTOR == pytest.approx(2.043, abs=1e-3)
    assert v.resolve_at == pytest.approx(8 * (0.15 / 0.1) ** 2 * POWER_FACTOR)  # 18 x 2.04 = 36.8
    assert v.text == ("undecided at n = 8 (estimate on the claim's side; an effect of this size would have 80% power "
                      "at about 37 seeds)")
    against = V.judge(0.45, 0.35, 0.52, 0.5, 8)
    assert against.toward == -1 and against.resolve_at == pytest.approx(8 * (0.07 / 0.05) ** 2 * POWER_FACTOR)
    flat = V.judge(0.505, 0.3, 0.7, 0.5, 32)
    assert flat.toward == 0 and flat.resolve_at is None and "no effect measured" in flat.text


def test_a_statistic_over_samples_of_different_sizes_says_so_and_bounds_its_seeds_from_below():
    rng = np.random.default_rng(3)
    # a grid still filling: one panel at 32 seeds per method, the other at 8
    samples = {("a", "x"): rng.normal(0.2, 1, 32), ("a", "y"): rng.normal(0, 1, 32),
               ("b", "x"): rng.normal(0.2, 1, 8), ("b", "y"): rng.normal(0, 1, 8)}
    d = V.stratified(samples, lambda s: np.mean([V.poi_rows(s[(p, "x")], s[(p, "y")]) for p in "ab"], axis=0),
                     reps=400)
    assert (d.n, d.n_max) == (8, 32)
    v = V.judge_dist(d, 0.5)
    assert v.kind == V.UNDECIDED and v.mixed
    assert v.text.startswith("undecided at n = 8 to 32 (") and v.text.endswith(" seeds or more)")
    # one size throughout reads as before
    same = V.judge(0.6, 0.45, 0.75, 0.5, 8, n_max=8)
    assert not same.mixed and same.text.startswith("undecided at n = 8 (") and same.text.endswith("37 seeds)")
    # a claim over panels spans the panels' seeds; a pooled odds ratio spans its tables'
    both = V.judge_all([V.Verdict(V.UNDECIDED, 8, 1, 20.0), V.Verdict(V.SUPPORTED, 24, n_max=32)])
    assert (both.n, both.n_max) == (8, 32) and both.text.startswith("undecided at n = 8 to 32 (")
    assert both.text.endswith("80% power at about 20 seeds or more)")
    odds = P.mantel_haenszel([(20, 12, 10, 22), (6, 2, 3, 5), (8, 0, 8, 0)])  # the last: no variation, dropped
    assert (odds.n, odds.n_max) == (8, 32)
    assert P.judge_odds_ratio(odds).n_max == 32


def test_a_claim_on_every_panel_holds_only_when_each_panel_holds_and_falls_with_one():
    s, c, u = V.Verdict(V.SUPPORTED, 8), V.Verdict(V.CONTRADICTED, 8), V.Verdict(V.UNDECIDED, 8, 1, 20.0)
    assert V.judge_all([s, s, s]).kind == V.SUPPORTED
    assert V.judge_all([s, s, u]).kind == V.UNDECIDED
    assert V.judge_all([s, u, c]).kind == V.CONTRADICTED
    assert V.judge_all([V.Verdict(V.NO_DISCRIMINATION)] * 2).kind == V.NO_DISCRIMINATION
    assert V.judge_all([V.Verdict(V.NO_DISCRIMINATION), s]).kind == V.SUPPORTED  # rule 3: left out, not a win


def test_the_against_side_of_a_family_uses_the_bonferroni_interval():
    rng = np.random.default_rng(0)
    # a bootstrap distribution whose 95% interval is just below 0.5 but whose 99.5% one is not
    d = V.Dist(0.40, rng.normal(0.40, 0.045, 20000), 8)
    assert d.interval(0.95)[1] < 0.5 < d.interval(1 - 0.05 / 10)[1]
    assert V.judge_dist(d, 0.5).kind == V.CONTRADICTED                    # one comparison
    assert V.judge_dist(d, 0.5, comparisons=10).kind == V.UNDECIDED       # one of ten panels


def test_equivalence_needs_the_interval_inside_the_band_and_is_contradicted_outside_it():
    rng = np.random.default_rng(1)
    inside = V.Dist(1.0, rng.normal(1.0, 0.03, 5000), 5)
    outside = V.Dist(1.8, rng.normal(1.8, 0.05, 5000), 5)
    straddles = V.Dist(1.2, rng.normal(1.2, 0.1, 5000), 5)
    faster = V.Dist(0.5, rng.normal(0.5, 0.05, 5000), 5)
    assert V.judge_within(inside, V.TIME_BAND).kind == V.SUPPORTED
    assert V.judge_within(outside, V.TIME_BAND).kind == V.CONTRADICTED
    assert V.judge_within(faster, V.TIME_BAND).kind == V.CONTRADICTED
    v = V.judge_within(straddles, V.TIME_BAND)
    assert v.kind == V.UNDECIDED and v.toward == 1 and v.resolve_at > 5


# --------------------------------------------------------------------------- rule 3


def test_a_panel_with_every_method_at_one_bound_does_not_discriminate():
    ones = np.ones(8)
    assert V.saturated({"none": ones, "rfig": ones, "rnd": ones})
    one_off = ones.copy()
    one_off[0] = 0.0
    assert V.saturated({"none": np.ones(10), "rfig": np.r_[np.ones(9), 0.0]})      # 90% of each: saturated
    assert not V.saturated({"none": ones, "rfig": one_off})                         # 7 of 8 is below 90%
    assert not V.saturated({"none": np.zeros(8), "rfig": ones})                     # two bounds: it discriminates
    rng = np.random.default_rng(2)
    walker = {m: rng.normal(1.0, 0.4, 8) for m in ("none", "rfig", "vime")}         # all near 1, not at one value
    assert not V.saturated(walker)


# --------------------------------------------------------------------------- statistics against independent ones


def test_probability_of_improvement_is_mann_whitney_u_with_ties_and_iqm_is_trim_mean():
    rng = np.random.default_rng(3)
    x, y = np.round(rng.normal(1, 1, 9), 1), np.round(rng.normal(0.5, 1, 7), 1)  # rounding makes ties
    u = scipy.stats.mannwhitneyu(x, y).statistic
    assert V.poi_rows(x[None], y[None])[0] == pytest.approx(u / (9 * 7))
    for n in (4, 7, 8, 32):
        z = rng.normal(size=(3, n))
        assert V.iqm_rows(z) == pytest.approx(scipy.stats.trim_mean(z, 0.25, axis=1))


def _mh_by_hand(tables):
    """Mantel-Haenszel and the Robins-Breslow-Greenland variance, one stratum at a time in float64."""
    num = den = pr = ps_qr = qs = 0.0
    for a, b, c, d in tables:
        n = a + b + c + d
        if a + c == 0 or b + d == 0:
            continue
        if min(a, b, c, d) == 0:
            a, b, c, d, n = a + 0.5, b + 0.5, c + 0.5, d + 0.5, n + 2.0
        r, s = a * d / n, b * c / n
        p, q = (a + d) / n, (b + c) / n
        num += r
        den += s
        pr += p * r
        ps_qr += p * s + q * r
        qs += q * s
    var = pr / (2 * num * num) + ps_qr / (2 * num * den) + qs / (2 * den * den)
    return num / den, math.sqrt(var)


def test_the_pooled_odds_ratio_matches_a_hand_computation_and_drops_panels_without_variation():
    tables = [(7, 1, 3, 5), (6, 2, 4, 4), (8, 0, 5, 3), (8, 0, 8, 0), (0, 8, 0, 8)]
    odds = P.mantel_haenszel(tables)
    ratio, se = _mh_by_hand(tables)
    assert odds.strata == 3 and odds.point == pytest.approx(ratio)
    assert math.log(odds.hi) - math.log(odds.point) == pytest.approx(1.959963984540054 * se)
    assert P.judge_odds_ratio(odds).kind == V.SUPPORTED
    assert P.judge_odds_ratio(P.mantel_haenszel([(c, d, a, b) for a, b, c, d in tables[:3]])).kind == V.CONTRADICTED
    assert P.judge_odds_ratio(P.mantel_haenszel([(5, 3, 5, 3), (4, 4, 3, 5)])).kind == V.UNDECIDED
    assert P.judge_odds_ratio(P.mantel_haenszel([(8, 0, 8, 0), (0, 8, 0, 8)])).kind == V.NO_DISCRIMINATION
    # one panel's 4 of 8 against 1 of 8 is not enough alone; the same on four panels is
    one = P.mantel_haenszel([(4, 4, 1, 7)])
    assert P.judge_odds_ratio(one).kind == V.UNDECIDED
    assert P.judge_odds_ratio(P.mantel_haenszel([(4, 4, 1, 7)] * 4)).kind == V.SUPPORTED


def test_the_bootstrap_is_stratified_and_its_interval_covers_a_known_difference():
    rng = np.random.default_rng(4)
    hits = 0
    for trial in range(40):
        x, y = rng.normal(0.3, 1, 32), rng.normal(0.0, 1, 32)
        d = V.stratified({("x",): x, ("y",): y}, lambda s: s[("x",)].mean(-1) - s[("y",)].mean(-1), 500, trial)
        assert d.point == pytest.approx(x.mean() - y.mean()) and d.n == 32
        lo, hi = d.interval()
        hits += lo <= 0.3 <= hi
    assert hits >= 34  # about 95% of 40


# --------------------------------------------------------------------------- the beta claim


def test_a_ranking_that_reverses_with_beta_contradicts_and_one_that_holds_supports():
    s, c, u = V.Verdict(V.SUPPORTED, 8), V.Verdict(V.CONTRADICTED, 8), V.Verdict(V.UNDECIDED, 8)
    assert P.ranking_verdict({("a", "b"): [s, s, s], ("a", "c"): [c, c, c]}).kind == V.SUPPORTED
    assert P.ranking_verdict({("a", "b"): [s, u, c]}).kind == V.CONTRADICTED
    assert P.ranking_verdict({("a", "b"): [s, s, u]}).kind == V.UNDECIDED
    assert P.ranking_verdict({("a", "b"): [u, u, u]}).kind == V.UNDECIDED  # nothing resolved: no evidence


# --------------------------------------------------------------------------- claims on synthetic collections


def _panel(root, env, levels: dict, noise: float, seeds: int = 8, seed: int = 0, experiment="repro"):
    """Runs whose last window is ``levels[bonus]`` + N(0, noise), after a ramp from far below."""
    rng = np.random.default_rng(seed)
    for bonus, level in levels.items():
        for s in range(seeds):
            last = level + rng.normal(0, noise) if noise else level
            r = np.linspace(level - 100, last, T)
            write_run(root, experiment, env, bonus, s, STEPS, r)


def _claims(root, paper=PAPER, sens=None):
    coll = collect(root, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    out = {c.claim.split(" (")[0] if c.claim.startswith("PPO+RFIG") else c.claim: c
           for c in claims_table(coll, agg, paper, reps=REPS, sens=sens)}
    full = {c.claim: c for c in claims_table(coll, agg, paper, reps=REPS, sens=sens)}
    return out, full, coll


FIVE = ("none", "rnd", "vime", "hashexplo", "rfig")


def test_rfig_clearly_above_ppo_everywhere_is_supported_and_clearly_below_is_contradicted(tmp_path):
    for i, env in enumerate(("mountaincar", "acrobot", "minatar_breakout")):
        _panel(tmp_path / "up", env, {"none": 10.0, "rnd": 11.0, "vime": 11.0, "hashexplo": 11.0, "rfig": 12.0}, 0.2,
               seed=i)
        _panel(tmp_path / "down", env, {"none": 12.0, "rnd": 11.0, "vime": 11.0, "hashexplo": 11.0, "rfig": 10.0},
               0.2, seed=i)
    _, up, _ = _claims(tmp_path / "up")
    _, down, _ = _claims(tmp_path / "down")
    assert up["PPO+RFIG ... outperforming vanilla PPO (final score)"].kind == V.SUPPORTED
    assert up["PPO+RFIG ... outperforming vanilla PPO (area under the curve)"].kind == V.SUPPORTED
    assert down["PPO+RFIG ... outperforming vanilla PPO (final score)"].kind == V.CONTRADICTED
    assert up["RFIG competitively matches or exceeds RND's performance"].kind == V.SUPPORTED


def test_equal_methods_are_undecided_and_say_how_far_from_resolved(tmp_path):
    rng = np.random.default_rng(5)
    runs = [-150 + rng.normal(0, 5, T) for _ in range(8)]
    for env in ("mountaincar", "acrobot"):
        for bonus in FIVE:  # the same eight runs for every method
            for s in range(8):
                write_run(tmp_path, "repro", env, bonus, s, STEPS, runs[s])
    _, claims, _ = _claims(tmp_path)
    c = claims["PPO+RFIG ... outperforming vanilla PPO (final score)"]
    assert c.kind == V.UNDECIDED and c.verdict.startswith("undecided at n = 8 (no effect measured")


def test_saturated_panels_and_envs_beyond_the_paper_do_not_decide_a_claim_of_the_paper(tmp_path):
    # PointMaze-UMaze: every run of every method at success 1.0; DeepSea (beyond the paper): RFIG far ahead
    for bonus in FIVE:
        for s in range(8):
            write_run(tmp_path, "repro", "pointmaze_umaze", bonus, s, STEPS, np.ones(T))
    _panel(tmp_path, "deepsea", {"none": 0.0, "rnd": 0.0, "vime": 0.0, "hashexplo": 0.9, "rfig": 0.99}, 0.005)
    _panel(tmp_path, "mountaincar", {m: -150.0 for m in FIVE}, 5.0, seed=7)
    _, claims, coll = _claims(tmp_path)
    c = claims["PPO+RFIG ... outperforming vanilla PPO (final score)"]
    assert c.kind == V.UNDECIDED and "over 1 of the paper's panels" in c.measure
    assert "Left out, not discriminating (rule 3): PointMaze-UMaze" in c.detail and "DeepSea" not in c.detail
    beyond = {x.claim: x for x in beyond_paper_claims(coll, PAPER, reps=REPS)}
    assert beyond["PPO+RFIG ... outperforming vanilla PPO (final score)"].kind == V.SUPPORTED
    assert all(x.scope == "beyond" for x in beyond.values())
    # with UMaze alone the claim has nothing to judge
    only = tmp_path / "only"
    for bonus in FIVE:
        for s in range(8):
            write_run(only, "repro", "pointmaze_umaze", bonus, s, STEPS, np.ones(T))
    _, claims, _ = _claims(only)
    assert claims["PPO+RFIG ... outperforming vanilla PPO (final score)"].kind == V.NO_DISCRIMINATION


def test_a_third_methods_runs_never_change_which_panels_decide_a_comparison_of_two(tmp_path):
    """Rules 3 and 3b are judged on the runs of the methods compared: RFIG and PPO both at success 1.0
    on UMaze leave UMaze out of RFIG against PPO whether or not a baseline that fails there (a rerun,
    the control) is in the data, and a far-off baseline's runs do not widen rule 3b's scale."""
    words = "PPO+RFIG ... outperforming vanilla PPO (final score)"
    verdicts = {}
    for name, vime_level in (("without", None), ("with", 0.0)):
        root = tmp_path / name
        for bonus in ("none", "rfig", "rnd", "hashexplo"):
            for s in range(8):
                write_run(root, "repro", "pointmaze_umaze", bonus, s, STEPS, np.ones(T))
        if vime_level is not None:
            for s in range(8):
                write_run(root, "repro", "pointmaze_umaze", "vime", s, STEPS, np.full(T, vime_level))
        # MountainCar: RFIG ahead of PPO; Acrobot: RFIG and PPO close, their runs spread over ~2 points,
        # which is a near tie only on the scale of a baseline 900 points below them (rule 3b)
        far = {"vime": -1000.0} if vime_level is not None else {}
        _panel(root, "mountaincar", {"none": -110.0, "rfig": -100.0, "rnd": -105.0, "hashexplo": -105.0} | far, 2.0,
               seed=3)
        _panel(root, "acrobot", {"none": -100.0, "rfig": -100.0, "rnd": -100.0, "hashexplo": -100.0} | far, 0.5,
               seed=4)
        verdicts[name] = _claims(root)[1][words]
    assert "over 2 of the paper's panels" in verdicts["without"].measure
    assert verdicts["with"].measure == verdicts["without"].measure
    assert verdicts["with"].value == verdicts["without"].value and verdicts["with"].kind == verdicts["without"].kind
    assert verdicts["with"].detail.endswith("Left out, not discriminating (rule 3): PointMaze-UMaze.")


def test_competitive_is_non_inferiority_to_the_best_baseline_within_the_margin(tmp_path):
    near = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "hashexplo": 80.0, "rfig": 99.0}
    far = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "hashexplo": 80.0, "rfig": 40.0}
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(tmp_path / "near", env, near, 1.0, seed=i)
        _panel(tmp_path / "far", env, near if env == "acrobot" else far, 1.0, seed=i)
    words = "RFIG is competitive with NN-based methods across all environments"
    assert _claims(tmp_path / "near")[1][words].kind == V.SUPPORTED
    assert _claims(tmp_path / "far")[1][words].kind == V.CONTRADICTED
    # noisy and a little below: neither shown nor refuted
    _panel(tmp_path / "noisy", "mountaincar", {**near, "rfig": 95.0}, 25.0, seed=3)
    assert _claims(tmp_path / "noisy")[1][words].kind == V.UNDECIDED


def test_the_controls_runs_never_set_the_scale_of_a_claim(tmp_path):
    """Rule 2's scale is the five methods' worst and best windows: a control far outside them (here its
    windows reach 2000 where the others end by 100) would shrink RFIG's shortfall to 3% of the range
    and turn a contradiction into support."""
    far = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "hashexplo": 80.0, "rfig": 40.0}
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(tmp_path / "without", env, far, 1.0, seed=i)
        _panel(tmp_path / "with", env, {**far, "noise": 2000.0}, 1.0, seed=i)
    words = "RFIG is competitive with NN-based methods across all environments"
    without, with_control = _claims(tmp_path / "without")[1][words], _claims(tmp_path / "with")[1][words]
    assert without.kind == V.CONTRADICTED
    assert with_control.kind == V.CONTRADICTED and with_control.deciding == without.deciding
    failures = "RFIG maintains stable performance without catastrophic failures"
    assert _claims(tmp_path / "with")[1][failures].detail == _claims(tmp_path / "without")[1][failures].detail
    from analysis.aggregate import fit_normalisation
    from analysis.collect import final_scores

    coll = collect(tmp_path / "with", "repro")
    with pytest.raises(ValueError, match="methods: rfgi not in the collection; valid: "):
        fit_normalisation(coll, final_scores(coll), methods=["rfig", "rfgi"])


def test_a_claim_on_every_panel_is_not_supported_while_a_baseline_has_no_runs_on_one(tmp_path):
    near = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "hashexplo": 80.0, "rfig": 99.0}
    _panel(tmp_path, "mountaincar", near, 1.0, seed=1)
    _panel(tmp_path, "acrobot", {m: v for m, v in near.items() if m != "vime"}, 1.0, seed=2)  # VIME not yet run
    c = _claims(tmp_path)[1]["RFIG is competitive with NN-based methods across all environments"]
    assert c.kind == V.UNDECIDED and "1 of the paper's panels wait for a working baseline's runs" in c.verdict
    assert c.value == "shown on 2 of 2 panels" and "Acrobot (without VIME)." in c.detail  # judged on the rest
    # a working baseline that beats RFIG by more than the margin contradicts the claim on that panel already
    _panel(tmp_path / "below", "mountaincar", near, 1.0, seed=1)
    _panel(tmp_path / "below", "acrobot", {"none": 0.0, "rnd": 100.0, "hashexplo": 80.0, "rfig": 40.0}, 1.0, seed=2)
    below = _claims(tmp_path / "below")[1]["RFIG is competitive with NN-based methods across all environments"]
    assert below.kind == V.CONTRADICTED and "Acrobot (without VIME)" in below.detail


def test_a_baseline_with_no_runs_on_any_panel_is_named_and_no_claim_is_supported_without_it(tmp_path):
    """A baseline whose defaults were fixed has no runs anywhere until its reruns land: the claims that
    need it must neither drop it from their definition nor hold without it."""
    near = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "rfig": 99.0}          # no #Explo at all
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(tmp_path / "grid", env, near, 1.0, seed=i)
    _panel(tmp_path / "peak", "minatar_breakout", {"none": 10.0, "rnd": 11.0, "vime": 11.0, "rfig": 14.0}, 0.3)
    c = _claims(tmp_path / "grid")[1]["RFIG is competitive with NN-based methods across all environments"]
    assert c.kind == V.UNDECIDED and "best IQM of RND, VIME, #Explo" in c.measure and "without #Explo" in c.measure
    assert "No runs yet on any panel of: #Explo." in c.detail
    coll = collect(tmp_path / "grid", "repro")
    rows = {r.claim: r for r in comparisons_table(coll, PAPER, reps=REPS)}
    assert rows["RFIG against #Explo"].kind == V.NOT_MEASURED and rows["RFIG against RND"].kind != V.NOT_MEASURED
    peak = _claims(tmp_path / "peak")[1]["RFIG achieves peak performance in ... Breakout"]
    assert peak.kind == V.UNDECIDED and "No runs there yet of: #Explo." in peak.detail


def test_no_verdict_uses_a_bonus_the_signal_check_finds_degenerate(tmp_path):
    near = {"none": 0.0, "rnd": 100.0, "vime": 90.0, "hashexplo": 80.0, "rfig": 99.0}
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(tmp_path, env, near, 1.0, seed=i)
    coll = collect(tmp_path, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    broken = {("mountaincar", "hashexplo"): ("blind to visits",)}
    words = "RFIG is competitive with NN-based methods across all environments"
    fine = {c.claim: c for c in claims_table(coll, agg, PAPER, reps=REPS)}
    flagged = {c.claim: c for c in claims_table(coll, agg, PAPER, reps=REPS, degenerate=broken)}
    assert fine[words].kind == V.SUPPORTED and fine[words].value == "shown on 2 of 2 panels"
    # MountainCar is judged against RND and VIME only, and the claim waits for a working #Explo there
    assert flagged[words].kind == V.UNDECIDED and flagged[words].value == "shown on 2 of 2 panels"
    assert "MountainCar (without #Explo degenerate)." in flagged[words].detail
    # a degenerate #Explo far above RFIG decides nothing: the panel is judged on the working baselines
    high = tmp_path / "high"
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(high, env, {**near, "hashexplo": 200.0} if env == "mountaincar" else near, 1.0, seed=i)
    high_coll = collect(high, "repro")
    high_agg = compute_aggregates(high_coll, reps=REPS)
    as_is = {c.claim: c for c in claims_table(high_coll, high_agg, PAPER, reps=REPS)}[words]
    judged = {c.claim: c for c in claims_table(high_coll, high_agg, PAPER, reps=REPS, degenerate=broken)}[words]
    assert as_is.kind == V.CONTRADICTED and judged.kind == V.UNDECIDED and judged.value == "shown on 2 of 2 panels"
    rows = {c.claim: c for c in comparisons_table(coll, PAPER, reps=REPS, degenerate=broken)}
    assert rows["RFIG against #Explo"].measure.endswith("over 1 panels")
    assert rows["RFIG against RND"].measure.endswith("over 2 panels")


def test_the_method_a_claim_is_about_is_judged_where_the_signal_check_finds_it_degenerate(tmp_path):
    """Rule 6 removes a compared method that does not work, never the method under test: a degenerate
    RFIG far below PPO on MountainCar stays in every comparison of RFIG and is named, so a failing
    method cannot drop the panels it fails on."""
    scores = {"none": 100.0, "rnd": 100.0, "vime": 100.0, "hashexplo": 100.0, "rfig": 100.0}
    _panel(tmp_path, "mountaincar", {**scores, "rfig": 0.0}, 1.0, seed=0)
    _panel(tmp_path, "acrobot", scores, 1.0, seed=1)
    coll = collect(tmp_path, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    broken = {("mountaincar", "rfig"): ("blind to visits",)}
    rows = {c.claim: c for c in comparisons_table(coll, PAPER, reps=REPS, degenerate=broken)}
    assert rows["RFIG against RND"].measure.endswith("over 2 panels")
    assert "Judged although RFIG is degenerate there by the signal check" in rows["RFIG against RND"].detail
    claims = {c.claim: c for c in claims_table(coll, agg, PAPER, reps=REPS, degenerate=broken)}
    final = claims["PPO+RFIG ... outperforming vanilla PPO (final score)"]
    assert final.kind != V.SUPPORTED and "MountainCar" in final.detail
    competitive = claims["RFIG is competitive with NN-based methods across all environments"]
    assert competitive.kind == V.CONTRADICTED and "Judged although RFIG is degenerate" in competitive.detail


def test_a_catastrophic_failure_is_below_half_of_ppo_not_any_interval_below_it(tmp_path):
    mild = {"none": 100.0, "rnd": 100.0, "vime": 100.0, "hashexplo": 100.0, "rfig": 79.0}   # 0.79x PPO
    collapse = {**mild, "rfig": -150.0}
    for i, env in enumerate(("mountaincar", "acrobot")):
        _panel(tmp_path / "mild", env, mild, 1.0, seed=i)
        _panel(tmp_path / "collapse", env, mild if env == "acrobot" else collapse, 1.0, seed=i)
    words = "RFIG maintains stable performance without catastrophic failures"
    assert _claims(tmp_path / "mild")[1][words].kind == V.SUPPORTED
    assert _claims(tmp_path / "collapse")[1][words].kind == V.CONTRADICTED


def test_peak_performance_means_beating_each_other_method_on_that_panel(tmp_path):
    top = {"none": 10.0, "rnd": 11.0, "vime": 11.0, "hashexplo": 11.0, "rfig": 14.0}
    _panel(tmp_path / "top", "minatar_breakout", top, 0.3)
    _panel(tmp_path / "second", "minatar_breakout", {**top, "vime": 16.0}, 0.3)
    _panel(tmp_path / "tie", "minatar_breakout", {**top, "vime": 14.0}, 0.3)
    words = "RFIG achieves peak performance in ... Breakout"
    assert _claims(tmp_path / "top")[1][words].kind == V.SUPPORTED
    assert _claims(tmp_path / "second")[1][words].kind == V.CONTRADICTED
    assert _claims(tmp_path / "tie")[1][words].kind == V.UNDECIDED
    assert _claims(tmp_path / "top")[1]["VIME excels in ... sparse-ant"].kind == V.NOT_MEASURED


def test_the_pooled_success_claim_counts_seeds_across_panels_not_panels(tmp_path):
    # MountainCar and Acrobot: RFIG solves 6 of 8, PPO 2 of 8 on each (returns above / below the limits)
    for env, limit in (("mountaincar", -200.0), ("acrobot", -500.0)):
        for bonus, solved in (("none", 2), ("rfig", 6), ("rnd", 4), ("vime", 4), ("hashexplo", 4)):
            for s in range(8):
                last = limit + (30.0 if s < solved else -0.0)
                write_run(tmp_path, "repro", env, bonus, s, STEPS, np.linspace(limit, last, T))
    _, claims, _ = _claims(tmp_path)
    c = claims["PPO+RFIG ... outperforming vanilla PPO (seeds solved)"]
    assert c.kind == V.SUPPORTED and "over 2 panels where solving varies" in c.value
    assert "MountainCar: RFIG 6/8, PPO 2/8" in c.detail


def test_the_execution_time_claim_needs_the_controlled_benchmark_and_its_band(tmp_path):
    _panel(tmp_path, "mountaincar", {m: -150.0 for m in FIVE}, 5.0)
    coll = collect(tmp_path, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    words = "no significant execution time differences compared to NN approaches, even with full matrix inversion"

    def verdict(per_round):  # RFIG's wall time over the baselines' (all 10 s) in each paired round
        timing = {"mountaincar": {b: np.full(len(per_round), 10.0) for b in ("rnd", "vime", "hashexplo")}}
        timing["mountaincar"]["rfig_exact"] = 10.0 * np.asarray(per_round)
        return next(c for c in claims_table(coll, agg, PAPER, reps=REPS, timing=timing) if c.claim == words).kind

    assert next(c for c in claims_table(coll, agg, PAPER, reps=REPS) if c.claim == words).kind == V.NOT_MEASURED
    assert verdict([1.0, 1.02, 0.98, 1.01, 0.99, 1.0]) == V.SUPPORTED
    assert verdict([1.8, 1.82, 1.78, 1.81, 1.79, 1.8]) == V.CONTRADICTED
    assert verdict([1.0, 1.4, 1.05, 1.35, 1.1, 1.3]) == V.UNDECIDED   # mean 1.2, rounds on both sides of 1.25


def test_rfig_against_each_baseline_is_a_measurement_in_its_own_table(tmp_path):
    _panel(tmp_path, "mountaincar", {"none": 0.0, "rnd": 2.0, "vime": 25.0, "hashexplo": 10.0, "rfig": 10.0}, 3.0)
    rows = {c.claim: c for c in comparisons_table(collect(tmp_path, "repro"), PAPER, reps=REPS)}
    assert rows["RFIG against RND"].kind == V.SUPPORTED and rows["RFIG against VIME"].kind == V.CONTRADICTED
    assert rows["RFIG against #Explo"].kind == V.UNDECIDED
    # RFIG and #Explo: 9 of 10 runs of each at one milestone (within 5% of the two methods' range),
    # one run of each off it: a near tie decides nothing (rule 3b)
    tie = tmp_path / "tie"
    _panel(tie, "mountaincar", {"none": 0.0, "vime": 20.0}, 0.3, seeds=10)
    for off, bonus in enumerate(("rfig", "hashexplo")):
        for s in range(10):
            last = 0.0 if s == off else 10.0 + 0.01 * s
            write_run(tie, "repro", "mountaincar", bonus, s, STEPS, np.linspace(last - 100, last, T))
    rows = {c.claim: c for c in comparisons_table(collect(tie, "repro"), PAPER, reps=REPS)}
    assert "RFIG against #Explo" not in rows and rows["RFIG against VIME"].kind == V.CONTRADICTED
    # the same runs of RFIG and #Explo spread over their whole range are not a near tie
    spread = tmp_path / "spread"
    _panel(spread, "mountaincar", {"none": 0.0, "vime": 20.0}, 0.3, seeds=10)
    for off, bonus in enumerate(("rfig", "hashexplo")):
        for s in range(10):
            last = 10.0 + s - off
            write_run(spread, "repro", "mountaincar", bonus, s, STEPS, np.linspace(last - 100, last, T))
    rows = {c.claim: c for c in comparisons_table(collect(spread, "repro"), PAPER, reps=REPS)}
    assert rows["RFIG against #Explo"].kind == V.UNDECIDED


def test_every_rule_constant_is_the_one_the_rule_book_states():
    doc = V.__doc__
    assert "``SATURATION_SHARE`` (90%)" in doc and V.SATURATION_SHARE == 0.9
    assert "``MARGIN`` = 0.10" in doc and V.MARGIN == 0.10
    assert "``POI_MARGIN`` = 0.056" in doc and V.POI_MARGIN == pytest.approx(
        scipy.stats.norm.cdf(0.2 / math.sqrt(2)) - 0.5, abs=5e-4)
    assert "``TIME_BAND`` = [0.8, 1.25]" in doc and V.TIME_BAND == (0.8, 1.25)


def _sensitivity(root, levels_by_beta: dict, umaze: bool = True, seeds: int = 8):
    """Sensitivity runs: per bonus and beta, MountainCar ends at levels_by_beta[beta][bonus] (+ noise);
    PointMaze-UMaze at success 1.0 for every run (saturated)."""
    rng = np.random.default_rng(8)
    common = {"agent.total_timesteps": 500000}
    for beta, levels in levels_by_beta.items():
        for bonus, level in levels.items():
            ov = dict(common) if beta == 0.5 else {**common, "bonus.beta": beta}
            for s in range(seeds):
                write_run(root, "sensitivity", "mountaincar", bonus, s, STEPS,
                          np.linspace(-200, level + rng.normal(0, 1), T), overrides=ov, defaults={"bonus.beta": 0.5})
                if umaze:
                    write_run(root, "sensitivity", "pointmaze_umaze", bonus, s, STEPS, np.ones(T), overrides=ov,
                              defaults={"bonus.beta": 0.5})


def _beta_verdict(root):
    _panel(root, "mountaincar", {m: -150.0 for m in FIVE}, 5.0)
    coll = collect(root, "repro")
    sens = collect(root, "sensitivity")
    claims = claims_table(coll, compute_aggregates(coll, reps=REPS), PAPER, reps=REPS, sens=sens)
    return next(c for c in claims if c.claim.startswith("beta does not affect"))


def test_the_beta_claim_holds_when_no_pair_of_bonuses_changes_order_and_falls_when_one_reverses(tmp_path):
    steady = {b: {"rnd": -110.0, "rfig": -150.0, "vime": -190.0} for b in (0.25, 0.5, 1.0)}
    _sensitivity(tmp_path / "steady", steady)
    c = _beta_verdict(tmp_path / "steady")
    # UMaze (every run at 1.0) is left out: it would pull every P towards 0.5
    assert c.kind == V.SUPPORTED and "Left out, not discriminating (rule 3): PointMaze-UMaze" in c.detail
    flipped = {**steady, 1.0: {"rnd": -190.0, "rfig": -150.0, "vime": -110.0}}
    _sensitivity(tmp_path / "flip", flipped)
    assert _beta_verdict(tmp_path / "flip").kind == V.CONTRADICTED
    close = {b: {"rnd": -150.0, "rfig": -150.5, "vime": -149.5} for b in (0.25, 0.5, 1.0)}
    _sensitivity(tmp_path / "close", close, umaze=False)
    assert _beta_verdict(tmp_path / "close").kind == V.UNDECIDED


def test_the_beta_claim_needs_every_comparison_unchanged_not_only_unreversed(tmp_path):
    """An equivalence test: RND stays ahead of RFIG at every beta, but at beta 1 by less (P about 0.92
    against 1.0 at 8 seeds, about 0.75 at 32). No reversal; at 8 seeds the change's interval is not
    inside the small-effect band (undecided, where the direction alone supported it), at 32 its
    Bonferroni interval lies below the band (contradicted)."""
    steady = {b: {"rnd": -110.0, "rfig": -150.0, "vime": -190.0} for b in (0.25, 0.5)}
    weaker = {**steady, 1.0: {"rnd": -148.0, "rfig": -150.0, "vime": -190.0}}
    _sensitivity(tmp_path / "weaker", weaker, umaze=False)
    c = _beta_verdict(tmp_path / "weaker")
    assert c.kind == V.UNDECIDED and "0 reversed" in c.value and "5 of 6 changes" in c.value
    assert "change from 0.5" in c.detail and "stratified bootstrap" in c.second
    much = {**steady, 1.0: {"rnd": -149.0, "rfig": -150.0, "vime": -190.0}}
    _sensitivity(tmp_path / "much", much, umaze=False, seeds=32)
    c = _beta_verdict(tmp_path / "much")
    assert c.kind == V.CONTRADICTED and "0 reversed" in c.value
    assert "outside [-0.056, 0.056]" in c.deciding and "Bonferroni" in c.deciding


def test_the_change_of_a_probability_of_improvement_against_a_plain_loop():
    """P_1(X > Y) - P_2(X > Y) over two panels, and its DeLong standard error, counted pair by pair in
    float64 loops; the stratified bootstrap's interval close to DeLong's."""
    rng = np.random.default_rng(3)
    panels = ("a", "b")
    runs = {(k, p): rng.normal(loc, 1.0, n) for k, loc, n in (("x", 0.5, 12), ("y", 0.0, 10), ("xr", 1.0, 12),
                                                               ("yr", 0.0, 9)) for p in panels}
    runs[("y", "a")][:3] = runs[("x", "a")][:3]  # ties count a half

    def loop(x, y):
        wins = [[1.0 if a > b else 0.5 if a == b else 0.0 for b in y] for a in x]
        p = sum(map(sum, wins)) / (len(x) * len(y))
        v10 = [sum(r) / len(y) for r in wins]
        v01 = [sum(wins[i][j] for i in range(len(x))) / len(x) for j in range(len(y))]

        def var(v):
            m = sum(v) / len(v)
            return sum((e - m) ** 2 for e in v) / (len(v) - 1)
        return p, var(v10) / len(x) + var(v01) / len(y)

    each = {(k, p): loop(runs[(k, p)], runs[(k.replace("x", "y"), p)]) for k in ("x", "xr") for p in panels}
    point = sum(each[("x", p)][0] - each[("xr", p)][0] for p in panels) / 2
    se = math.sqrt(sum(each[(k, p)][1] for k in ("x", "xr") for p in panels)) / 2
    side = {k: {p: runs[(k, p)] for p in panels} for k in ("x", "y", "xr", "yr")}
    d = V.poi_change(side["x"], side["y"], side["xr"], side["yr"])
    assert d.point == pytest.approx(point, abs=1e-12) and d.se == pytest.approx(se, rel=1e-9)
    assert d.interval() == pytest.approx((point - V.Z95 * se, point + V.Z95 * se), abs=1e-9)
    boot = V.poi_change_boot(side["x"], side["y"], side["xr"], side["yr"], reps=4000, seed=1)
    assert boot.point == pytest.approx(point, abs=1e-12)
    assert np.allclose(boot.interval(), d.interval(), atol=0.04)


# --------------------------------------------------------------------------- the rules added 2026-11-28


def test_a_constant_cannot_change_without_a_dated_entry_in_the_rules_history():
    from campaign.claims.rule_history import RULE_HISTORY, history_md

    now = {k: getattr(V, k) for k in V.RULE_CONSTANTS}
    assert dict(RULE_HISTORY[-1].constants) == now, "a rule constant changed: add a RuleChange to rule_history.py"
    assert [c.when for c in RULE_HISTORY] == sorted(c.when for c in RULE_HISTORY)
    assert all(c.when and c.commit and c.change and c.seen for c in RULE_HISTORY)
    assert "| 2026-11-27T15:07Z | 2d6df37 |" in history_md() and "not supported" in history_md()
    assert "``NEAR_BAND`` (5%)" in V.__doc__ and "``POWER`` (80%)" in V.__doc__ and "``REPS`` (20,000)" in V.__doc__


def test_an_interval_end_within_its_monte_carlo_error_of_the_threshold_decides_nothing():
    rng = np.random.default_rng(4)
    samples = rng.normal(0.6, 0.05, 20000)
    lo = float(np.percentile(samples, 2.5))
    se = V.Dist(0.6, samples, 32).mc_error()[0]
    assert 0 < se < 0.005
    # the threshold a hair below the interval's lower end: without the guard, supported
    edge = V.judge_dist(V.Dist(0.6, samples, 32), lo - 0.5 * se)
    assert edge.kind == V.UNDECIDED and edge.deciding is not None and edge.deciding.se[0] == pytest.approx(se)
    assert V.judge_dist(V.Dist(0.6, samples, 32), lo - 5 * se).kind == V.SUPPORTED
    assert "95% [" in edge.deciding.text and "(MC)" in edge.deciding.text


def test_the_deciding_interval_is_the_bonferroni_one_when_it_decides_against():
    rng = np.random.default_rng(0)
    d = V.Dist(0.30, rng.normal(0.30, 0.04, 20000), 32)
    v = V.judge_dist(d, 0.5, comparisons=4, label="P(RFIG > PPO)")
    assert v.kind == V.CONTRADICTED and v.deciding.comparisons == 4 and v.deciding.level == pytest.approx(0.9875)
    assert v.deciding.text.startswith("P(RFIG > PPO): Bonferroni 98.75% (4 comparisons) [")
    # every-panel claims: against the claim, the comparison nearest to contradicting decides
    near, far = V.Verdict(V.UNDECIDED, 8, -1, 12.0), V.Verdict(V.UNDECIDED, 8, -1, 80.0)
    assert V.judge_all([near, far, V.Verdict(V.SUPPORTED, 8)]).resolve_at == 12.0
    ahead = [V.Verdict(V.UNDECIDED, 8, 1, 12.0), V.Verdict(V.UNDECIDED, 8, 1, 80.0)]
    assert V.judge_all(ahead).resolve_at == 80.0       # on the claim's side every one must clear: the slowest


def test_the_seeds_to_resolve_are_counted_at_the_level_that_would_decide():
    """Against the claim, one of m comparisons contradicts only at 1 - 0.05/m: the seeds that would
    resolve it are those at which an effect of this size clears the Bonferroni interval, more than at
    95%; on the claim's side every comparison must clear at 95%, so the family's size changes nothing."""
    rng = np.random.default_rng(4)
    samples = rng.normal(0.46, 0.03, 20000)
    against = V.Dist(0.46, samples, 32)
    lo, hi = against.interval(V.LEVEL)
    b_lo, b_hi = against.interval(1 - 0.05 / 4)
    z95, zb = scipy.stats.norm.ppf(0.975), scipy.stats.norm.ppf(1 - 0.05 / 8)
    alone, family = V.judge_dist(against, 0.5), V.judge_dist(against, 0.5, comparisons=4)
    assert alone.kind == family.kind == V.UNDECIDED and alone.toward == family.toward == -1
    power = scipy.stats.norm.ppf(0.8)
    assert alone.resolve_at == pytest.approx(32 * ((z95 + power) * ((hi - 0.46) / z95) / 0.04) ** 2)
    assert family.resolve_at == pytest.approx(32 * ((zb + power) * ((b_hi - 0.46) / zb) / 0.04) ** 2)
    assert family.resolve_at > 1.2 * alone.resolve_at
    ahead = V.Dist(0.54, rng.normal(0.54, 0.03, 20000), 32)
    assert V.judge_dist(ahead, 0.5, comparisons=4).resolve_at == pytest.approx(V.judge_dist(ahead, 0.5).resolve_at)


def test_no_effect_larger_than_a_small_one_is_said_when_the_interval_sits_inside_the_parity_band():
    rng = np.random.default_rng(2)
    tight = V.Dist(0.51, rng.normal(0.51, 0.015, 20000), 32)
    v = V.judge_effect(tight)
    assert v.kind == V.SUPPORTED_EQUIVALENT and v.text.startswith("no effect larger than d = 0.2")
    wide = V.Dist(0.51, rng.normal(0.51, 0.05, 20000), 32)
    assert V.judge_effect(wide).kind == V.UNDECIDED          # not inside 0.5 +- 0.056
    clear = V.Dist(0.7, rng.normal(0.7, 0.02, 20000), 32)
    assert V.judge_effect(clear).kind == V.SUPPORTED


def test_near_saturation_is_most_runs_of_each_method_within_a_twentieth_of_the_panels_range():
    rng = np.random.default_rng(5)
    # Sparse-Walker2d-like: most runs at one milestone, a few far above
    at_one = {m: np.r_[1.0 + rng.normal(0, 0.02, 29), [3.0, 4.0, 5.0]] for m in ("vime", "rfig")}
    assert V.near_saturated(at_one, span=5.0)
    spread = {"vime": at_one["vime"], "rfig": 1.0 + rng.normal(0, 1.0, 32)}
    assert not V.near_saturated(spread, span=5.0)
    assert not V.saturated(at_one)                         # rule 3 (exact ties) misses it


def test_resampling_the_panels_widens_the_pooled_interval_when_panels_disagree():
    rng = np.random.default_rng(6)
    x = {p: rng.normal(mu, 1, 16) for p, mu in zip("abcd", (1.5, -1.5, 1.5, -1.5))}
    y = {p: rng.normal(0, 1, 16) for p in "abcd"}
    fixed = V.poi_over_panels(x, y)
    pooled = V.poi_panels_resampled(x, y, 4000, 0)
    assert pooled.point == pytest.approx(fixed.point)
    assert np.diff(pooled.interval())[0] > 2 * np.diff(fixed.interval())[0]


def test_the_claims_do_not_change_with_the_bootstrap_seed(tmp_path):
    """Rebuilding with another bootstrap seed must not turn a verdict (rule 5's resamples and guard)."""
    rng = np.random.default_rng(11)
    for env in ("mountaincar", "acrobot", "minatar_breakout"):
        _panel(tmp_path, env, {"none": 0.0, "rnd": 0.3, "vime": 0.1, "hashexplo": 0.2, "rfig": 0.35}, 1.0,
               seeds=16, seed=int(rng.integers(1000)))
    coll = collect(tmp_path, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    first = [(c.claim, c.kind) for c in claims_table(coll, agg, PAPER, reps=V.REPS, seed=0)]
    second = [(c.claim, c.kind) for c in claims_table(coll, agg, PAPER, reps=V.REPS, seed=1)]
    assert first == second


def test_the_probability_of_improvement_and_its_delong_variance_match_a_plain_loop():
    rng = np.random.default_rng(9)
    x, y = np.round(rng.normal(0.3, 1, 13), 1), np.round(rng.normal(0, 1, 9), 1)   # rounded: ties happen
    point, var = V.poi_delong(x, y)
    u = scipy.stats.mannwhitneyu(x, y).statistic
    assert point == pytest.approx(u / (len(x) * len(y)))
    v10 = [sum((a > b) + 0.5 * (a == b) for b in y) / len(y) for a in x]
    v01 = [sum((a > b) + 0.5 * (a == b) for a in x) / len(x) for b in y]
    expected = np.var(v10, ddof=1) / len(x) + np.var(v01, ddof=1) / len(y)
    assert var == pytest.approx(expected)
    d = V.poi_over_panels({"a": x, "b": y[:5]}, {"a": y, "b": x[:7]})
    (pa, va), (pb, vb) = V.poi_delong(x, y), V.poi_delong(y[:5], x[:7])
    assert d.point == pytest.approx((pa + pb) / 2) and d.se == pytest.approx(math.sqrt(va + vb) / 2)
    assert d.interval() == pytest.approx((d.point - 1.959964 * d.se, d.point + 1.959964 * d.se), abs=1e-6)
    assert (d.n, d.n_max) == (5, 13) and d.mc_error() == (0.0, 0.0)
