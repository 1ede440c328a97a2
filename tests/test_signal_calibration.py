"""The signal check on known answers from the committed runs' visit maps
(campaign/claims/signal_calibration.py): a valid check rejects a distance score that learns nothing,
a constant and noise, and passes a count bonus, on every grid panel; the rule as fixed 2026-11-28
passes the distance score, the revised one does not. Then the new functions against independent
computations (numpy and scipy in float64), the revised rule's thresholds, and its constants locked
in the rule history."""

from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

try:
    from analysis_fixtures import STEPS, T, write_run
except ImportError:  # tests/ imported as a package
    from tests.analysis_fixtures import STEPS, T, write_run

from analysis import collect
from campaign.claims import constants as C
from campaign.claims import signal_calibration as cal
from campaign.claims.signal import (
    AT_MAX,
    CV,
    OLD_RULE,
    RANK,
    RULE,
    SignalRule,
    distance_comparison,
    judge,
    signal_cells,
)
from rfig_exp.agents.signal import cell_centres, distance_reference, distance_score

GRID_PANELS = ("acrobot", "mountaincar", "pointmaze_medium", "pointmaze_umaze", "sparse_ant", "sparse_halfcheetah",
               "sparse_hopper", "sparse_walker2d")


@pytest.fixture(scope="module")
def answers():
    """Seeds 0-2 of every bonus at its defaults (and PPO) on each grid panel: 18 maps a panel."""
    panels = cal.committed_maps(seeds=range(3))
    assert sorted(panels) == sorted(GRID_PANELS) and all(len(k) == 18 for k, _ in panels.values())
    return cal.calibrate(panels)


def test_the_revised_rule_rejects_a_distance_score_a_constant_and_noise_and_passes_a_count(answers):
    by = {(a.panel, a.bonus): a for a in answers}
    assert len(by) == 4 * len(GRID_PANELS)
    for panel in GRID_PANELS:
        for bonus in cal.KNOWN:
            a = by[(panel, bonus)]
            assert a.right(RULE), (panel, bonus, a.verdicts[RULE.fixed])
        distance = by[(panel, "distance")]
        if distance.verdicts[OLD_RULE.fixed][0] == "ok":   # below 0, so the revised rule's new cause rejects it
            assert distance.verdicts[RULE.fixed][1][0].startswith("no better than a distance score")
        assert by[(panel, "count")].rank == pytest.approx(-1.0)    # a function of the count alone
    assert cal.valid(answers, RULE)


def test_the_old_rule_passes_the_distance_score_so_it_is_not_a_valid_check(answers):
    """The distance score falls with visits: the 2026-11-28 rule, which compares with 0, calls it ok."""
    by = {(a.panel, a.bonus): a for a in answers}
    passed = [p for p in GRID_PANELS if by[(p, "distance")].verdicts[OLD_RULE.fixed][0] == "ok"]
    assert set(GRID_PANELS) - {"pointmaze_medium"} <= set(passed)   # the maze's score is weakest (-0.08 at 192 maps)
    assert all(by[(p, "distance")].rank < -0.4 for p in GRID_PANELS if p != "pointmaze_medium")
    assert not cal.valid(answers, OLD_RULE)
    # the old rule gets the three others right: its failure is the distance score alone
    assert all(a.right(OLD_RULE) for a in answers if a.bonus != "distance")


def test_the_table_shows_both_rules_on_every_panel(answers):
    text = cal.calibration_md(answers)
    old_fails = text.count("2026-11-28: **no**, 2026-12-02: yes")
    assert old_fails >= len(GRID_PANELS) - 1 and old_fails + text.count("2026-11-28: yes, 2026-12-02: yes") == 8
    assert "ok → **rejected** (no better than a distance score)" in text and "| sparse_hopper | 18 |" in text
    assert "ok under both" in text and "(blind to visits) under both" in text


# --------------------------------------------------------------------------- the new functions, independently

def _distance_f64(coords, visits):
    v = np.asarray(visits, np.float64)
    i, j = np.meshgrid(np.arange(v.shape[0]) + 0.5, np.arange(v.shape[1]) + 0.5, indexing="ij")
    w = v / v.sum()
    mu = np.array([(w * i).sum(), (w * j).sum()])
    sd = np.sqrt(np.array([(w * (i - mu[0]) ** 2).sum(), (w * (j - mu[1]) ** 2).sum()]))
    return np.sqrt((((np.asarray(coords, np.float64) - mu) / sd) ** 2).sum(axis=1))


