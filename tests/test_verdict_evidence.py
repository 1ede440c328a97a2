"""Rules 10-12 of the rule book (campaign/claims/verdicts.py), each against a computation of its own:
the exact permutation test of P(X > Y) and the exact odds-ratio test against explicit enumeration and
scipy, a verdict DeLong decides held back where the exact test disagrees, each panel's own value beside
a pooled verdict against a plain numpy computation, and the verdicts on the held-out seeds from a
hand-made collection whose late seeds say the opposite of its early ones."""

from __future__ import annotations

import itertools
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
from analysis.collect import final_scores
from campaign.claims import verdicts as V
from campaign.claims.claim_rows import Claim
from campaign.claims.claims import claims_table, comparisons_table
from campaign.claims.confirm import confirm_odds, confirm_poi
from campaign.claims.exact import exact_odds_ratio, permutation_poi, u2_distribution
from campaign.claims.held_out import held_out_seeds, on_held_out, seeds_only, seeds_text
from campaign.claims.panel_effects import departing, effects_text, poi_effects, qualified
from campaign.claims.rule_history import RULE_HISTORY

REPS = 400
PAPER = ("mountaincar", "acrobot", "minatar_breakout")
FIVE = ("none", "rnd", "vime", "hashexplo", "rfig")


def _poi(x, y) -> float:
    """P(X > Y) + P(X = Y) / 2 by a loop over every pair."""
    return sum((a > b) + 0.5 * (a == b) for a in x for b in y) / (len(x) * len(y))


def _relabellings(panels):
    """Every relabelling of each panel's pooled runs (X's positions), the panels' choices combined:
    the mean over the panels of P(X > Y) for each."""
    per = []
    for x, y in panels:
        z = np.concatenate([x, y])
        per.append([_poi(z[list(c)], np.delete(z, list(c))) for c in itertools.combinations(range(len(z)), len(x))])
    return np.array([np.mean(c) for c in itertools.product(*per)])


# --------------------------------------------------------------------------- rule 12's exact tests


def test_the_exact_permutation_distribution_is_every_relabelling_counted_ties_included():
    x, y = np.array([1.0, 2.0, 2.0, 5.0]), np.array([2.0, 3.0, 0.5, 2.0, 4.0])
    u2, dist = u2_distribution(x, y)
    assert u2 == pytest.approx(2 * len(x) * len(y) * _poi(x, y))
    every = _relabellings([(x, y)])
    by_value = np.zeros(len(dist))
    for value in every:
        by_value[int(round(value * 2 * len(x) * len(y)))] += 1 / len(every)
    np.testing.assert_allclose(dist, by_value, atol=1e-12)
    test = permutation_poi({"a": x}, {"a": y})
    assert test.exact and test.statistic == pytest.approx(_poi(x, y))
    assert test.p_greater == pytest.approx(np.mean(every >= _poi(x, y) - 1e-12))
    assert test.p_less == pytest.approx(np.mean(every <= _poi(x, y) + 1e-12))


def test_the_exact_permutation_test_is_scipys_exact_test_of_the_same_statistic():
    rng = np.random.default_rng(3)
    x, y = np.round(rng.normal(0.6, 1, 7), 1), np.round(rng.normal(0, 1, 6), 1)  # rounded: ties
    test = permutation_poi({"a": x}, {"a": y})
    for alternative, side in (("greater", 1), ("less", -1)):
        ref = scipy.stats.permutation_test((x, y), lambda a, b, axis=-1: V.poi_rows(a, b), vectorized=True,
                                           permutation_type="independent", n_resamples=np.inf,
                                           alternative=alternative)
        assert test.p(side) == pytest.approx(ref.pvalue, abs=1e-12)


def test_a_mean_over_panels_is_relabelled_within_each_panel_exactly_or_by_draws_where_sizes_differ():
    rng = np.random.default_rng(4)
    same = [(rng.normal(0.5, 1, 3), rng.normal(0, 1, 3)), (rng.normal(0.5, 1, 3), rng.normal(0, 1, 3))]
    every = _relabellings(same)
    observed = np.mean([_poi(x, y) for x, y in same])
    test = permutation_poi({"a": same[0][0], "b": same[1][0]}, {"a": same[0][1], "b": same[1][1]})
    assert test.exact and test.p_greater == pytest.approx(np.mean(every >= observed - 1e-12))
    assert test.p_less == pytest.approx(np.mean(every <= observed + 1e-12))
    mixed = [(rng.normal(0.8, 1, 3), rng.normal(0, 1, 4)), (rng.normal(0.8, 1, 4), rng.normal(0, 1, 4))]
    every = _relabellings(mixed)
    observed = np.mean([_poi(x, y) for x, y in mixed])
    drawn = permutation_poi({"a": mixed[0][0], "b": mixed[1][0]}, {"a": mixed[0][1], "b": mixed[1][1]}, 100_000)
    assert not drawn.exact and drawn.draws == 100_000
    exact = np.mean(every >= observed - 1e-12)
    assert abs(drawn.p_greater - exact) < 4 * drawn.se(1) + 1e-4
    assert drawn.p_greater == permutation_poi({"a": mixed[0][0], "b": mixed[1][0]},
                                              {"a": mixed[0][1], "b": mixed[1][1]}, 100_000).p_greater  # fixed seed


