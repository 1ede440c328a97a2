"""Tests of the analysis package on synthetic results trees with known values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from analysis_fixtures import (
    SEEDS,
    STEP,
    STEPS,
    T,
    make_clean_tree,
    make_defect_tree,
    make_full_suite_tree,
    write_run,
)
from conftest import analysis_reads

from analysis import AnalysisError, collect, final_scores, find_experiments
from analysis.aggregate import (
    compute_aggregates,
    curve_stats,
    fast_iqm,
    fast_probability_of_improvement,
    iqm,
    percentiles,
)
from analysis.names import env_label, method_colour, method_label, sort_envs, sort_methods
from analysis.tables import MIN_SEEDS_FOR_CI

REPO = Path(__file__).resolve().parents[1]
REPS = 60  # small on purpose: these tests check plumbing, not CI accuracy


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    truth = make_clean_tree(root)
    return root, truth


@pytest.fixture(scope="module")
def defects(tmp_path_factory):
    root = tmp_path_factory.mktemp("defects")
    info = make_defect_tree(root)
    return root, info["truth"]


@pytest.fixture(scope="module")
def clean_agg(clean):
    root, _ = clean
    coll = collect(root, "synth")
    return coll, compute_aggregates(coll, reps=REPS, last_k=1)


@pytest.fixture(scope="module")
def report(defects, tmp_path_factory):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    root, _ = defects
    out = tmp_path_factory.mktemp("report")
    coll = collect(root, "defects")
    result = build_report(coll, out, ReportOptions(reps=REPS), strict=True)
    return out, result


# --------------------------------------------------------------------------- names


def test_paper_order_labels_and_fixed_colours():
    envs = ["cartpole", "minatar_space_invaders", "pointmaze_large", "minatar_breakout", "sparse_ant", "acrobot",
            "pointmaze_umaze", "mountaincar", "minatar_asterix", "aaa_unknown", "deepsea", "pointmaze_giant",
            "sparse_humanoid", "pointmaze_open", "sparse_walker2d", "pointmaze_medium", "minatar_freeway",
            "sparse_hopper", "sparse_halfcheetah"]
    # The paper's figure: classic control, Brax, PointMaze (by size), MinAtar; then the others.
    assert sort_envs(envs) == ["acrobot", "mountaincar", "sparse_ant", "sparse_halfcheetah", "sparse_hopper",
                               "sparse_walker2d", "sparse_humanoid", "pointmaze_umaze", "pointmaze_open",
                               "pointmaze_medium", "pointmaze_large", "pointmaze_giant", "minatar_breakout",
                               "minatar_asterix", "minatar_freeway", "minatar_space_invaders", "cartpole", "deepsea",
                               "aaa_unknown"]
    assert [env_label(e) for e in ["sparse_ant", "sparse_halfcheetah", "pointmaze_umaze", "pointmaze_giant",
                                   "minatar_breakout", "breakout", "minatar_space_invaders", "mountaincar",
                                   "deepsea", "pointmaze_custom"]] == \
        ["Sparse-Ant", "Sparse-HalfCheetah", "PointMaze-UMaze", "PointMaze-Giant", "Breakout", "Breakout",
         "SpaceInvaders", "MountainCar", "DeepSea", "PointMaze-Custom"]
    assert sort_envs(["breakout", "acrobot"]) == ["acrobot", "breakout"]  # bare MinAtar names take their slot
    assert [method_label(b) for b in ["none", "rfig", "rnd", "vime", "hashexplo", "newbonus"]] == \
        ["PPO", "RFIG", "RND", "VIME", "#Explo", "newbonus"]
    assert sort_methods(["rfig", "zzz", "none", "rnd"]) == ["none", "rnd", "zzz", "rfig"]
    # Colours depend on the name only, never on which other methods are present.
    assert method_colour("rfig") == method_colour("rfig") != method_colour("rnd")
    assert method_colour("newbonus") == method_colour("newbonus")
    assert len({method_colour(b) for b in ["none", "rfig", "rnd", "vime", "hashexplo"]}) == 5


# --------------------------------------------------------------------------- statistics


def test_iqm_and_percentiles_match_scipy_numpy():
    rng = np.random.default_rng(1)
    for s in (1, 2, 3, 4, 5, 8, 13, 32):
        x = rng.normal(size=(s, 7))
        np.testing.assert_allclose(iqm(x, axis=0), scipy.stats.trim_mean(x, 0.25, axis=0))
        np.testing.assert_allclose(iqm(x.T, axis=1), scipy.stats.trim_mean(x, 0.25, axis=0))
        np.testing.assert_allclose(percentiles(x, (25, 75), axis=0), np.percentile(x, [25, 75], axis=0))
        np.testing.assert_allclose(fast_iqm(x), scipy.stats.trim_mean(x, 0.25, axis=None))
    # NaN entries are ignored per column: same as trim_mean on the finite values.
    x = rng.normal(size=(9, 4))
    x[[0, 3], 1] = np.nan
    x[:, 3] = np.nan
    got = iqm(x, axis=0)
    np.testing.assert_allclose(got[[0, 2]], scipy.stats.trim_mean(x[:, [0, 2]], 0.25, axis=0))
    assert np.isclose(got[1], scipy.stats.trim_mean(x[np.isfinite(x[:, 1]), 1], 0.25))
    assert np.isnan(got[3])
    p = percentiles(x, (25, 75), axis=0)
    assert np.isclose(p[0, 1], np.percentile(x[np.isfinite(x[:, 1]), 1], 25))


def test_fast_metrics_equal_rliable():
    from rliable import metrics

    rng = np.random.default_rng(2)
    for n in (1, 3, 4, 7):
        x = rng.integers(0, 4, size=(n, 3)).astype(float)  # ties on purpose
        y = rng.integers(0, 4, size=(n + 2, 3)).astype(float)
        assert np.isclose(fast_iqm(x), metrics.aggregate_iqm(x))
        assert np.isclose(fast_probability_of_improvement(x, y), metrics.probability_of_improvement(x, y))
        assert np.isclose(fast_probability_of_improvement(x, x), metrics.probability_of_improvement(x, x))


# --------------------------------------------------------------------------- collection


def test_collect_clean_tree_arrays(clean):
    root, truth = clean
    coll = collect(root)  # the only experiment: picked automatically
    assert coll.experiment == "synth"
    assert coll.envs == ["acrobot", "mountaincar", "minatar_breakout"]
    assert coll.methods == ["none", "rnd", "rfig"]
    assert [i for i in coll.issues if i.severity != "info"] == []
    arr, methods, envs, seeds, steps = coll.to_array()
    assert arr.shape == (3, 3, len(SEEDS), T)
    np.testing.assert_array_equal(steps, STEPS)
    np.testing.assert_array_equal(seeds, SEEDS)
    for i, b in enumerate(methods):
        for j, e in enumerate(envs):
            np.testing.assert_allclose(arr[i, j], truth[(e, b)])
            s, v = coll.env_data[e].returns(b)
            np.testing.assert_allclose(v, truth[(e, b)])
            st = curve_stats(v)
            np.testing.assert_allclose(st["iqm"], scipy.stats.trim_mean(truth[(e, b)], 0.25, axis=0))
            np.testing.assert_allclose(st["p25"], np.percentile(truth[(e, b)], 25, axis=0))
            np.testing.assert_allclose(st["p75"], np.percentile(truth[(e, b)], 75, axis=0))
    # Generic columns come along on the same grid.
    _, ir = coll.column("acrobot", "rfig", "intrinsic_reward")
    np.testing.assert_allclose(ir[0], 1.0 / (1 + np.arange(T)))


def test_final_scores_last_k(clean):
    root, truth = clean
    coll = collect(root, "synth")
    for k in (1, 3):
        fs = final_scores(coll, k)
        for (e, b), r in truth.items():
            seeds, vals = fs[e][b]
            np.testing.assert_array_equal(seeds, SEEDS)
            np.testing.assert_allclose(vals, r[:, -k:].mean(axis=1))
    with pytest.raises(ValueError):
        final_scores(coll, 0)


def test_aggregates_match_direct_computation(clean, clean_agg):
    _, truth = clean
    coll, agg = clean_agg
    # Per-env final-score point estimates.
    for (e, b), r in truth.items():
        cell = agg.per_env[e][b]
        assert cell["n"] == len(SEEDS)
        assert np.isclose(cell["mean"].point, r[:, -1].mean())
        assert np.isclose(cell["iqm"].point, scipy.stats.trim_mean(r[:, -1], 0.25))
        assert np.isclose(cell["median"].point, np.median(r[:, -1]))
        for stat in ("mean", "iqm", "median"):
            assert cell[stat].lo <= cell[stat].point + 1e-9 and cell[stat].point <= cell[stat].hi + 1e-9
    # Min-max normalisation over all methods, seeds and eval points of an env.
    for e in coll.envs:
        allv = np.concatenate([truth[(e, b)].ravel() for b in coll.methods])
        assert np.isclose(agg.normalisation.lo[e], allv.min())
        assert np.isclose(agg.normalisation.hi[e], allv.max())
    norm = {b: np.stack([(truth[(e, b)][:, -1] - agg.normalisation.lo[e]) /
                         (agg.normalisation.hi[e] - agg.normalisation.lo[e]) for e in coll.envs], axis=1)
            for b in coll.methods}
    for b, x in norm.items():
        o = agg.overall[b]
        assert np.isclose(o["IQM"].point, scipy.stats.trim_mean(x, 0.25, axis=None))
        assert np.isclose(o["Mean"].point, x.mean())
        assert np.isclose(o["Median"].point, np.median(x.mean(axis=0)))
        assert np.isclose(o["Optimality gap"].point, 1 - np.minimum(x, 1).mean())
        assert o["IQM"].lo <= o["IQM"].point <= o["IQM"].hi
    # The aggregate curve's last point is the IQM of normalised final returns.
    assert agg.curve_xlabel == "Environment steps"
    np.testing.assert_array_equal(agg.curve_x, STEPS)
    for b in coll.methods:
        assert np.isclose(agg.curves[b][0][-1], scipy.stats.trim_mean(norm[b], 0.25, axis=None))
    # Probability of improvement of RFIG over each baseline, from raw scores.
    assert [(x, y) for x, y, _, _ in agg.poi] == [("rfig", "none"), ("rfig", "rnd")]
    for _, y, iv, n in agg.poi:
        assert n == 3
        expected = np.mean([np.mean(truth[(e, "rfig")][:, -1][:, None] > truth[(e, y)][:, -1][None, :])
                            for e in coll.envs])
        assert np.isclose(iv.point, expected)


def test_bootstrap_is_seeded_and_reps_matter(clean_agg):
    coll, agg = clean_agg
    again = compute_aggregates(coll, reps=REPS)
    assert again.overall["rfig"]["IQM"].lo == agg.overall["rfig"]["IQM"].lo
    other = compute_aggregates(coll, reps=REPS, seed=7)
    assert other.overall["rfig"]["IQM"].point == agg.overall["rfig"]["IQM"].point
    ppo = compute_aggregates(coll, reps=REPS, normalisation="ppo")
    for e in coll.envs:  # PPO's final IQM maps to 1
        sc = ppo.scores[e]["none"][1]
        assert np.isclose(ppo.normalisation.apply(e, scipy.stats.trim_mean(sc, 0.25)), 1.0)
    with pytest.raises(ValueError):
        compute_aggregates(coll, reps=REPS, normalisation="zscore")


def test_defects_are_reported_and_excluded(defects):
    root, truth = defects
    coll = collect(root, "defects")
    kinds = {(i.kind, i.env, i.bonus, i.seed) for i in coll.issues}
    assert ("incomplete", "acrobot", "rnd", 4) in kinds
    assert ("incomplete", "minatar_breakout", "rfig", 4) in kinds  # just started: empty metrics.csv
    assert not any(i.kind == "unreadable" for i in coll.issues)
    assert ("failed", "mountaincar", "rfig", 3) in kinds
    assert ("missing_windows", "mountaincar", "none", 2) in kinds
    assert ("missing_runs", "mountaincar", "rnd", None) in kinds
    assert any(i.kind == "empty_windows" and i.severity == "info" and i.seed == 1 for i in coll.issues)
    # Failed / incomplete seeds are neither in curves nor in final scores.
    assert list(coll.env_data["acrobot"].returns("rnd")[0]) == [0, 1, 2, 3]
    assert list(coll.env_data["mountaincar"].returns("rfig")[0]) == [0, 1, 2, 4]
    assert list(coll.env_data["mountaincar"].returns("none")[0]) == [0, 1, 3, 4]
    fs = final_scores(coll)
    assert list(fs["mountaincar"]["rfig"][0]) == [0, 1, 2, 4]
    assert list(fs["minatar_breakout"]["rfig"][0]) == [0, 1, 2, 3]
    # Empty windows (episodes_finished == 0) carry the previous return; not a failure.
    seeds, v = coll.env_data["minatar_breakout"].returns("rnd")
    row = v[list(seeds).index(1)]
    r = truth[("minatar_breakout", "rnd")][1]
    np.testing.assert_allclose(row[[3, 4]], [r[2], r[2]])
    np.testing.assert_allclose(row[5:], r[5:])
    # A leading empty window has nothing to carry: NaN, the run still counts.
    seeds, v = coll.env_data["minatar_breakout"].returns("none")
    assert 0 in seeds and np.isnan(v[0, 0]) and np.isfinite(v[0, 1:]).all()
    st = curve_stats(v)
    assert np.isclose(st["iqm"][0], scipy.stats.trim_mean(v[1:, 0], 0.25))


def test_keep_failed_and_include_incomplete(defects):
    root, truth = defects
    coll = collect(root, "defects", keep_failed=True, include_incomplete=True)
    seeds, v = coll.env_data["mountaincar"].returns("rfig")
    assert list(seeds) == [0, 1, 2, 3, 4]
    r = truth[("mountaincar", "rfig")][3]
    assert np.isclose(v[3, 5], r[4])  # the failed window is forward-filled, explicitly
    assert any(i.kind == "failed" and i.severity == "warning" for i in coll.issues)
    # The missing window likewise.
    seeds, v = coll.env_data["mountaincar"].returns("none")
    assert np.isclose(v[list(seeds).index(2), 7], truth[("mountaincar", "none")][2][6])
    # The incomplete run shows as a partial curve but never gets a final score.
    seeds, v = coll.env_data["acrobot"].returns("rnd")
    assert 4 in seeds and np.isfinite(v[-1, :6]).all() and np.isnan(v[-1, 6:]).all()
    assert 4 not in final_scores(coll)["acrobot"]["rnd"][0]


def test_grid_alignment_subset_superset_interpolation(tmp_path):
    rng = np.random.default_rng(3)
    ref_r = rng.normal(size=(3, T))
    for s in range(3):
        write_run(tmp_path, "grid", "cartpole", "none", s, STEPS, ref_r[s])
    fine = STEP // 2 * np.arange(1, 2 * T + 1)  # superset of the reference grid
    fine_r = rng.normal(size=len(fine))
    write_run(tmp_path, "grid", "cartpole", "rfig", 0, fine, fine_r)
    odd = 3000 * np.arange(1, 8)  # 3000..21000: another grid entirely
    odd_r = rng.normal(size=len(odd))
    write_run(tmp_path, "grid", "cartpole", "rnd", 0, odd, odd_r)
    coll = collect(tmp_path, "grid")
    ed = coll.env_data["cartpole"]
    np.testing.assert_array_equal(ed.steps, STEPS)  # the grid most complete runs share
    np.testing.assert_allclose(ed.returns("none")[1], ref_r)
    np.testing.assert_allclose(ed.returns("rfig")[1][0], fine_r[1::2])  # matched point by point
    got = ed.returns("rnd")[1][0]
    assert np.isnan(got[0])  # 2048 < 3000: never extrapolated
    np.testing.assert_allclose(got[1:], np.interp(STEPS[1:], odd, odd_r))
    c = ed.curves["rnd"][0]
    assert c.interpolated and c.used and not c.failed
    assert any(i.kind == "interpolated" and i.bonus == "rnd" for i in coll.issues)
    assert any(i.kind == "grid" for i in coll.issues)
    # Envs on different grids cannot share one dense array.
    write_run(tmp_path, "grid", "acrobot", "none", 0, STEPS[:4], ref_r[0, :4])
    coll = collect(tmp_path, "grid")
    with pytest.raises(ValueError, match="different env_steps grids"):
        coll.to_array()


def test_filters_and_experiment_resolution(defects, tmp_path):
    root, _ = defects
    coll = collect(root, "defects", envs="acrobot,no_such_env", bonuses=["rfig", "none"])
    assert coll.envs == ["acrobot"] and coll.methods == ["none", "rfig"]
    assert any(i.kind == "missing_env" and i.env == "no_such_env" for i in coll.issues)
    with pytest.raises(AnalysisError, match="no runs in experiment"):
        collect(root, "defects", envs="no_such_env")
    with pytest.raises(AnalysisError, match="experiments found: defects"):
        collect(root, "nope")
    with pytest.raises(AnalysisError, match="does not exist"):
        collect(tmp_path / "missing")
    with pytest.raises(AnalysisError, match="no runs found"):
        collect(tmp_path)
    write_run(tmp_path, "exp_a", "acrobot", "none", 0, STEPS, np.zeros(T))
    write_run(tmp_path, "exp_b", "acrobot", "none", 0, STEPS, np.zeros(T))
    assert find_experiments(tmp_path) == ["exp_a", "exp_b"]
    with pytest.raises(AnalysisError, match="exp_a, exp_b"):
        collect(tmp_path)


# --------------------------------------------------------------------------- report


def test_report_files_written(report):
    out, result = report
    assert result.errors == []
    index = (out / "index.md").read_text()
    for name in ("curves", "aggregate_scores", "aggregate_curve", "probability_of_improvement", "intrinsic_reward"):
        png, pdf = out / f"{name}.png", out / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert pdf.read_bytes()[:5] == b"%PDF-", name
        assert png.stat().st_size > 5000 and f"({name}.png)" in index
    for name in ("final_scores", "final_scores_iqm", "aggregate_metrics", "method_comparison",
                 "probability_of_improvement"):
        md, tex = (out / f"{name}.md").read_text(), (out / f"{name}.tex").read_text()
        assert md.count("|") > 10 and "\\begin{tabular}" in tex and "\\toprule" in tex
    # A body cell is bold exactly where the best mean's interval clears every other in its row (each
    # with enough runs), recomputed here from the intervals the report exports.
    per_env = json.loads((out / "aggregates.json").read_text())["per_env"]
    clear = set()
    for e, by in per_env.items():
        best = max(by, key=lambda b: by[b]["mean"]["point"])
        if len(by) > 1 and all(d["n"] >= MIN_SEEDS_FOR_CI for d in by.values()) and all(
                by[best]["mean"]["lo"] > d["mean"]["hi"] for b, d in by.items() if b != best):
            clear.add(e)
    rows = [line for line in (out / "final_scores.md").read_text().splitlines()[2:] if line.startswith("|")]
    assert {r.split("|")[1].strip() for r in rows if "**" in r} == {env_label(e) for e in clear}
    assert all(r.count("**") <= 2 for r in rows)
    assert "\\textbf{" in (out / "final_scores.tex").read_text()  # (the header row)
    # any tree's comparison of methods: the measured columns (the paper's Table 1 is the campaign's:
    # tests/test_paper_table.py)
    comp = (out / "method_comparison.md").read_text()
    assert comp.splitlines()[0] == "| Method | Seed spread (IQR) |" and "Principle" not in comp
    # The problems are in the report, not just in a log.
    for needle in ("incomplete", "failed", "missing_windows", "missing_runs", "Normalisation",
                   "last evaluation window"):
        assert needle in index, needle
    runs = (out / "runs.csv").read_text()
    assert "incomplete" in runs and "failed" in runs
    blob = json.loads((out / "aggregates.json").read_text())
    assert blob["normalisation"]["kind"] == "minmax" and blob["reps"] == REPS
    assert {p["y"] for p in blob["probability_of_improvement"]} == {"none", "rnd"}


def test_report_says_when_its_results_last_changed_not_when_it_was_built(clean, tmp_path):
    import os
    import time

    from analysis.report import build_report

    root, _ = clean
    coll = collect(root, "synth")
    first = build_report(coll, tmp_path / "a", only=["data"]).index.read_text()
    time.sleep(1.1)
    assert build_report(coll, tmp_path / "b", only=["data"]).index.read_text() == first
    newest = max(os.path.getmtime(r.path / name) for r in coll.runs for name in ("summary.json", "metrics.csv")
                 if (r.path / name).is_file())
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(newest))
    assert f"- Results as of: {stamp} (the newest run file)" in first


def test_an_added_maker_runs_in_its_place_and_a_failing_one_is_reported(defects, tmp_path):
    from analysis.maker import Section
    from analysis.report import MAKERS, build_report

    root, _ = defects
    coll = collect(root, "defects", envs="acrobot")

    def extra(ctx, out_dir):
        p = out_dir / "extra.txt"
        p.write_text(",".join(ctx.data.envs))
        return Section("Extra figure", "made by an added maker", [p])

    def broken(ctx, out_dir):
        raise RuntimeError("boom")

    makers = (*MAKERS, ("test_extra", extra), ("test_broken", broken))
    res = build_report(coll, tmp_path, only=["test_extra", "test_broken", "data"], makers=makers)
    index = (tmp_path / "index.md").read_text()
    assert "## Extra figure" in index and (tmp_path / "extra.txt").read_text() == "acrobot"
    assert res.errors and "boom" in res.errors[0] and "test_broken (failed)" in index
    assert index.index("## Data") < index.index("## Extra figure")


def test_the_report_order_is_the_list_of_makers():
    from analysis.report import MAKERS

    names = [n for n, _ in MAKERS]
    assert len(set(names)) == len(names) and names[0] == "data" and names[-1] == "exports"


def test_full_suite_figure_is_a_3x4_grid(tmp_path):
    from analysis.plots import plot_env_curves

    envs = make_full_suite_tree(tmp_path, n_seeds=3, t=6)
    coll = collect(tmp_path, "suite")
    assert coll.envs == envs
    files = plot_env_curves(coll, tmp_path / "fig" / "curves")
    import matplotlib.image as mpimg

    img = mpimg.imread(files[0])
    h, w = img.shape[:2]
    assert 1.3 < w / h < 2.0  # 4 columns x 3 rows (+ legend), not a single row or column


# --------------------------------------------------------------------------- CLI


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=240)


def test_cli_writes_report(defects, tmp_path):
    root, _ = defects
    out = tmp_path / "rep"
    p = _cli("--results", root, "--out", out, "--reps", 30, "--envs", "acrobot,mountaincar", "--last-k", 2,
             "--allow-incomplete")
    assert p.returncode == 0, p.stderr
    assert "report written to" in p.stdout and str(out) in p.stdout
    index = (out / "index.md").read_text()
    assert "experiment `defects`" in index and "mean of the last 2 evaluation windows" in index
    assert "![learning curves](curves.png)" in index


def test_cli_bad_input(tmp_path, capsys):
    from analysis.__main__ import main

    p = _cli("--results", tmp_path / "nowhere", "--out", tmp_path / "o")
    assert p.returncode == 1 and "does not exist" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()
    write_run(tmp_path, "exp_a", "acrobot", "none", 0, STEPS, np.zeros(T))
    write_run(tmp_path, "exp_b", "acrobot", "none", 0, STEPS, np.zeros(T))
    assert main(["--results", str(tmp_path), "--out", str(tmp_path / "o")]) == 2  # two experiments, one folder
    assert "holds 2 experiments (exp_a, exp_b): name one with --experiment NAME" in capsys.readouterr().err
    assert main(["--results", str(tmp_path), "--experiment", "exp_c"]) == 1
    assert "experiments found: exp_a, exp_b" in capsys.readouterr().err
    assert main(["--results", str(tmp_path), "--experiment", "exp_a", "--bonuses", "vime"]) == 1
    assert "present envs: acrobot" in capsys.readouterr().err
    for bad in (["--reps", "0"], ["--reps", "many"], ["--last-k", "-1"], ["--normalisation", "z"], ["--envs", ","]):
        with pytest.raises(SystemExit) as exc:
            main(["--results", str(tmp_path), *bad])
        assert exc.value.code == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([])  # --results is required
    assert "--results" in capsys.readouterr().err
    assert main(["--results", str(tmp_path), "--experiment", "exp_a", "--only", "nonsense"]) == 2
    assert "unknown maker" in capsys.readouterr().err


def test_analysis_never_imports_jax_or_the_trainer():
    """analysis reads results through the results contract (rfig_exp.results.contract, with
    rfig_exp.config.variants for variant names and values, and rfig_exp.results.status for
    seed ranges) and each bonus's label, colour and role from
    its declaration (rfig_exp.bonuses), and nothing else of rfig_exp: importing all of it, makers
    included, loads no JAX and no training code."""
    code = ("import sys, pkgutil, importlib, analysis, analysis.makers\n"
            "for m in pkgutil.walk_packages(analysis.__path__, 'analysis.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'jaxlib', 'flax', 'optax', 'gymnax', 'brax', 'rfig_exp'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) <= analysis_reads(), out.stdout
    assert "rfig_exp.results.contract" in out.stdout.split()


def test_tick_labels_are_the_ticks_exact_values():
    # 0.2, 0.35, 0.5, ... used to print as 0.2, 0.3, 0.5 (one decimal for a 0.15 spacing),
    # so a curve at 0.75 read as 0.8.
    from analysis.plots import ReadableFormatter

    fmt = ReadableFormatter()
    for locs in ([0.2, 0.35, 0.5, 0.65, 0.8], [0.15, 0.3, 0.45, 0.6, 0.75], [-200, -150, -100], [0, 250000]):
        fmt.set_locs(locs)
        assert [float(fmt(x)) for x in locs] == locs
