"""Figures at honest scales and the marks a reader needs: a flat coverage drawn flat,
aggregate panels on one scale, carried-forward final scores marked, no links to files the
published reports do not hold, per-seed curves, performance profiles against rliable, and
throughput and final scores per device. Synthetic trees with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from analysis_fixtures import MC_GRID, STEPS, T, make_clean_tree, write_run

from analysis import collect
from analysis.aggregate import compute_aggregates
from analysis.bootstrap import _seeded, stream_seed
from campaign.repro.data import StoredRun

REPS = 200


def _png(path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- scales


def test_min_span_limits_keep_a_small_change_small_inside_the_natural_range():
    from analysis.plots import min_span_limits

    assert min_span_limits(0.398, 0.406, 0.05, (0, 1)) == pytest.approx((0.377, 0.427))
    assert min_span_limits(0.01, 0.02, 0.05, (0, 1)) == pytest.approx((0.0, 0.05))  # shifted, not cut
    assert min_span_limits(0.99, 1.0, 0.05, (0, 1)) == pytest.approx((0.95, 1.0))
    assert min_span_limits(0.1, 0.9, 0.05, (0, 1)) is None  # wide enough: autoscaling is honest


def test_a_flat_coverage_is_drawn_flat(tmp_path):
    from analysis.makers.coverage import COVERAGE_MIN_SPAN
    from analysis.plots import draw_env_curves

    for s in range(3):
        cov = 0.398 + 0.008 * (1 - np.exp(-np.arange(T)))  # 0.398 -> 0.406, as PointMaze-Medium
        write_run(tmp_path, "c", "pointmaze_medium", "none", s, STEPS, np.zeros(T), extra={"coverage": cov},
                  summary={"coverage_grid": MC_GRID})
    coll = collect(tmp_path, "c")
    fig = draw_env_curves(coll, "coverage", "coverage", min_span=COVERAGE_MIN_SPAN, bounds=(0.0, 1.0))
    lo, hi = fig.axes[0].get_ylim()
    assert hi - lo == pytest.approx(COVERAGE_MIN_SPAN) and lo < 0.398 and hi > 0.406


def test_shared_width_limits():
    from analysis.plots import shared_width_limits

    limits = shared_width_limits([(0.6, 0.7), (0.55, 0.72), (0.65, 0.7), (0.3, 0.34)], [[0, 1, 2], [3]], pad=0.0)
    assert limits[0] == limits[1] == limits[2] == pytest.approx((0.55, 0.72))
    assert limits[3] == pytest.approx((0.32 - 0.085, 0.32 + 0.085))  # as wide, centred on its own data


def test_aggregate_score_panels_share_their_x_axis(tmp_path):
    from analysis.plots import draw_aggregate_intervals

    make_clean_tree(tmp_path)
    coll = collect(tmp_path, "synth")
    fig, axes = draw_aggregate_intervals(compute_aggregates(coll, reps=REPS), coll)
    lims = [ax.get_xlim() for ax in axes]
    assert lims[0] == lims[1] == lims[2]
    assert lims[3][1] - lims[3][0] == pytest.approx(lims[0][1] - lims[0][0])


# --------------------------------------------------------------------------- carried forward


def _carried_tree(root):
    """Freeway-like env: every PPO run and 2 of 4 RFIG runs finish no episode in the last window;
    windows 2, 4, 6 finish none in every run."""
    for s in range(4):
        for bonus, carried in (("none", True), ("rfig", s < 2)):
            episodes = np.full(T, 4)
            episodes[[2, 4, 6]] = 0
            if carried:
                episodes[-1] = 0
            returns = np.where(episodes == 0, np.nan, 10.0 + s + np.arange(T))
            write_run(root, "f", "minatar_freeway", bonus, s, STEPS, returns, episodes=episodes)
        write_run(root, "f", "acrobot", "none", s, STEPS, -100.0 + s + np.arange(T))
        write_run(root, "f", "acrobot", "rfig", s, STEPS, -90.0 + s + np.arange(T))


def test_carried_final_scores_are_counted_and_marked(tmp_path):
    from analysis.carried import MARK, carried_note, carried_windows, final_carried
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    _carried_tree(tmp_path)
    coll = collect(tmp_path, "f")
    assert final_carried(coll) == {"minatar_freeway": {"none": (4, 4), "rfig": (2, 4)}}
    assert carried_windows(coll, "minatar_freeway") == (4, T)  # windows 2, 4, 6 in all runs, the last in 6 of 8
    assert carried_windows(coll, "acrobot") == (0, T)
    note = carried_note(coll)
    assert note.startswith(MARK) and "Freeway: 6 of 8 runs" in note
    out = tmp_path / "report"
    res = build_report(coll, out, ReportOptions(reps=REPS), only=["curves", "final_scores"], strict=True)
    assert res.errors == []
    table = (out / "final_scores_iqm.md").read_text()
    freeway = next(line for line in table.splitlines() if line.startswith("| Freeway"))
    acrobot = next(line for line in table.splitlines() if line.startswith("| Acrobot"))
    assert freeway.count(MARK) == 2 and MARK not in acrobot
    assert note in table  # the note sits under the table, which the 32-seed report shows alone
    assert "Freeway: 6 of 8 runs" in (out / "index.md").read_text().split("## Final scores")[0]  # the curves


def test_reports_link_no_pdf(tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    make_clean_tree(tmp_path)
    out = tmp_path / "report"
    build_report(collect(tmp_path, "synth"), out, ReportOptions(reps=REPS), strict=True)
    index = (out / "index.md").read_text()
    assert ".pdf)" not in index and (out / "curves.pdf").is_file()  # written, not linked


# --------------------------------------------------------------------------- per seed, performance profiles


def test_seed_curves_draw_every_seed_beside_the_iqm(tmp_path):
    from analysis.makers.seeds import draw_seed_curves

    truth = make_clean_tree(tmp_path)
    coll = collect(tmp_path, "synth")
    fig = draw_seed_curves(coll)
    axes = np.array(fig.axes).reshape(len(coll.envs), len(coll.methods))
    for i, env in enumerate(coll.envs):
        for j, m in enumerate(coll.methods):
            lines = axes[i, j].get_lines()
            assert len(lines) == len(truth[(env, m)]) + 1  # a thin line per seed, the IQM
            assert np.allclose(lines[-1].get_ydata(), scipy.stats.trim_mean(truth[(env, m)], 0.25, axis=0))
        assert len({axes[i, j].get_ylim() for j in range(len(coll.methods))}) == 1  # a row shares its y axis


def test_performance_profiles_are_rliable_s(tmp_path):
    from rliable import library

    from analysis.makers.seeds import normalised_scores, performance_profiles

    make_clean_tree(tmp_path)
    agg = compute_aggregates(collect(tmp_path, "synth"), reps=REPS)
    scores = normalised_scores(agg)
    assert set(scores) == set(agg.agg_methods) and scores["rfig"].shape == (5, 3)
    tau = np.linspace(0, 1, 21)
    points, intervals = performance_profiles(scores, tau, REPS, seed=7)
    for b in scores:  # each method drawn from its own named seed, as analysis.bootstrap says
        with _seeded(stream_seed(7, b)):
            ref_points, ref_intervals = library.create_performance_profile({b: scores[b]}, tau, reps=REPS)
        assert np.allclose(points[b], ref_points[b]) and np.allclose(intervals[b], ref_intervals[b])
        assert points[b][0] == pytest.approx(np.mean(scores[b] > 0))


def test_standard_report_has_the_new_sections(tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    make_clean_tree(tmp_path)
    out = tmp_path / "report"
    res = build_report(collect(tmp_path, "synth"), out, ReportOptions(reps=REPS),
                       only=["seed_curves", "performance_profiles"], strict=True)
    index = (out / "index.md").read_text()
    assert [s.title for s in res.sections] == ["Learning curves, seed by seed", "Performance profiles"]
    assert _png(out / "seed_curves.png") and _png(out / "performance_profiles.png")
    assert "(seed_curves.png)" in index and "(performance_profiles.png)" in index


# --------------------------------------------------------------------------- devices


def _device_tree(root):
    """Acrobot: PPO on the CPU (2000 steps/s), RFIG seeds 0-3 on the CPU (1000) and 4-7 on a GPU
    (8000, PPO there 16000 on MountainCar); RFIG's GPU runs score higher."""
    cpu = {"backend": "cpu", "device_kind": "cpu", "cpu": "AMD EPYC", "cores": 2}
    gpu = {"backend": "gpu", "device_kind": "NVIDIA H200", "cpu": "Xeon", "cores": 16}
    for s in range(8):
        write_run(root, "d", "acrobot", "none", s, STEPS, -100.0 + s + np.arange(T),
                  summary={"machine": cpu, "env_steps_per_second": 2000.0})
        on_gpu = s >= 4
        write_run(root, "d", "acrobot", "rfig", s, STEPS, -100.0 + (50 if on_gpu else 0) + s + np.arange(T),
                  summary={"machine": gpu if on_gpu else cpu, "env_steps_per_second": 8000.0 if on_gpu else 1000.0})
        write_run(root, "d", "mountaincar", "none", s, STEPS, -200.0 + s + np.arange(T),
                  summary={"machine": gpu, "env_steps_per_second": 16000.0})
        write_run(root, "d", "mountaincar", "rfig", s, STEPS, -190.0 + s + np.arange(T),
                  summary={"machine": gpu, "env_steps_per_second": 8000.0})