def test_the_exact_odds_ratio_test_is_fishers_on_one_table_and_the_enumerated_sum_on_two():
    table = (28, 4, 23, 9)
    test = exact_odds_ratio([table])
    a, b, c, d = table
    assert test.p_greater == pytest.approx(scipy.stats.fisher_exact([[a, b], [c, d]], alternative="greater")[1])
    assert test.p_less == pytest.approx(scipy.stats.fisher_exact([[a, b], [c, d]], alternative="less")[1])
    tables = [(5, 3, 2, 6), (4, 4, 1, 7)]
    law = []  # each table's a given its margins, hypergeometric; the tables independent
    for a, b, c, d in tables:
        values = range(max(0, a + c - (c + d)), min(a + c, a + b) + 1)
        law.append([(k, scipy.stats.hypergeom(a + b + c + d, a + b, a + c).pmf(k)) for k in values])
    observed = sum(t[0] for t in tables)
    joint = [(k1 + k2, p1 * p2) for (k1, p1), (k2, p2) in itertools.product(*law)]
    test = exact_odds_ratio(tables)
    assert test.p_greater == pytest.approx(sum(p for k, p in joint if k >= observed))
    assert test.p_less == pytest.approx(sum(p for k, p in joint if k <= observed))
    # a table where every run solves (or none) changes nothing
    assert exact_odds_ratio([*tables, (8, 0, 8, 0)]).p_greater == pytest.approx(test.p_greater)


def test_a_delong_verdict_the_exact_test_does_not_reach_is_undecided_and_says_why():
    # four runs each, X's all below Y's: DeLong's variance is 0, its interval [0, 0]; the exact test's p is
    # 1 / C(8, 4) = 1/70 = 0.0143: below 0.025 (one comparison), above 0.025 / 4 (Bonferroni over four)
    x, y = {"a": np.array([1.0, 2.0, 3.0, 4.0])}, {"a": np.array([5.0, 6.0, 7.0, 8.0])}
    d = V.poi_over_panels(x, y)
    assert d.interval() == (0.0, 0.0)
    alone = confirm_poi(V.judge_dist(d, 0.5), x, y)
    assert alone.kind == V.CONTRADICTED and "p = 0.0143" in alone.second and "clears" in alone.second
    family = confirm_poi(V.judge_dist(d, 0.5, comparisons=4, label="P(X > Y)"), x, y, comparisons=4)
    assert V.judge_dist(d, 0.5, comparisons=4).kind == V.CONTRADICTED  # DeLong alone would contradict
    assert family.kind == V.UNDECIDED and family.toward == -1 and "does not clear" in family.second
    assert "undecided by rule 12" in family.text and "estimate against the claim" in family.text
    # a claim of several comparisons carries the held-back one's reason and second test
    other = confirm_poi(V.judge_dist(V.poi_over_panels(y, x), 0.5, comparisons=4), y, x, comparisons=4)
    overall = V.judge_all([family, other])
    assert overall.kind == V.UNDECIDED and overall.why == family.why and overall.second == family.second
    # the mirror, X's above Y's, is held back the same way on the claim's side
    up = confirm_poi(V.judge_dist(V.poi_over_panels(y, x), 0.5), y, x, comparisons=1)
    assert up.kind == V.SUPPORTED and "above 0.5" in up.second


def test_an_undecided_verdict_stays_undecided_whatever_its_second_test_says():
    rng = np.random.default_rng(5)
    x, y = {"a": rng.normal(0.3, 1, 12)}, {"a": rng.normal(0, 1, 12)}
    v = V.judge_dist(V.poi_over_panels(x, y), 0.5)
    assert v.kind == V.UNDECIDED
    w = confirm_poi(v, x, y)
    assert w.kind == V.UNDECIDED and w.resolve_at == v.resolve_at and w.second.startswith("exact permutation test")