@pytest.mark.parametrize("seed", range(3))
def test_distance_score_and_its_rank_correlation_equal_float64_computations(seed):
    rng = np.random.default_rng(seed)
    visits = rng.poisson(30 * np.exp(-((np.arange(12)[:, None] - 4) ** 2 + (np.arange(9)[None] - 5) ** 2) / 8), (12, 9))
    coords, counts = cal.draw(visits, rng, 1000)
    got = np.asarray(distance_score(jnp.asarray(coords), jnp.asarray(visits)))
    np.testing.assert_allclose(got, _distance_f64(coords, visits), rtol=1e-5, atol=1e-5)
    assert np.all(counts == visits.ravel()[(coords[:, 0].astype(int)) * 9 + coords[:, 1].astype(int)])
    # the reference of a batch of flat cells, against scipy's Spearman on float64 cell centres
    cells = rng.integers(0, visits.size, (8, 50))
    out = float(distance_reference(jnp.asarray(cells), jnp.asarray(visits.ravel()), visits.shape)["distance_rank_corr"])
    centres = np.stack([cells.ravel() // 9, cells.ravel() % 9], axis=1) + 0.5
    expected = stats.spearmanr(_distance_f64(centres, visits), visits.ravel()[cells.ravel()]).statistic
    assert out == pytest.approx(expected, abs=1e-5)
    np.testing.assert_array_equal(np.asarray(cell_centres(jnp.asarray([0, 10, 107]), (12, 9))),
                                  [[0.5, 0.5], [1.5, 1.5], [11.5, 8.5]])


def test_a_run_s_reference_is_scipy_s_spearman_on_its_own_draw():
    rng = np.random.default_rng(7)
    maps = [rng.poisson(rng.uniform(0, 20, (10, 6))) + 1 for _ in range(3)]
    keys = [("panel", "rfig", "base", s) for s in range(3)]
    got = cal.reference_ranks(keys, maps)
    for k, m, g in zip(keys, maps, got):
        coords, counts = cal.draw(m, cal._rng(k, "reference"))
        assert g == pytest.approx(stats.spearmanr(_distance_f64(coords, m), counts).statistic, abs=1e-5)
    assert cal.reference_ranks(keys, maps) == pytest.approx(got)        # fixed by the run's key


def test_draws_follow_the_counts():
    visits = np.array([[0, 1], [3, 0]])
    coords, counts = cal.draw(visits, np.random.default_rng(0), 40000)
    assert set(counts) == {1.0, 3.0} and np.mean(counts == 3.0) == pytest.approx(0.75, abs=0.01)
    assert np.all((coords[counts == 3.0, 0] >= 1) & (coords[counts == 3.0, 1] < 1))


def test_the_difference_from_the_reference_is_a_paired_t_interval():
    rank = np.array([-0.5, -0.6, -0.55, -0.7, np.nan])
    ref = np.array([-0.3, -0.35, -0.2, -0.4, -0.3])
    mean_ref, (d, lo, hi) = distance_comparison(rank, ref, 0.95)
    diff = (rank - ref)[:4]
    elo, ehi = stats.t.interval(0.95, 3, loc=diff.mean(), scale=stats.sem(diff))
    assert (d, lo, hi) == pytest.approx((diff.mean(), elo, ehi)) and mean_ref == pytest.approx(ref[:4].mean())
    assert distance_comparison(rank, None, 0.95) is None and distance_comparison(rank[:1], ref[:1], 0.95) is None


def test_the_revised_thresholds_are_the_rule_s_own():
    one = np.ones(6)
    rank = np.array([-0.60, -0.62, -0.58, -0.61, -0.59, -0.60])
    m = RULE.distance_margin
    # a difference whose interval ends just below -margin passes; one touching it does not
    wiggle = np.array([1, -1, 1, -1, 1, -1]) * 1e-3
    assert judge(one * 0, one, rank, reference=rank + m + 0.005 + wiggle)[0] == "ok"
    assert judge(one * 0, one, rank, reference=rank + m - 0.002 + wiggle)[0] == "degenerate"
    # the old rule: below 0 suffices
    assert judge(one * 0, one, rank, OLD_RULE, reference=rank + m - 0.002 + wiggle)[0] == "ok"
    verdict, _, notes, _ = judge(one * 0, one, rank)                               # no reference: said, not hidden
    assert verdict == "ok" and "no distance reference (no visit maps): compared with 0 only" in notes
    # at the batch maximum: named for what it is on a count bonus, same threshold
    assert judge(one * 0.51, one, None, count=True)[1][0].startswith("at its batch maximum (0.51 of transitions;")
    assert "first visit" in judge(one * 0.51, one, None, count=True)[1][0]
    assert judge(one * 0.51, one, None)[1][0].startswith("at its clip (0.51")
    assert judge(one * 0.2, one, None, count=True)[2][0] == "partly at its batch maximum (0.20)"


def test_real_runs_are_judged_against_their_own_maps(tmp_path):
    """Runs with visits.npy: each run's reference from its own map; a bonus well below it passes, one
    above it is no better than a distance score, the old rule passes both."""
    rng = np.random.default_rng(3)
    i, j = np.meshgrid(np.arange(20), np.arange(20), indexing="ij")
    blob = 200 * np.exp(-((i - 8) ** 2 + (j - 11) ** 2) / 30)
    for bonus, rank in (("rfig", -0.97), ("rnd", -0.3)):
        for s in range(6):
            extra = {AT_MAX: np.full(T, 1 / 4096), CV: np.full(T, 1.2), RANK: rank + rng.normal(0, 0.01, T),
                     "coverage": np.linspace(0.1, 0.5, T)}
            write_run(tmp_path, "synth", "mountaincar", bonus, s, STEPS, np.linspace(0, 1, T), extra=extra,
                      visits=rng.poisson(blob * rng.lognormal(0, 1.5, blob.shape)) + 1)
    coll = collect(tmp_path, "synth")
    refs = cal.references(coll)
    assert len(refs) == 12 and all(-0.9 < r < -0.1 for r in refs.values())
    by = {c.method: c for c in signal_cells(coll, references=refs)}
    assert by["rfig"].verdict == "ok" and by["rfig"].reference == pytest.approx(
        np.mean([refs[("mountaincar", "rfig", "base", s)] for s in range(6)]))
    assert by["rnd"].verdict == "degenerate" and by["rnd"].causes[0].startswith("no better than a distance score")
    assert by["rnd"].before == "ok" and all(c.verdict == "ok" for c in signal_cells(coll, OLD_RULE, refs))
    section = cal.calibration_section(coll)
    assert "| mountaincar | 12 |" in section and "2026-11-28: **no**, 2026-12-02: yes" in section


# --------------------------------------------------------------------------- the constants, locked

def test_the_signal_constants_cannot_change_without_a_dated_entry_in_the_rules_history():
    from campaign.claims.rule_history import RULE_HISTORY

    now = {k: getattr(C, k) for k in C.SIGNAL_CONSTANTS}
    assert dict(RULE_HISTORY[-1].signal_constants) == now, "a signal constant changed: add a RuleChange"
    assert (RULE.at_clip, RULE.partly_at_clip, RULE.constant_cv, RULE.level, RULE.distance_margin) == (
        C.SIGNAL_AT_MAX, C.SIGNAL_PARTLY_AT_MAX, C.SIGNAL_CONSTANT_CV, C.SIGNAL_LEVEL, C.SIGNAL_DISTANCE_MARGIN)
    assert RULE == SignalRule() and RULE.fixed == "2026-12-02"
    first = next(c for c in RULE_HISTORY if c.signal_constants)
    assert (first.when, first.commit) == ("2026-11-28T10:06Z", "6afc77c")
    old = dict(first.signal_constants)
    assert (OLD_RULE.at_clip, OLD_RULE.partly_at_clip, OLD_RULE.constant_cv, OLD_RULE.level) == (
        old["SIGNAL_AT_MAX"], old["SIGNAL_PARTLY_AT_MAX"], old["SIGNAL_CONSTANT_CV"], old["SIGNAL_LEVEL"])
    assert OLD_RULE.distance_margin is None and "SIGNAL_DISTANCE_MARGIN" not in old
    # every entry after the check's rule was fixed carries its constants; they change only at a dated entry
    later = RULE_HISTORY[RULE_HISTORY.index(first):]
    assert all(c.signal_constants for c in later)
    changed = [b for a, b in zip(later, later[1:]) if dict(a.signal_constants) != dict(b.signal_constants)]
    assert [c.when[:10] for c in changed] == ["2026-12-02", "2026-12-04", "2026-12-06"]
    assert "no better than a distance score" in changed[0].change and "SIGNAL_NOVELTY_MARGIN" in changed[1].change
    assert "SIGNAL_NOVELTY_DISTANCE_PANELS" in changed[2].change and "Acrobot" in changed[2].seen
    assert RULE.novelty_margin == C.SIGNAL_NOVELTY_MARGIN
    assert RULE.novelty_distance_panels == frozenset(C.SIGNAL_NOVELTY_DISTANCE_PANELS)
    assert "32-seed data" in changed[0].seen
    verdicts = next(c for c in RULE_HISTORY if "Rules 10-12" in c.change)
    assert verdicts.commit == "1d95b83"


def test_the_distance_cause_decides_only_where_the_grid_is_the_whole_state():
    """On a projected grid the same shortfall is a note; an env's options do not change which it is."""
    rank = np.array([-0.5, -0.52, -0.48, -0.51])
    ref = rank + 0.01  # no better than the distance score by the margin
    zero, one = np.zeros(4), np.ones(4)
    verdict, causes, _, _ = judge(zero, one, rank, reference=ref)
    assert verdict == "degenerate" and causes[0].startswith("no better than a distance score")
    verdict, causes, notes, _ = judge(zero, one, rank, reference=ref, projected=True)
    assert verdict == "ok" and not causes and "reported, not a cause" in notes[-1]
    from analysis.names import split_task
    from campaign.claims.signal import WHOLE_STATE_GRIDS
    assert split_task("deepsea[size=30]")[0] in WHOLE_STATE_GRIDS
    assert split_task("sparse_ant[backend=spring]")[0] not in WHOLE_STATE_GRIDS


# --------------------------------------------------------------------------- novelty's known answers on a real panel

NOVELTY_DATA = Path(__file__).resolve().parents[1] / "docs" / "results" / "novelty" / "data"


@pytest.fixture(scope="module")
def novelty_tree(tmp_path_factory):
    """The committed novelty runs (seeds 0-7, 1M steps; MountainCar first, then other panels) as a results tree."""
    from campaign.repro.data import rebuild_tree

    return rebuild_tree(NOVELTY_DATA, tmp_path_factory.mktemp("novelty"))


@pytest.fixture(scope="module")
def novelty_cells(novelty_tree):
    """The check of every committed novelty cell, under the rule and under the input-space parts as
    first fixed."""
    from campaign.claims.signal import NOVELTY_RULE_2026_12_03

    coll = collect(novelty_tree, "novelty")
    return {rule.novelty_margin: {c.method: c for c in signal_cells(coll, rule) if c.env == "mountaincar"}
            for rule in (RULE, NOVELTY_RULE_2026_12_03)}


GRID_COUNTS = ("hashexplo/bonus.hash=grid", "hashexplo/bonus.cell_width=0.1,bonus.hash=grid",
               "hashexplo/bonus.cell_width=0.5,bonus.hash=grid")


def test_novelty_s_known_answers_on_a_real_panel(novelty_cells):
    """A grid count of MountainCar's state (the known working count, at three cell widths) passes;
    noise, the static SimHash (which sees only a 2-D state's direction) and the learned #Explo are
    blind to novelty; under the margin of 0.05 first carried over from the grid the working count was
    rejected at every width, so that margin could not tell it from a distance score."""
    cells = novelty_cells[RULE.novelty_margin]
    for method in GRID_COUNTS:
        assert cells[method].verdict == "ok", (method, cells[method].causes)
        assert cells[method].novelty > 0.7 and cells[method].rank < -0.6
    for method in ("noise", "hashexplo/bonus.hash=static", "hashexplo"):
        assert cells[method].verdict == "degenerate"
        assert any(c.startswith("blind to novelty") for c in cells[method].causes), (method, cells[method].causes)
    first = novelty_cells[C.SIGNAL_DISTANCE_MARGIN]
    for method in GRID_COUNTS:
        assert first[method].verdict == "degenerate"
        assert first[method].causes[0].startswith("no better than a distance score in its input space")


def test_a_bonus_equal_to_the_distance_score_is_rejected_in_its_input_space():
    """The distance score as a bonus: its difference from its own reference is 0 on every run."""
    runs = np.array([0.71, 0.75, 0.80, 0.78])
    verdict, causes, _, _ = judge(np.zeros(4), np.ones(4), None, RULE, novelty=runs, novelty_reference=runs)
    assert verdict == "degenerate" and causes[0].startswith("no better than a distance score in its input space")


def _metrics_mean(tree: Path, folder: str, column: str) -> dict[int, float]:
    """Each run's mean over windows of ``column``, read from its metrics.csv with the csv module."""
    import csv

    out = {}
    for metrics in sorted((tree / "novelty" / "mountaincar").glob(f"{folder}/seed_*/metrics.csv")):
        with metrics.open() as f:
            values = [float(row[column]) for row in csv.DictReader(f) if row.get(column) not in (None, "", "nan")]
        out[int(metrics.parent.name.split("_")[1])] = float(np.mean(values))
    return out


def test_the_input_space_known_answers_table_on_a_real_panel(novelty_tree):
    """The report's table of the input-space part on known answers: the grid counts pass and the noise
    control and the distance score as a bonus are rejected under the rule in force, so it is a valid
    check on MountainCar, and the margin of 0.05 first fixed is not (it rejects the grid counts); a
    row's numbers are those of each run's metrics.csv, averaged and t-intervalled by hand."""
    from campaign.claims import novelty_calibration as nc
    from campaign.claims.signal import NOVELTY, NOVELTY_REFERENCE, NOVELTY_RULE_2026_12_03

    coll = collect(novelty_tree, "novelty")
    answers = [a for a in nc.novelty_answers(coll) if a.env == "mountaincar"]
    by = {a.method: a for a in answers}
    assert {by[m].role for m in GRID_COUNTS} == {nc.WORKING}
    assert by["noise"].role == nc.REJECTED and by[nc.DISTANCE_ROW].role == nc.REJECTED
    assert by["rfig"].role == nc.READING and by["hashexplo/bonus.hash=static"].role == nc.READING
    for a in answers:
        assert a.valid_under(RULE) and a.valid_under(nc.TESTED[0]), (a.method, a.verdicts)
    assert nc.valid(answers, RULE) and nc.valid(answers) and not nc.valid(answers, NOVELTY_RULE_2026_12_03)
    assert not nc.valid([a for a in answers if a.role != nc.REJECTED])  # a check needs both kinds
    assert by[nc.DISTANCE_ROW].runs == sum(a.runs for a in answers if a.method != nc.DISTANCE_ROW)

    folder = "hashexplo/" + next(p.parent.name for p in (novelty_tree / "novelty" / "mountaincar").glob(
        "hashexplo/*/variant.yaml") if "cell_width: 0.1" in p.read_text())
    nov, ref = _metrics_mean(novelty_tree, folder, NOVELTY), _metrics_mean(novelty_tree, folder, NOVELTY_REFERENCE)
    seeds = sorted(set(nov) & set(ref))
    assert len(seeds) == 8
    x, d = np.array([nov[s] for s in seeds]), np.array([nov[s] - ref[s] for s in seeds])
    half = lambda v: stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))  # noqa: E731
    row = by["hashexplo/bonus.cell_width=0.1,bonus.hash=grid"]
    assert row.novelty == pytest.approx(x.mean(), abs=1e-9)
    assert row.novelty_interval == pytest.approx((x.mean() - half(x), x.mean() + half(x)), abs=1e-9)
    assert row.difference == pytest.approx((d.mean(), d.mean() - half(d), d.mean() + half(d)), abs=1e-9)
    assert row.difference[1] > 0 > row.difference[1] - C.SIGNAL_DISTANCE_MARGIN

    md = nc.novelty_calibration_md(answers, coll.label)
    assert "mountaincar: margin +0: yes, margin +0.05: **no** (in force: a cause)" in md
    assert md.count("| must pass |") == 3 and md.count("| must be rejected |") == 2