def test_throughput_is_per_device_only(tmp_path):
    from analysis.devices import speed_by_device

    _device_tree(tmp_path)
    speed = speed_by_device(collect(tmp_path, "d"))
    assert list(speed) == ["CPU", "NVIDIA H200"]
    assert speed["CPU"]["rfig"]["sps"] == 1000.0 and speed["CPU"]["rfig"]["rel"] == 0.5
    assert speed["NVIDIA H200"]["rfig"]["sps"] == 8000.0 and speed["NVIDIA H200"]["rfig"]["rel"] == 0.5
    assert speed["NVIDIA H200"]["none"]["runs"] == 8 and speed["CPU"]["none"]["runs"] == 8


def test_method_comparison_shows_throughput_per_device(tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    _device_tree(tmp_path)
    out = tmp_path / "report"
    build_report(collect(tmp_path, "d"), out, ReportOptions(reps=REPS), only=["method_comparison"], strict=True)
    table = (out / "throughput_by_device.md").read_text()
    assert "| CPU | RFIG | 1 | 4 | 1,000 | 0.50 |" in table
    assert "| NVIDIA H200 | RFIG | 2 | 12 | 8,000 | 0.50 |" in table
    assert "steps/s" not in (out / "method_comparison.md").read_text()


def test_device_confound_is_stated_and_tested(tmp_path):
    from analysis.devices import cell_devices, device_confound_md, device_from_origin, devices_from_data

    _device_tree(tmp_path)
    coll = collect(tmp_path, "d")
    cells = cell_devices(coll)
    assert {d: len(v) for d, v in cells[("acrobot", "rfig")].items()} == {"CPU": 4, "NVIDIA H200": 4}
    md = device_confound_md(coll)
    expected = scipy.stats.mannwhitneyu(cells[("acrobot", "rfig")]["CPU"], cells[("acrobot", "rfig")]["NVIDIA H200"],
                                        alternative="two-sided").pvalue
    assert f"p = {expected:.3g}" in md and "U = 0" in md
    assert "Acrobot: PPO CPU 8; RFIG CPU 4 · NVIDIA H200 4" in md  # confounded there, not on MountainCar
    assert "MountainCar:" not in md
    assert device_from_origin("2 CPU cores (AMD EPYC), 24 GiB memory, no GPU; jax on CPU") == "CPU"
    assert device_from_origin("1 x NVIDIA H200 (gpu), 16 CPU cores") == "NVIDIA H200"
    assert device_from_origin(None) is None
    known = devices_from_data({("d", "acrobot", "none", "base", 0): StoredRun(
        {"summary": {}, "origin": {"machine": "2 CPU cores (AMD EPYC), 24 GiB, no GPU"}}, "")})
    assert known == {("d", "acrobot", "none", "base", 0): "CPU"}