def test_away_from_half_the_second_test_is_the_stratified_bootstrap():
    rng = np.random.default_rng(6)
    x = {e: rng.normal(1.0, 1, 16) for e in "abc"}
    y = {e: rng.normal(0.0, 1, 16) for e in "abc"}
    d = V.poi_over_panels(x, y)
    v = confirm_poi(V.judge_dist(d, 0.444), x, y, 0.444, reps=REPS)
    assert v.kind == V.SUPPORTED and v.second.startswith(f"stratified bootstrap ({REPS} resamples)")
    same = {e: rng.normal(0, 1, 40) for e in "abcdefgh"}
    other = {e: rng.normal(0, 1, 40) for e in "abcdefgh"}
    eq = V.judge_effect(V.poi_over_panels(same, other))
    assert eq.kind == V.SUPPORTED_EQUIVALENT  # DeLong's [0.458, 0.549] inside [0.444, 0.556]
    both = confirm_poi(eq, same, other, reps=4000)
    assert both.kind == V.SUPPORTED_EQUIVALENT and "inside [0.444, 0.556]: the same verdict" in both.second
    # at 400 resamples the bootstrap's upper end, 0.547, lies within 3 Monte-Carlo errors of the band's 0.556
    held = confirm_poi(eq, same, other, reps=REPS)
    assert held.kind == V.UNDECIDED and "inside the parity band, the bootstrap's does not" in held.why


def test_the_odds_ratio_needs_the_exact_conditional_test_too():
    v = V.Verdict(V.SUPPORTED, 8)
    assert confirm_odds(v, [(8, 0, 0, 8)]).kind == V.SUPPORTED  # p = 1 / C(16, 8)
    held = confirm_odds(v, [(3, 0, 0, 3)])  # p = 1 / C(6, 3) = 0.05
    assert held.kind == V.UNDECIDED and "p = 0.0500" in held.second and "undecided by rule 12" in held.text


# --------------------------------------------------------------------------- rule 10: each panel on its own


def test_each_panels_own_value_beside_a_pooled_one_is_a_plain_delong_computation():
    rng = np.random.default_rng(7)
    x = {"up": rng.normal(2, 1, 20), "down": rng.normal(-2, 1, 20), "flat": rng.normal(0, 1, 20)}
    y = {e: rng.normal(0, 1, 20) for e in x}
    effects = poi_effects(x, y, {e: e.title() for e in x}, 0.5, (0.444, 0.556))
    z = scipy.stats.norm.ppf(1 - 0.05 / 3 / 2)
    for e, eff in zip(x, effects):
        wins = np.array([[(a > b) + 0.5 * (a == b) for b in y[e]] for a in x[e]])
        se = math.sqrt(wins.mean(axis=1).var(ddof=1) / 20 + wins.mean(axis=0).var(ddof=1) / 20)
        assert eff.panel == e.title() and eff.point == pytest.approx(_poi(x[e], y[e]))
        assert (eff.lo, eff.hi) == pytest.approx((max(0, eff.point - 1.959964 * se), min(1, eff.point + 1.959964 * se)))
        assert (eff.b_lo, eff.b_hi) == pytest.approx((max(0, eff.point - z * se), min(1, eff.point + z * se)))
    assert [e.side for e in effects] == [1, -1, 0] and effects[0].beyond and effects[1].beyond
    # a supported pooled verdict does not speak for the panel below; a contradicted one for the panel above;
    # one of no effect for neither
    assert [e.panel for e in departing(effects, V.SUPPORTED)] == ["Down"]
    assert [e.panel for e in departing(effects, V.CONTRADICTED)] == ["Up"]
    assert [e.panel for e in departing(effects, V.SUPPORTED_EQUIVALENT)] == ["Up", "Down"]
    text = effects_text(effects, V.SUPPORTED_EQUIVALENT, 0.5)
    assert text.startswith("2 of 3 panels differ") and "**Up " in text and "**Down " in text and "**Flat" not in text
    assert "beyond d = 0.2" in text
    words = qualified("no effect larger than d = 0.2", effects, V.SUPPORTED_EQUIVALENT)
    assert words.endswith("as a mean over 3 panels; on their own, 2 of them differ (Up above, Down below)")
    assert qualified("supported", effects[:1], V.SUPPORTED) == "supported"


# --------------------------------------------------------------------------- rule 11: the held-out seeds


def _grid(root, seeds: int, late_flips: bool):
    """RFIG ahead of PPO on seeds 0-7 of three panels, and on the later seeds behind it (``late_flips``)
    or ahead as before; the three NN baselines between them."""
    rng = np.random.default_rng(9)
    for env in PAPER:
        for s in range(seeds):
            ahead = not (late_flips and s >= 8)
            for bonus, level in {"none": 10.0, "rnd": 11.0, "vime": 11.0, "hashexplo": 11.0,
                                 "rfig": 12.0 if ahead else 8.0}.items():
                last = level + rng.normal(0, 0.2)
                write_run(root, "repro", env, bonus, s, STEPS, np.linspace(last - 100, last, T))