def test_the_32_seed_report_reads_the_committed_novelty_runs():
    """The build finds the novelty runs where they are committed, under the experiment they were made in."""
    from campaign.repro.build import NOVELTY_FROM
    from campaign.repro.data import RUNS_JSON

    name, data = NOVELTY_FROM["paper32"]
    assert name == "novelty" and data.resolve() == NOVELTY_DATA.resolve() and (data / RUNS_JSON).is_file()


def test_the_input_space_comparison_decides_only_where_its_known_answers_hold(novelty_tree):
    """On Acrobot and PointMaze-Medium a grid count of the normalised state (the known working count)
    is no better than the distance score at every width tried, so with the comparison a cause the
    check rejects what it must pass there; the panels where it is a valid check are exactly those
    where the rule in force makes it a cause. There it is a note: noise is still rejected as blind to
    novelty, a grid count the comparison alone rejected passes, and the distance score as a bonus is
    no longer rejected, which is what the check cannot tell on those panels."""
    from campaign.claims import novelty_calibration as nc

    coll = collect(novelty_tree, "novelty")
    answers = nc.novelty_answers(coll)
    assert {"mountaincar", "acrobot", "pointmaze_medium"} <= {a.env for a in answers}
    assert set(nc.valid_panels(answers)) == set(C.SIGNAL_NOVELTY_DISTANCE_PANELS) == {"mountaincar"}
    assert not nc.valid_panels(answers, nc.TESTED[1])
    cause = "no better than a distance score in its input space"
    for env in ("acrobot", "pointmaze_medium"):
        rows = {a.method: a for a in answers if a.env == env}
        grids = [a for a in rows.values() if a.role == nc.WORKING]
        assert len(grids) == 3 and all(a.difference[1] < 0 for a in grids)  # below it at every width
        assert all(a.verdicts[nc.TESTED[0]][0] == "degenerate" for a in grids)
        assert not RULE.novelty_distance_decides(env)
        noise, distance = rows["noise"], rows[nc.DISTANCE_ROW]
        assert noise.verdicts[RULE][0] == "degenerate"
        assert any(c.startswith("blind to novelty") for c in noise.verdicts[RULE][1])
        assert distance.verdicts[nc.TESTED[0]][0] == "degenerate" and distance.verdicts[RULE][0] == "ok"
        # a grid count rejected by the comparison alone passes under the rule in force
        only = [a for a in grids if all(c.startswith(cause) for c in a.verdicts[nc.TESTED[0]][1])]
        assert only and all(a.verdicts[RULE][0] == "ok" for a in only)
    # the finest grid on PointMaze-Medium's 4-D state is mostly first visits, rejected at its batch maximum
    fine = next(a for a in answers if a.env == "pointmaze_medium" and a.method == "hashexplo/bonus.hash=grid")
    assert fine.verdicts[RULE][0] == "degenerate" and fine.verdicts[RULE][1][0].startswith("at its batch maximum")
    md = nc.novelty_calibration_md(answers, coll.label)
    assert "acrobot: margin +0: **no**, margin +0.05: **no** (in force: reported, not a cause)" in md


def test_the_input_space_comparison_is_a_note_where_it_does_not_decide():
    """The same shortfall from the distance score is a cause where the comparison decides and a note elsewhere."""
    novelty = np.array([0.80, 0.82, 0.79, 0.81])
    zero, one = np.zeros(4), np.ones(4)
    verdict, causes, _, _ = judge(zero, one, None, RULE, novelty=novelty, novelty_reference=novelty + 0.05)
    assert verdict == "degenerate" and causes[0].startswith("no better than a distance score in its input space")
    verdict, causes, notes, _ = judge(zero, one, None, RULE, novelty=novelty, novelty_reference=novelty + 0.05,
                                      novelty_decides=False)
    assert verdict == "ok" and not causes and notes[-1].endswith("reported, not a cause")
    assert RULE.novelty_distance_decides("mountaincar[backend=x]") and not RULE.novelty_distance_decides("acrobot")