def test_seeds_only_keeps_those_seeds_runs_and_leaves_the_collection_as_it_was(tmp_path):
    _grid(tmp_path, 12, late_flips=True)
    coll = collect(tmp_path, "repro")
    late = seeds_only(coll, range(8, 12))
    assert held_out_seeds(coll) == [8, 9, 10, 11] and seeds_text(held_out_seeds(coll)) == "8-11"
    for env, by_method in final_scores(late).items():
        for method, (seeds, values) in by_method.items():
            assert list(seeds) == [8, 9, 10, 11]
            full_seeds, full = final_scores(coll)[env][method]
            np.testing.assert_array_equal(values, full[np.isin(full_seeds, [8, 9, 10, 11])])
    assert sorted({c.seed for c in coll.curves()}) == list(range(12))
    assert {r.seed for r in late.runs} == {8, 9, 10, 11}


def test_every_verdict_is_given_again_by_the_same_rules_on_the_held_out_seeds(tmp_path):
    _grid(tmp_path, 12, late_flips=True)
    coll = collect(tmp_path, "repro")
    agg = compute_aggregates(coll, reps=REPS)
    timing = {"mountaincar": {b: np.full(4, 1.0) + 0.01 * np.arange(4) for b in ("rfig_exact", "rnd", "vime",
                                                                                 "hashexplo")}}
    claims = on_held_out(lambda c, late: claims_table(c, agg, PAPER, reps=REPS, timing=None if late else timing),
                         coll)
    by = {c.claim: c for c in claims}
    final = by["PPO+RFIG ... outperforming vanilla PPO (final score)"]
    assert final.held_out_kind == V.CONTRADICTED and final.held_out.startswith("contradicted")
    late = {c.claim: c for c in claims_table(seeds_only(coll, range(8, 12)), agg, PAPER, reps=REPS)}
    for c in claims:
        if c.claim in late and c.held_out:
            assert c.held_out == f"{late[c.claim].verdict} ({late[c.claim].value})"
    # the execution-time claim rests on no seeds (the build measures it on every seed only): no second verdict
    timed = by[next(k for k in by if k.startswith("no significant execution time"))]
    assert timed.kind == V.SUPPORTED and timed.held_out == ""
    rows = on_held_out(lambda c, _: comparisons_table(c, PAPER, reps=REPS), coll)
    assert all(r.held_out_kind for r in rows)
    # a grid of seeds 0-7 only has no held-out seeds: the claims as they were
    _grid(tmp_path / "eight", 8, late_flips=False)
    eight = collect(tmp_path / "eight", "repro")
    assert all(c.held_out == "" for c in on_held_out(lambda c, _: comparisons_table(c, PAPER, reps=REPS), eight))


def test_the_report_shows_each_claims_second_test_held_out_verdict_and_panels():
    from campaign.repro.build import _claims_md

    c = Claim("a claim", "measured so", "0.5 [0.4, 0.6]", "supported", "details", V.SUPPORTED, deciding="95% [..]",
              second="exact permutation test: p", panels="Panel A 0.6", held_out="undecided (0.5)")
    table = _claims_md([c], held="8-31")
    assert "Second test (rule 12)" in table and "Verdict on seeds 8-31 alone (rule 11)" in table
    assert "| exact permutation test: p | undecided (0.5) | Panel A 0.6 |" in table
    assert "Verdict on seeds" not in _claims_md([c])


# --------------------------------------------------------------------------- the rule book's locks


def test_rules_10_to_12_are_in_the_rule_book_with_their_constants_and_their_dated_entry():
    doc = V.__doc__
    assert "10. **Each panel beside a pooled verdict.**" in doc and "11. **Every verdict again on the seeds" in doc
    assert "12. **A second test where a normal approximation decides.**" in doc
    assert V.PERM_DRAWS == 100_000 and "``PERM_DRAWS`` (100,000)" in doc
    assert V.HELD_OUT_FROM == 8 and "``HELD_OUT_FROM`` (8)" in doc
    assert {"PERM_DRAWS", "HELD_OUT_FROM"} <= set(V.RULE_CONSTANTS)
    entry = next(c for c in RULE_HISTORY if c.constants.get("PERM_DRAWS"))
    assert entry.when == "2026-12-02T04:32Z" and "Rules 10-12" in entry.change
    assert "complete 32-seed grid" in entry.seen
