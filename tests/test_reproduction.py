"""The reproduction report: compact data round trip, claim verdicts, DeepSea scaling and
sensitivity, checked on synthetic results trees whose answers are known."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

try:
    from analysis_fixtures import STEPS, T, write_run
except ImportError:  # tests/ imported as a package
    from tests.analysis_fixtures import STEPS, T, write_run

from analysis import collect, final_scores
from campaign.claims.claims import wilson
from campaign.repro.build import build
from campaign.repro.data import export_tree, read_tree, rebuild_tree

REPS = 200
SEEDS = range(8)


def _grid(root, levels: dict, experiment="repro", env="mountaincar", overrides=None, noise=1.0, extra=None):
    """Runs whose last-window return is ``levels[bonus]`` + noise (8 seeds, known)."""
    rng = np.random.default_rng(abs(hash((env, str(overrides)))) % 2**32)
    for bonus, level in levels.items():
        for s in SEEDS:
            r = np.linspace(level - 50, level, T) + rng.normal(0, noise, T)
            write_run(root, experiment, env, bonus, s, STEPS, r, overrides=overrides, extra=extra)


PAPER_BONUSES = ("none", "rfig", "rnd", "vime", "hashexplo")


# The 32-seed campaign's VIME and #Explo runs: made at their old defaults, filed under those variants
# (their runs at the new defaults are the baselines rerun's).
OLD_DEFAULTS = {"vime": {"bonus.init_sigma": 0.5, "bonus.kl_ratio_len": 0}, "hashexplo": {"bonus.bin_penalty": 10}}


def stored_run(env: str, bonus: str, seed: int, summary: dict, origin: dict | None = None):
    """One 32-seed campaign run in compact form (no metrics rows) with the summary given: its base
    variant, VIME's and #Explo's at their old defaults."""
    from campaign.repro.data import StoredRun
    from rfig_exp.config.variants import variant_name

    overrides = OLD_DEFAULTS.get(bonus, {})
    record = {"experiment": "paper32", "env": env, "bonus": bonus, "variant": variant_name(overrides), "seed": seed,
              "variant_overrides": overrides, "summary": summary}
    return StoredRun(record={**record, "origin": origin} if origin is not None else record, rows="")


def test_wilson_interval_matches_the_closed_form_at_the_edges():
    lo, hi = wilson(0, 8)
    assert lo == 0.0 and hi == pytest.approx(1.96**2 / (8 + 1.96**2), rel=1e-6)
    lo, hi = wilson(8, 8)
    assert hi == 1.0 and lo == pytest.approx(8 / (8 + 1.96**2), rel=1e-6)


def test_export_and_rebuild_give_the_same_analysis(tmp_path):
    raw, data, back = tmp_path / "raw", tmp_path / "data", tmp_path / "back"
    _grid(raw, {"none": -200.0, "rfig": -120.0}, extra={"coverage": np.linspace(0, 0.5, T), "loss_total": np.ones(T)})
    write_run(raw, "repro", "deepsea", "rfig", 0, STEPS, np.linspace(-0.1, 0.9, T), overrides={"env.size": 10},
              visits=np.arange(100).reshape(10, 10))
    write_run(raw, "repro", "acrobot", "none", 0, STEPS[:4], np.full(4, -400.0), complete=False)
    counts = export_tree(raw, data)
    assert counts["runs"] == 18 and counts["complete"] == 17
    rebuild_tree(data, back)
    a, b = collect(raw, "repro"), collect(back, "repro")
    assert a.envs == b.envs and a.methods == b.methods
    fa, fb = final_scores(a), final_scores(b)
    for e in fa:
        for m in fa[e]:
            np.testing.assert_allclose(fa[e][m][1], fb[e][m][1], rtol=1e-5)
    assert {(i.kind, i.env, i.seed) for i in a.issues} == {(i.kind, i.env, i.seed) for i in b.issues}
    visits = back / "repro/deepsea/rfig/env.size=10/seed_0/visits.npy"
    np.testing.assert_array_equal(np.load(visits), np.arange(100).reshape(10, 10))
    # Columns no report reads are left out of the committed data.
    assert "loss_total" not in (back / "repro/mountaincar/rfig/base/seed_0/metrics.csv").read_text()
    # The same data gives the same bytes (a rebuilt export is not a change to commit).
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    export_tree(raw, data)
    assert before == {p.name: p.read_bytes() for p in data.iterdir()}


def test_report_builds_from_data_with_scaling_and_sensitivity(tmp_path):
    raw, data, out = tmp_path / "raw", tmp_path / "data", tmp_path / "report"
    _grid(raw, {"none": -200.0, "rfig": -120.0, "rnd": -125.0})
    # DeepSea: RFIG solves every size, PPO only the smallest.
    for size, ppo in ((10, 0.99), (20, -0.05), (30, -0.05)):
        overrides = None if size == 20 else {"env.size": size}
        for bonus, level in (("none", ppo), ("rfig", 0.99)):
            for s in SEEDS:
                write_run(raw, "repro", "deepsea", bonus, s, STEPS, np.full(T, level), overrides=overrides)
    # Sensitivity: RFIG flat in its knob, RND swings with its learning rate.
    common = {"agent.total_timesteps": 500000}
    for value, rfig_level, rnd_level in ((0.5, -150.0, -190.0), (1.0, -150.0, -150.0), (2.0, -151.0, -110.0)):
        for bonus, key, level in (("rfig", "bonus.lengthscale_scale", rfig_level), ("rnd", "bonus.lr", rnd_level)):
            ov = dict(common) if value == 1.0 else {**common, key: value * (1e-4 if bonus == "rnd" else 1.0)}
            for s in SEEDS:
                write_run(raw, "sensitivity", "mountaincar", bonus, s, STEPS, np.full(T, level) + s * 0.1,
                          overrides=ov, defaults={"bonus.lengthscale_scale": 1.0, "bonus.lr": 1e-4})
    export_tree(raw, data)
    (data / "meta.json").write_text(json.dumps({"campaigns": [
        {"label": "synthetic", "commit": "abc1234", "machine": "a test", "stages": {"core": {"before": 1.0}}}]}))
    index = build(data, out, reps=REPS, verdict_reps=REPS)
    text = index.read_text()
    # fewer resamples than rule 5's: the index says the verdicts are a quick build's
    assert f"drawn from {REPS:,} bootstrap resamples, not rule 5's 20,000" in text
    for heading in ("## Learning curves", "## The paper's claims, judged on its 12 panels",
                    "## RFIG against PPO, panel by panel", "## Beyond the paper",
                    "## Deep exploration: DeepSea scaling (beyond the paper)", "## Sensitivity, measured", "abc1234"):
        assert heading in text
    # who made which stage: the synthetic runs carry no origin, and the campaign names its estimate
    assert "| core | 40 | — | unknown |" in text and "| deepsea-30 | 16 | — | unknown |" in text
    assert "| core | 0 | — | abc1234 | — | — | 1 |" in text   # made none of its runs: no machine to name
    assert "a test; times not recorded)" in text and "to None" not in text  # a campaign without times
    assert "8 seeds per cell unless marked" in text   # the score table's usual n, stated where it is shown
    # the synthetic grid holds a few of the paper's cells: its verdicts say they are interim
    assert "The grid is still filling" in text
    assert (out / "main/curves.png").is_file() and (out / "deepsea_scaling.png").is_file()
    assert (out / "sensitivity.png").is_file()
    assert "| 30 | 0/8 [0.00, 0.32] | 8/8 [0.68, 1.00] |" in text
    sens = json.loads((out / "sensitivity.json").read_text())
    assert sens["rfig"]["mean_range"] < 0.1 < sens["rnd"]["mean_range"]
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())}
    assert claims["sensitivity: RFIG low, RND medium, VIME and #Explo high (Table 1)"]["kind"] == "supported"
    assert claims["PPO+RFIG ... outperforming vanilla PPO (final score)"]["kind"] == "supported"
    # DeepSea is beyond the paper: it is reported, never part of a claim of the paper
    assert "DeepSea" not in claims["PPO+RFIG ... outperforming vanilla PPO (final score)"]["detail"]
    assert (out / "rules.md").read_text().startswith("# How a claim of the paper gets its verdict")
    assert (out / "poi_rfig_ppo.png").is_file()


def test_a_rebuild_from_unchanged_data_writes_the_same_bytes(tmp_path):
    """`make figures` on a clean checkout must leave `git status` clean: no wall-clock time in
    index.md (its "Results as of" is the data's, from meta.json), none in the PDFs."""
    import time

    raw, data = tmp_path / "raw", tmp_path / "data"
    _grid(raw, {"none": -200.0, "rfig": -120.0})
    export_tree(raw, data)
    (data / "meta.json").write_text(json.dumps({"campaigns": [{"finished": "2026-01-02T03:04:05Z"}]}))
    build(data, tmp_path / "a", reps=REPS, verdict_reps=REPS)
    time.sleep(1.1)  # a wall-clock time in seconds would now differ
    build(data, tmp_path / "b", reps=REPS, verdict_reps=REPS)
    texts = [p.relative_to(tmp_path / "a") for p in sorted((tmp_path / "a").rglob("*"))
             if p.suffix in (".md", ".json", ".csv", ".tex", ".pdf")]
    assert any(p.suffix == ".pdf" for p in texts) and Path("main/index.md") in texts
    for rel in texts:
        a, b = (tmp_path / "a" / rel).read_bytes(), (tmp_path / "b" / rel).read_bytes()
        assert a.replace(b"/a/", b"/b/") == b, rel
    assert "- Results as of: 2026-01-02T03:04:05Z" in (tmp_path / "a" / "main" / "index.md").read_text()


def test_data_accumulates_runs_from_several_exports_and_refuses_a_different_copy(tmp_path):
    from campaign.repro.data import DataConflict, merge_data, read_data, restore_tree
    from rfig_exp.results import contract

    a, b, data, other = tmp_path / "a", tmp_path / "b", tmp_path / "data", tmp_path / "other"
    _grid(a, {"none": -200.0})                                   # machine A: PPO
    _grid(b, {"rfig": -120.0})                                   # machine B: RFIG
    write_run(b, "repro", "acrobot", "none", 0, STEPS[:4], np.full(4, -400.0), complete=False)
    first = export_tree(a, data)
    assert first["added"] == 8 and first["runs"] == 8
    second = export_tree(b, data, complete_cells=True)         # the partial acrobot cell is left out
    assert second["added"] == 8 and second["runs"] == 16
    assert second["held_back"] == ["repro/acrobot/none/base: 0 of 1 seeds complete"]
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    again = export_tree(a, data)                                # the same runs again: kept once
    assert again["identical"] == 8 and again["added"] == 0
    assert before == {p.name: p.read_bytes() for p in data.iterdir()}

    # An export from elsewhere with other numbers for a run already held is refused, naming the run,
    # and nothing is written.
    write_run(tmp_path / "c", "repro", "mountaincar", "none", 3, STEPS, np.full(T, -150.0))
    export_tree(tmp_path / "c", other)
    with pytest.raises(DataConflict) as err:
        merge_data(other, data)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith("repro/mountaincar/none/base/3:")
    assert before == {p.name: p.read_bytes() for p in data.iterdir()}

    # An incomplete run gives way to the complete one; an incomplete one never replaces a complete one.
    write_run(tmp_path / "d", "repro", "acrobot", "none", 0, STEPS[:4], np.full(4, -400.0), complete=False)
    assert export_tree(tmp_path / "d", data)["added"] == 1
    write_run(tmp_path / "e", "repro", "acrobot", "none", 0, STEPS, np.full(T, -90.0))
    assert export_tree(tmp_path / "e", data)["replaced_incomplete"] == 1
    assert export_tree(tmp_path / "d", data)["kept_complete"] == 1
    held = read_data(data)
    assert held[("repro", "acrobot", "none", "base", 0)].complete and len(held) == 17

    # restore puts the complete runs back where a results tree lacks them, leaving the rest alone
    live = tmp_path / "live"
    write_run(live, "repro", "mountaincar", "none", 0, STEPS[:3], np.full(3, -1.0), complete=False)
    assert restore_tree(data, live) == 16
    assert not contract.is_complete(live / "repro/mountaincar/none/base/seed_0")   # left alone
    assert contract.is_complete(live / "repro/mountaincar/rfig/base/seed_7")
    assert restore_tree(data, live) == 0


def test_windows_that_only_survivors_could_end_in_are_left_out(tmp_path):
    """PointMaze-like: the time limit (1000 steps) outlasts the first windows of 2048 env steps
    over 8 envs (256 steps each), so windows 1-3 can average only short, successful episodes; the
    first window at or past 8 x 1000 env steps is the first that counts. MountainCar's 200-step
    limit is reached in the first window. A run without the recorded limit is taken as it is."""
    from analysis.collect import return_measurement

    survivors_only = np.r_[np.ones(3), np.full(T - 3, 0.5)]
    for s in SEEDS:
        write_run(tmp_path, "repro", "pointmaze_umaze", "none", s, STEPS, survivors_only,
                  summary={"max_episode_steps": 1000, "num_envs": 8})
        write_run(tmp_path, "repro", "mountaincar", "none", s, STEPS, np.full(T, -150.0),
                  summary={"max_episode_steps": 200, "num_envs": 8})
        write_run(tmp_path, "old", "pointmaze_umaze", "none", s, STEPS, survivors_only)
    coll = collect(tmp_path, "repro")
    _, maze = coll.env_data["pointmaze_umaze"].returns("none")
    assert np.isnan(maze[:, :3]).all() and (maze[:, 3:] == 0.5).all()      # STEPS[3] = 8192 >= 8 x 1000
    _, car = coll.env_data["mountaincar"].returns("none")
    assert (car == -150.0).all()
    measured = {m["env"]: m for m in return_measurement(coll)}
    assert measured["pointmaze_umaze"]["windows_left_out"] == 3
    assert measured["pointmaze_umaze"]["first_counted_env_steps"] == 8192
    assert measured["mountaincar"]["windows_left_out"] == 0 and measured["mountaincar"]["time_limit"] == 200
    assert not any(i.kind == "failed" for i in coll.issues)
    old = collect(tmp_path, "old")
    assert (old.env_data["pointmaze_umaze"].returns("none")[1][:, 0] == 1.0).all()
    assert not return_measurement(old)[0]["known"]


def test_committed_time_limits_are_the_envs_own():
    """The time limit each committed run carries is what the env factory says for its settings
    (the Brax envs are checked by their settings alone: importing brax takes half a minute)."""
    from campaign.repro.data import read_data
    from rfig_exp.envs import make_env, parse_env

    limits = {}
    for run in read_data(Path(__file__).resolve().parents[1] / "docs/results/repro/data").values():
        summary = run.record.get("summary")
        if summary:
            env = run.record["config"]["env"]
            limits.setdefault(json.dumps(env, sort_keys=True), set()).add(summary["max_episode_steps"])
    assert limits
    for env, seen in limits.items():
        env = json.loads(env)
        settings = parse_env(env)
        want = settings.episode_length if settings.suite == "brax" else make_env(settings).max_episode_steps
        assert seen == {want}, env


def test_every_env_of_the_reproduction_has_exactly_one_stage_and_repro_sh_runs_them():
    import subprocess

    from campaign.repro.stages import DEEPSEA_SIZES, preset_envs, stage_of, stages

    names = [s.name for s in stages()]
    assert len(names) == len(set(names))
    for preset in ("repro", "repro_minatar", "repro_brax"):
        for env in preset_envs(preset):
            stage = stage_of("repro", env, "rfig", {})
            assert stage in names, env
            if preset != "repro":  # a stage's command sweeps the env it is named for
                assert any(f"env={env}" in c for c in dict((s.name, s.commands) for s in stages())[stage])
    assert stage_of("repro", "deepsea", "rnd", {}) == "core"                # size 20: the core grid's
    assert [stage_of("repro", "deepsea", "rnd", {"env.size": n}) for n in DEEPSEA_SIZES] == [
        f"deepsea-{n}" for n in DEEPSEA_SIZES]
    assert stage_of("sensitivity", "mountaincar", "vime", {"bonus.lr": 1e-5}) == "sens-vime"
    assert stage_of("paper32", "mountaincar", "vime", {}) is None
    root = Path(__file__).resolve().parents[1]
    import sys

    listed = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), "--list"], capture_output=True, text=True,
                            env={"PY": sys.executable, "PATH": "/usr/bin:/bin"}, check=True).stdout.split()
    assert listed == names


def test_repro_sh_refuses_an_unknown_stage_before_it_runs_any(tmp_path):
    """A typo among named stages fails at once, naming the valid stages, before the committed
    runs are restored or the stages before it run."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {"PY": sys.executable, "PATH": "/usr/bin:/bin", "RESULTS": str(tmp_path / "results"), "LANES": "2"}
    out = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), "core", "brax-hoper"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert "unknown stage 'brax-hoper' of campaign repro; valid: core" in out.stderr and "brax-hopper" in out.stderr
    assert "[repro]" not in out.stdout and not (tmp_path / "results").exists()


@pytest.mark.extended
@pytest.mark.skipif(shutil.which("taskset") is None or (os.cpu_count() or 1) < 2, reason="two lanes need two cores")
def test_repro_sh_runs_the_named_stages_once_each_on_one_lane_or_two(tmp_path):
    """Named stages run one after another, or with LANES=2 on two lanes that share them out; each
    named stage once and no other. TRIES=0 gives up on each sweep without training (every stage
    then ends NOT complete, exit 1), so this checks the lanes' bookkeeping alone."""
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    named = ["core", "brax-hopper", "deepsea-30"]
    for lanes in (None, "2"):
        env = {"PY": sys.executable, "PATH": "/usr/bin:/bin", "RESULTS": str(tmp_path / "results"), "TRIES": "0",
               "NO_RESTORE": "1", **({"LANES": lanes} if lanes else {})}
        out = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), *named], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 1, out.stderr
        started = re.findall(r"^(\[lane [AB]\] )?\[repro\] \S+ stage (\S+) started$", out.stdout, re.M)
        assert sorted(s for _, s in started) == sorted(named)
        assert all(bool(lane) == bool(lanes) for lane, _ in started)
        if not lanes:
            assert [s for _, s in started] == named


def test_rfig_and_hashexplo_part_ways_where_their_solved_intervals_separate():
    from campaign.repro.sections import rfig_against_hashexplo

    def cell(k, first, sps=1000.0):
        return {"solved": k, "n": 8, "first": first, "sps": sps, "wall_min": 1.0}

    depth = {(10, "rfig"): cell(8, 5e4), (10, "hashexplo"): cell(8, 4e4),
             (30, "rfig"): cell(7, 2e5), (30, "hashexplo"): cell(6, 3e5),
             (40, "rfig"): cell(8, 3e5, 500.0), (40, "hashexplo"): cell(0, None)}
    text = rfig_against_hashexplo(depth, [10, 30, 40])
    assert text.startswith("**RFIG and #Explo part ways at size 40**: there RFIG solves more seeds")
    assert "size 40: RFIG 8/8 (first at 300k steps), #Explo 0/8, RFIG at 0.50x #Explo's throughput" in text
    del depth[(40, "hashexplo")]
    assert rfig_against_hashexplo(depth, [10, 30, 40]).startswith(
        "**RFIG and #Explo do not part ways up to size 30 at this n**")


def test_the_32_seed_report_names_its_missing_cells_and_puts_the_cpu_verdicts_beside_its_own(tmp_path):
    raw, data, out = tmp_path / "raw", tmp_path / "data", tmp_path / "paper32"
    rng = np.random.default_rng(5)
    for bonus, level in (("none", -200.0), ("rfig", -120.0)):
        for s in range(32):
            write_run(raw, "paper32", "mountaincar", bonus, s, STEPS, np.full(T, level) + rng.normal(0, 1, T),
                      summary={"versions": {"git_commit": "0123456789abcdef", "jax": "0.11.2"},
                               "machine": {"cores": 16, "backend": "gpu", "devices": 1, "device_kind": "H100"}})
    write_run(raw, "paper32", "acrobot", "none", 0, STEPS[:4], np.full(4, -400.0), complete=False)
    counts = export_tree(raw, data, ["paper32"], complete_cells=True)
    assert counts["runs"] == 64 and counts["held_back"] == ["paper32/acrobot/none/base: 0 of 1 seeds complete"]
    text = build(data, out, reps=REPS, experiment="paper32", verdict_reps=REPS,
                 sensitivity=tmp_path / "no-sensitivity-data").read_text()
    assert "58 of 60 cells of `sweep=paper32`, `sweep=paper32_brax`" in text  # 40 non-Brax cells and 20 Brax ones
    assert "- Acrobot: PPO, RFIG, RND, VIME, #Explo" in text
    assert "- Sparse-Hopper (backend=spring): PPO, RFIG, RND, VIME, #Explo" in text  # the CPU grid's physics
    assert "| MountainCar | PPO 32, RFIG 32 | 0123456 | 1 x H100 (gpu), 16 CPU cores | 0.11.2 |" in text
    assert "Verdict at 8 seeds on the CPU (docs/results/repro)" in text
    row = next(line for line in text.splitlines()
               if line.startswith("| PPO+RFIG ... outperforming vanilla PPO (final score) |"))
    assert "**supported**" in row and row.rstrip(" |").endswith(")")  # the CPU report's verdict and value beside
    assert "## Deep exploration" not in text  # nothing of the kind in this data
    # no runs of the 32-seed sensitivity campaign: the report says so, where the claims are and in its section
    pending = "**The 32-seed sensitivity campaign (`sensitivity32`) has no runs yet**"
    assert text.count(pending) == 2 and "## Sensitivity, measured" in text and "sensitivity/index.md" not in text
    assert not any(c["claim"].startswith(("sensitivity:", "beta does not"))
                   for c in json.loads((out / "claims.json").read_text()))


def test_the_32_seed_report_judges_the_sensitivity_claims_on_the_sensitivity32_campaigns_runs(tmp_path):
    raw, data, sens_raw, sens, out = (tmp_path / n for n in ("raw", "data", "sens_raw", "sens", "paper32"))
    rng = np.random.default_rng(6)
    for bonus, level in (("none", -200.0), ("rfig", -120.0)):
        for s in range(8):
            write_run(raw, "paper32", "mountaincar", bonus, s, STEPS, np.full(T, level) + rng.normal(0, 1, T))
    _sensitivity_runs(raw, "sensitivity", seeds=range(3))  # runs of the 8-seed study beside the grid's: not used
    export_tree(raw, data, ["paper32", "sensitivity"])
    _sensitivity_runs(sens_raw, "sensitivity32")
    assert export_tree(sens_raw, sens, ["sensitivity32"])["runs"] == 2 * 8 * 8
    text = build(data, out, reps=REPS, experiment="paper32", verdict_reps=REPS, sensitivity=sens).read_text()
    # 2 of its 16 stages partly run, none whole: the section and both verdicts say the campaign is still running
    progress = ("0 of 16 stages whole, s32-mountaincar-0, s32-deepsea-0 partly run; its complete runs cover "
                "MountainCar 8 seeds, DeepSea 8 seeds")
    assert (f"**The 32-seed sensitivity campaign (`sensitivity32`) is still running** ({progress}; "
            f"`python -m campaign.repro.stages list --campaign sensitivity32 --left ") in text
    assert "its 128 runs in " in text and "From the 32-seed sensitivity campaign" not in text
    assert "has no runs yet" not in text and "(16 runs)" in text  # the index counts the runs of data/ alone
    assert "## Sensitivity, measured" in text and (out / "sensitivity.png").is_file()
    claims = {c["claim"]: c for c in json.loads((out / "claims.json").read_text())}
    ordering = claims["sensitivity: RFIG low, RND medium, VIME and #Explo high (Table 1)"]
    beta = claims["beta does not affect the relative comparison between baselines (bonuses are normalised)"]
    assert ordering["kind"] == "supported" and beta["kind"] != "not measured"
    for c in (ordering, beta):
        assert c["verdict"].endswith(f" (interim; `sensitivity32` still running: {progress})")
        assert f"**{c['verdict']}**" in text
    assert not any("interim" in c["verdict"] for c in claims.values() if c not in (ordering, beta))
    assert "beta in 0.25, 0.5, 1" in beta["measure"]  # the default beta, the reference, among them
    assert json.loads((out / "sensitivity.json").read_text())["rfig"]["mean_range"] < 0.1


def test_a_run_whose_stored_record_gained_fields_since_is_still_the_same_run(tmp_path):
    from campaign.repro.data import read_data, write_data

    write_run(tmp_path / "raw", "repro", "mountaincar", "none", 0, STEPS, np.full(T, -150.0))
    export_tree(tmp_path / "raw", tmp_path / "data")
    held = read_data(tmp_path / "data")
    for run in held.values():  # a later fill-in of a field the run did not record
        run.record["summary"]["max_episode_steps"] = 200
    write_data(held, tmp_path / "data")
    assert export_tree(tmp_path / "raw", tmp_path / "data")["identical"] == 1
    write_run(tmp_path / "other", "repro", "mountaincar", "none", 0, STEPS, np.full(T, -150.0),
              summary={"wall_time_s": 99.0})       # a field both have, with another value
    with pytest.raises(Exception, match="differ"):
        export_tree(tmp_path / "other", tmp_path / "data")


def test_the_32_seed_campaign_runs_each_panel_in_the_blocks_of_sweep_paper_decisive_panels_first():
    import subprocess
    import sys

    from campaign.repro.stages import PAPER32_FIRST, panel_name, paper32_envs, preset_envs, stage_of, stages

    p32 = stages("paper32")
    names = [s.name for s in p32]
    assert len(names) == len(set(names)) == 12 * 3
    assert not set(names) & {s.name for s in stages()}  # one namespace for `commands NAME`
    assert sorted(paper32_envs()) == sorted(preset_envs("paper"))  # the paper's 12 panels, no DeepSea
    seen: dict[str, list[int]] = {}
    for stage in p32:
        (command,) = stage.commands
        words = dict(w.split("=", 1) for w in command.split())
        env, seed = words["env"], int(words["seed"])
        assert words["num_seeds"] == "8" and seed in (8, 16, 24)
        assert words["sweep"] == ("paper32_brax" if env.startswith("sparse_") else "paper32")
        seen.setdefault(env, []).append(seed)
        for s in range(seed, seed + 8):  # every seed the stage makes is attributed to it
            assert stage_of("paper32", env, "rfig", {}, seed=s) == stage.name
    assert all(blocks == [8, 16, 24] for blocks in seen.values())
    # the six decisive panels reach 16, 24 and 32 seeds before any other panel gets a block
    assert [n.rsplit("-", 1)[0] for n in names[:6]] == [f"p32-{panel_name(e)}" for e in PAPER32_FIRST]
    assert all(stage_of("paper32", e, "none", {}, seed=s) is None for e in PAPER32_FIRST for s in (0, 7, 32))
    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), "--list"], capture_output=True, text=True,
                            env={"PY": sys.executable, "PATH": "/usr/bin:/bin", "CAMPAIGN": "paper32"},
                            check=True).stdout.split()
    assert listed == names


def test_the_32_seed_sensitivity_campaign_runs_every_knob_on_four_panels_block_by_block_cheapest_first():
    import subprocess
    import sys

    from campaign.repro.data import read_data
    from campaign.repro.stages import (
        CAMPAIGN_DATA,
        CAMPAIGNS,
        SENS32,
        SENS32_ORDER,
        SENSITIVITY,
        command_overrides,
        panel_name,
        preset_envs,
        sensitivity_runs,
        stage_estimates,
        stage_of,
        stage_sizes,
        stages,
    )

    s32 = stages(SENS32)
    names = [s.name for s in s32]
    assert len(names) == len(set(names)) == 4 * 4
    assert not set(names) & {s.name for c in CAMPAIGNS if c != SENS32 for s in stages(c)}  # one namespace
    # four suites: classic control, PointMaze, DeepSea, MinAtar; every panel's block before any next block
    assert sorted(SENS32_ORDER) == sorted(preset_envs(SENS32)) == [
        "deepsea", "minatar_breakout", "mountaincar", "pointmaze_medium"]
    assert names[:4] == [f"s32-{panel_name(e)}-0" for e in SENS32_ORDER]
    assert [n.rsplit("-", 1)[1] for n in names] == [str(b) for b in (0, 8, 16, 24) for _ in range(4)]
    # one sweep per bonus x knob of SENSITIVITY, declared there only
    knobs = [(b, f"bonus.{k}", v) for b, by_knob in SENSITIVITY.items() for k, v in by_knob.items()]
    runs = sensitivity_runs(SENSITIVITY)
    assert {b: len(r) for b, r in runs.items()} == {"rfig": 15, "rnd": 7, "vime": 7, "hashexplo": 7}
    # each bonus's default run (beta 0.5, the beta claim's reference) comes from a value equal to a default
    assert all({} in r for r in runs.values()) and all({"bonus.beta": "0.25"} in r for r in runs.values())
    for stage in s32:
        words = [command_overrides(line) for line in stage.commands]
        env, seed = words[0][1]["env"], int(words[0][1]["seed"])
        assert stage.name == f"s32-{panel_name(env)}-{seed}"
        assert [(w["bonus"], *next((k, v) for k, v in w.items() if k.startswith("bonus."))) for _, w in words] == knobs
        assert all(p == SENS32 and (w["env"], w["seed"], w["num_seeds"]) == (env, str(seed), "8") for p, w in words)
        assert stage_sizes()[stage.name] == 8 * 36
        for s in range(seed, seed + 8):  # every seed of every run of the stage is attributed to it
            for bonus, overrides in (("rnd", {"bonus.lr": 1e-05}), ("rfig", {}), ("vime", {"bonus.beta": 0.25})):
                assert stage_of(SENS32, env, bonus, {"agent.total_timesteps": 500000, **overrides}, s) == stage.name
    for run in [("deepsea", "rfig", {}, 32), ("pointmaze_umaze", "rfig", {}, 0), ("deepsea", "none", {}, 0),
                ("deepsea", "rnd", {"bonus.lengthscale_scale": 2}, 0),
                ("deepsea", "rnd", {"bonus.lr": 1, "bonus.beta": 1}, 0)]:
        assert stage_of(SENS32, *run) is None, run  # runs no stage of the campaign makes
    assert CAMPAIGN_DATA[SENS32] == "docs/results/sensitivity32/data"
    # the estimate before the runs, from the reproduction's committed data: every stage priced, the
    # cheapest panel first in a block, every block of a panel alike
    est = stage_estimates(SENS32, read_data(Path(__file__).resolve().parents[1] / "docs/results/repro/data"))
    assert all(est[n] and est[n] > 0 for n in names)
    assert [est[n] for n in names[:4]] == sorted(est[n] for n in names[:4])
    assert all(est[n] == est[n.rsplit("-", 1)[0] + "-0"] for n in names)
    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), "--list"], capture_output=True, text=True,
                            env={"PY": sys.executable, "PATH": "/usr/bin:/bin", "CAMPAIGN": SENS32},
                            check=True).stdout.split()
    assert listed == names


def test_the_sensitivity32_estimate_takes_the_8_seed_studys_median_job_else_half_the_main_grids():
    from campaign.repro.data import StoredRun
    from campaign.repro.stages import SENS32, SENSITIVITY, sensitivity_runs, stage_estimates

    def run(experiment, env, bonus, variant, seed, wall):
        summary = {"wall_time_s": wall, "num_seeds_in_process": 8, "status": "complete"}
        return StoredRun(record={"experiment": experiment, "env": env, "bonus": bonus, "variant": variant,
                                 "seed": seed, "variant_overrides": {}, "summary": summary}, rows="")

    stored = {}
    for bonus in SENSITIVITY:
        for s in range(8):
            # the 8-seed study's jobs of 8 vmapped seeds on MountainCar: 1, 2 and 100 minutes (median 2)
            for variant, wall in (("a", 60.0), ("b", 120.0), ("c", 6000.0)):
                r = run("sensitivity", "mountaincar", bonus, variant, s, wall)
                stored[r.key] = r
            for env in ("mountaincar", "pointmaze_medium", "deepsea", "minatar_breakout"):
                r = run("repro", env, bonus, "base", s, 600.0)  # the main grid's 1M-step job: 10 minutes
                stored[r.key] = r
    jobs = sum(map(len, sensitivity_runs(SENSITIVITY).values()))
    est = stage_estimates(SENS32, stored)
    assert est["s32-mountaincar-0"] == est["s32-mountaincar-24"] == pytest.approx(jobs * 2.0)
    assert est["s32-deepsea-8"] == est["s32-breakout-0"] == pytest.approx(jobs * 10.0 * 0.5)
    del stored[("repro", "deepsea", "vime", "base", 0)]
    est = stage_estimates(SENS32, stored)
    assert est["s32-deepsea-0"] is None and est["s32-pointmaze_medium-0"] == pytest.approx(jobs * 5.0)


def _sensitivity_runs(raw, experiment: str, envs=("mountaincar", "deepsea"), seeds=SEEDS):
    """Sensitivity runs whose answers are known: RFIG flat in its knob and in beta, RND swinging with its
    learning rate, RFIG above RND at every beta (the default run: only the study's budget overridden)."""
    common = {"agent.total_timesteps": 500000}
    defaults = {"bonus.lengthscale_scale": 1.0, "bonus.lr": 1e-4, "bonus.beta": 0.5}
    levels = {"rfig": {None: 0.0, ("bonus.lengthscale_scale", 2.0): -1.0, ("bonus.beta", 0.25): 0.0,
                       ("bonus.beta", 1.0): -0.5},
              "rnd": {None: -40.0, ("bonus.lr", 1e-3): -90.0, ("bonus.beta", 0.25): -41.0, ("bonus.beta", 1.0): -40.5}}
    for env in envs:
        for bonus, by_variant in levels.items():
            for variant, level in by_variant.items():
                overrides = {**common, **({variant[0]: variant[1]} if variant else {})}
                for s in seeds:
                    write_run(raw, experiment, env, bonus, s, STEPS, np.full(T, -100.0 + level) + s * 0.1,
                              overrides=overrides, defaults=defaults)


@pytest.mark.extended
def test_the_baselines_campaign_makes_vime_and_the_control_at_32_seeds_and_audits_the_other_bonuses():
    import subprocess
    import sys

    from campaign.repro.stages import (
        AUDIT_AFTER,
        AUDIT_BLOCK_ORDER,
        AUDITED_BONUSES,
        BASELINE_BONUSES,
        BASELINES_ORDER,
        CAMPAIGN_DATA,
        FIXED_BONUS,
        SIGNAL,
        panel_name,
        paper32_envs,
        stage_of,
        stage_sizes,
        stages,
        stages_left,
    )

    bl = stages("baselines")
    names = [s.name for s in bl]
    blocks = [s for s in bl if s.name.startswith("bl-")]
    audit = [s for s in bl if s.name.startswith("sig-") and not s.name.rsplit("-", 1)[-1].isdigit()]
    audit_blocks = [s for s in bl if s.name.startswith("sig-") and s not in audit]
    fixed = [s for s in bl if s.name.startswith("hx-")]
    assert len(names) == len(set(names)) == 12 * 4 * 2 + 12 + 12 * 3 and len(blocks) == len(fixed) == 48
    # the fixed #Explo's blocks come after the VIME and audit stages, panel by panel, one job of 8 seeds each
    assert names[-84:-36] == [s.name for s in fixed] and [s.name for s in fixed[:4]] == [
        f"hx-{panel_name(BASELINES_ORDER[0])}-{b}" for b in (0, 8, 16, 24)]
    # last, the audit's blocks of seeds 8-31: RFIG and RND, two jobs of 8 seeds, panel by panel
    assert names[-36:] == [s.name for s in audit_blocks] and [s.name for s in audit_blocks[:3]] == [
        f"sig-{panel_name(AUDIT_BLOCK_ORDER[0])}-{b}" for b in (8, 16, 24)]
    assert sorted(AUDIT_BLOCK_ORDER) == sorted(paper32_envs())
    for stage in audit_blocks:
        words = dict(w.split("=", 1) for w in stage.commands[0].split())
        assert (words["bonus"], words["num_seeds"], words["experiment"]) == ("rfig,rnd", "8", SIGNAL)
        assert stage_sizes()[stage.name] == 16 and int(words["seed"]) in (8, 16, 24)
        for s in range(int(words["seed"]), int(words["seed"]) + 8):
            assert stage_of(SIGNAL, words["env"], "rfig", {}, seed=s) == stage.name
    assert stage_of(SIGNAL, "minatar_breakout", "rnd", {}, seed=32) is None
    for stage in fixed:
        words = dict(w.split("=", 1) for w in stage.commands[0].split())
        assert (words["bonus"], words["num_seeds"]) == (FIXED_BONUS, "8") and stage_sizes()[stage.name] == 8
        assert stage_of("paper32", words["env"], FIXED_BONUS, {}, seed=int(words["seed"]) + 7) == stage.name
    # its runs at the old default keep their 32-seed stages, as VIME's do
    assert stage_of("paper32", "minatar_breakout", FIXED_BONUS, {"bonus.bin_penalty": 10}, seed=9) == "p32-breakout-8"
    assert sorted(BASELINES_ORDER) == sorted(paper32_envs())
    assert not set(names) & {s.name for c in ("repro", "paper32") for s in stages(c)}
    assert [s.name.rsplit("-", 1)[0] for s in blocks[::4]] == [f"bl-{panel_name(e)}" for e in BASELINES_ORDER]
    # the audit's stages come right after the last block of AUDIT_AFTER, then the other panels' blocks
    first_audit = names.index(audit[0].name)
    assert names[first_audit - 1] == f"bl-{panel_name(AUDIT_AFTER)}-24" and names[first_audit:first_audit + 12] == [
        s.name for s in audit]
    for stage in blocks:
        (command,) = stage.commands
        words = dict(w.split("=", 1) for w in command.split())
        assert words["bonus"] == ",".join(BASELINE_BONUSES) == "vime,noise" and words["num_seeds"] == "8"
        for s in range(int(words["seed"]), int(words["seed"]) + 8):
            for bonus in BASELINE_BONUSES:
                assert stage_of("paper32", words["env"], bonus, {}, seed=s) == stage.name
        assert stage_sizes()[stage.name] == 16
    for stage in audit:
        words = dict(w.split("=", 1) for w in stage.commands[0].split())
        assert (words["bonus"], words["seed"], words["experiment"]) == (",".join(AUDITED_BONUSES), "0", SIGNAL)
        assert stage_of(SIGNAL, words["env"], "rnd", {}, seed=3) == stage.name and stage_sizes()[stage.name] == 24
    # VIME's runs at its old defaults keep their 32-seed stages (or none: seeds 0-7 are the reproduction's)
    old = {"bonus.init_sigma": 0.5, "bonus.kl_ratio_len": 0}
    assert stage_of("paper32", "minatar_breakout", "vime", old, seed=9) == "p32-breakout-8"
    assert stage_of("paper32", "minatar_breakout", "vime", old, seed=3) is None
    assert CAMPAIGN_DATA["baselines"] == CAMPAIGN_DATA["paper32"]
    held = [stored_run("mountaincar", b, s, {"status": "complete"}) for b in BASELINE_BONUSES for s in range(8)]
    held = [replace(r, record={**r.record, "variant": "base", "variant_overrides": {}}) for r in held]
    assert stages_left({r.key: r for r in held}, "baselines") == names[1:]
    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(["bash", str(root / "campaign/scripts/repro.sh"), "--list"], capture_output=True, text=True,
                            env={"PY": sys.executable, "PATH": "/usr/bin:/bin", "CAMPAIGN": "baselines"},
                            check=True).stdout.split()
    assert listed == names


def test_runs_made_before_a_declared_fix_are_filed_under_its_old_values_on_every_way_in(tmp_path):
    """A run made at a fixed bonus's old defaults (as its recorded config says, or made before a key
    existed) never enters the data as a run of the fixed bonus: export, merge and relabel-variant file it
    under the variant of the old values, numbers unchanged; a run at the new defaults, a run that set a
    key itself, and other bonuses' runs stay; a second pass moves nothing, and a different run landing
    on a filed run's key is refused."""
    from campaign.repro.data import DataConflict, file_by_fixes, merge_data, read_data, refile_data, write_data
    from campaign.repro.fixes import FIXES, BaselineFix, fix_of

    vime_old = "bonus.init_sigma=0.5,bonus.kl_ratio_len=0"
    raw, data = tmp_path / "raw", tmp_path / "data"
    for bonus in ("vime", "rnd", "hashexplo"):
        for seed in range(2):
            write_run(raw, "paper32", "mountaincar", bonus, seed, STEPS, np.full(T, -120.0 + seed))
    own = {"bonus.init_sigma": 0.2}  # a run that set one of the old defaults' keys itself keeps its value
    write_run(raw, "sensitivity", "mountaincar", "vime", 0, STEPS, np.full(T, -110.0), overrides=own)
    # runs made at the new defaults (their configs say so) stay under the base variant
    write_run(raw, "paper32", "mountaincar", "vime", 2, STEPS, np.full(T, -100.0),
              defaults={"bonus.init_sigma": 0.05, "bonus.kl_ratio_len": 10})
    write_run(raw, "paper32", "mountaincar", "hashexplo", 2, STEPS, np.full(T, -101.0),
              defaults={"bonus.bin_penalty": 0.1})
    original, _ = read_tree(raw)
    export_tree(raw, data, ["paper32", "sensitivity"])
    after = read_data(data)
    assert len(after) == len(original) == 9
    assert {k for k in after if k[3] == "base"} == {
        ("paper32", "mountaincar", b, "base", s) for b, s in [("rnd", 0), ("rnd", 1), ("vime", 2), ("hashexplo", 2)]}
    for key, run in original.items():
        if key[0] == "sensitivity" or key[4] == 2 or key[2] == "rnd":
            continue
        variant = vime_old if key[2] == "vime" else "bonus.bin_penalty=10"
        moved = after[(*key[:3], variant, key[4])]
        assert moved.rows == run.rows and moved.record["relabelled_variant_from"] == "base"
        assert moved.record["relabelled_variant_note"] == fix_of(key[2]).note
        assert moved.record["summary"]["variant"] == variant
        assert all(moved.record["config"]["bonus"][k.split(".", 1)[1]] == v
                   for k, v in fix_of(key[2]).old_defaults.items())
    kept = after[("sensitivity", "mountaincar", "vime", "bonus.init_sigma=0.2,bonus.kl_ratio_len=0", 0)]
    assert kept.record["config"]["bonus"]["init_sigma"] == 0.2 and kept.record["config"]["bonus"]["kl_ratio_len"] == 0
    # again, by every way in: nothing moves, nothing is added twice
    export_tree(raw, data, ["paper32", "sensitivity"])
    assert read_data(data) == after
    other = tmp_path / "other"
    write_data(dict(original), other)       # an export made before the fixes were declared
    merge_data(other, data)
    assert read_data(data) == after
    assert "0 runs" in refile_data(data) and read_data(data) == after
    # a folder written before the fixes existed is filed by relabel-variant
    old_folder = tmp_path / "old"
    write_data(dict(original), old_folder)
    line = refile_data(old_folder)
    assert line.startswith("5 runs") and vime_old in line and "bonus.bin_penalty=10" in line
    assert read_data(old_folder) == after
    # a run at the old values whose numbers differ from the one filed there is refused, nothing written
    clash = tmp_path / "clash"
    write_run(clash, "paper32", "mountaincar", "hashexplo", 0, STEPS, np.full(T, -50.0))
    with pytest.raises(DataConflict, match="bonus.bin_penalty=10"):
        export_tree(clash, data, ["paper32"])
    assert read_data(data) == after
    assert file_by_fixes(dict(original), fixes=()) == original
    assert {f.bonus for f in FIXES} == {"vime", "hashexplo"}
    with pytest.raises(ValueError, match="bonus.KEY"):
        BaselineFix("vime", {"init_sigma": 0.5}, "x")


def test_throughput_is_tabled_per_device_and_never_divides_a_gpus_rate_by_a_cpus(tmp_path):
    """A cell made partly on a GPU must not show a GPU's steps/s beside a CPU core's PPO as a ratio:
    one table per device (the CPU's first, runs that record no machine apart), medians per cell."""
    from analysis.collect import collect
    from campaign.repro.sections import NOT_RECORDED, speed, speed_md

    def machine(device):
        return {} if device is None else {"machine": {"backend": "gpu" if device != "cpu" else "cpu",
                                                      "device_kind": device}}

    made = [("none", 0, "cpu", 1000.0), ("none", 1, "cpu", 3000.0), ("rfig", 0, "cpu", 500.0),
            ("rfig", 1, "NVIDIA H200", 4e6), ("none", 2, "NVIDIA H200", 8e6), ("rnd", 0, None, 700.0)]
    for bonus, seed, device, sps in made:
        write_run(tmp_path, "paper32", "mountaincar", bonus, seed, STEPS, np.full(T, -120.0),
                  summary={"env_steps_per_second": sps, **machine(device)})
    coll = collect(tmp_path, "paper32")
    measured = speed(coll)
    assert measured == {"cpu": {"mountaincar": {"none": 2000.0, "rfig": 500.0}},
                        "NVIDIA H200": {"mountaincar": {"none": 8e6, "rfig": 4e6}},
                        NOT_RECORDED: {"mountaincar": {"rnd": 700.0}}}
    text = speed_md(measured, coll)
    cpu, gpu, unknown = text.index("**On the CPU**"), text.index("**On NVIDIA H200**"), text.index("record no machine")
    assert cpu < gpu < unknown
    assert "500 (0.25x)" in text[cpu:gpu] and "4,000,000 (0.50x)" in text[gpu:unknown]
    assert "| 700 |" in text[unknown:] and "(" not in text[unknown:].split("\n", 2)[-1]   # no PPO there: no ratio


def test_the_stages_left_are_those_the_data_lacks_a_run_of_whichever_machine_made_the_rest(tmp_path, capsys):
    """A fresh machine's lanes take their stage list from the committed data: a stage is left while
    any of its 40 runs is missing or incomplete there, and done when every run is, GPU-made or not."""
    from campaign.repro.stages import main as stages_main
    from campaign.repro.stages import stages, stages_left

    def run(env, bonus, seed, backend="cpu", status="complete"):
        return stored_run(env, bonus, seed, {"status": status, "machine": {"backend": backend}})

    bonuses = PAPER_BONUSES
    runs = [run("mountaincar", b, s) for b in bonuses for s in range(8, 16)]                       # all 40
    runs += [run("acrobot", b, s, "gpu" if b != "none" else "cpu") for b in bonuses for s in range(8, 16)]
    runs += [run("minatar_breakout", b, s) for b in bonuses for s in range(8, 16) if (b, s) != ("vime", 15)]
    runs += [run("minatar_asterix", b, s, status="running" if (b, s) == ("rfig", 8) else "complete")
             for b in bonuses for s in range(8, 16)]
    runs += [run(e, b, s) for e in ("mountaincar", "acrobot") for b in bonuses for s in range(0, 8)]  # seeds 0-7
    left = stages_left({r.key: r for r in runs})
    everything = [s.name for s in stages("paper32")]
    assert left == [n for n in everything if n not in ("p32-mountaincar-8", "p32-acrobot-8")]
    assert "p32-breakout-8" in left and "p32-asterix-8" in left
    assert stages_left({}) == everything
    assert stages_main(["list", "--left", str(tmp_path)]) == 2            # only the 32-seed campaign has fixed stages
    assert "--campaign paper32" in capsys.readouterr().err
    assert stages_main(["list", "--campaign", "paper32", "--left", str(tmp_path / "absent")]) == 2
    assert "no data folder" in capsys.readouterr().err


def test_the_sensitivity32_verdicts_are_interim_until_its_last_stage_is_whole():
    """campaign_progress counts a stage whole only with all of its runs complete, and while one is not,
    interim_sensitivity marks the two sensitivity claims' verdicts, and only theirs."""
    from campaign.claims.claim_rows import Claim
    from campaign.claims.sensitivity_claims import SENSITIVITY_CLAIMS
    from campaign.repro.data import StoredRun
    from campaign.repro.progress import campaign_progress, interim_sensitivity
    from campaign.repro.stages import SENS32_ORDER, SENSITIVITY, sensitivity_runs
    from rfig_exp.config.variants import variant_name

    def run(env, bonus, overrides, seed, status="complete"):
        return StoredRun({"experiment": "sensitivity32", "env": env, "bonus": bonus, "seed": seed,
                          "variant": variant_name(overrides), "variant_overrides": overrides,
                          "summary": {"status": status}}, rows="")

    every = [run(e, b, o, s) for e in SENS32_ORDER for b, made in sensitivity_runs(SENSITIVITY).items()
             for o in made for s in range(32)]
    whole = campaign_progress({r.key: r for r in every}, "sensitivity32")
    assert whole.whole and len(whole.stages) == 16 and whole.seeds == dict.fromkeys(SENS32_ORDER, 32)
    last = every[-1]
    cut = [r for r in every if r is not last] + [run(last.record["env"], last.record["bonus"],
                                                     last.record["variant_overrides"], 31, status="running")]
    progress = campaign_progress({r.key: r for r in cut}, "sensitivity32")
    assert progress.left == progress.partly == ("s32-breakout-24",) and not progress.whole
    assert progress.text() == ("15 of 16 stages whole, s32-breakout-24 partly run; its complete runs cover "
                               "MountainCar 32 seeds, PointMaze-Medium 32 seeds, DeepSea 32 seeds, "
                               "Breakout 32 seeds")
    assert campaign_progress({}, "sensitivity32").text() == "0 of 16 stages whole; its complete runs cover no runs"
    claims = [Claim(words, "m", "v", "supported") for words in (*SENSITIVITY_CLAIMS, "RFIG outperforms PPO")]
    marked = interim_sensitivity(claims, progress, "sensitivity32")
    assert [c.verdict for c in marked] == \
        [f"supported (interim; `sensitivity32` still running: {progress.text()})"] * 2 \
        + ["supported"]
    assert interim_sensitivity(claims, whole, "sensitivity32") == claims == interim_sensitivity(claims, None, "x")


def test_the_reproductions_runs_enter_the_32_seed_grid_as_they_are_and_only_the_papers_cells(tmp_path):
    from campaign.repro.cli import main as repro_main
    from campaign.repro.data import read_data

    raw, repro, p32 = tmp_path / "raw", tmp_path / "repro", tmp_path / "p32"
    for s in range(2):
        write_run(raw, "repro", "mountaincar", "rfig", s, STEPS, np.full(T, -120.0 - s))
        write_run(raw, "repro", "deepsea", "rfig", s, STEPS, np.full(T, 0.5))       # not a panel of the paper
        write_run(raw, "repro", "mountaincar", "rfig", s, STEPS, np.full(T, -130.0), overrides={"bonus.reg": 10})
    write_run(raw, "sensitivity", "mountaincar", "rfig", 0, STEPS, np.full(T, -110.0))
    export_tree(raw, repro)
    args = ["merge", "--from", str(repro), "--data", str(p32), "--relabel", "repro:paper32"]
    assert repro_main(args) == 0
    held = read_data(p32)
    assert sorted(held) == [("paper32", "mountaincar", "rfig", "base", s) for s in range(2)]
    source = read_data(repro)
    for key, run in held.items():
        before = source[("repro", *key[1:])]
        assert run.rows == before.rows and run.record["origin"] == before.record["origin"]
        assert run.record["relabelled_from"] == "repro" and run.record["summary"]["experiment"] == "paper32"
    assert repro_main(args) == 0 and read_data(p32).keys() == held.keys()  # again: kept once, identical
    assert repro_main(["merge", "--from", str(repro), "--data", str(p32), "--relabel", "repro:nope"]) == 1


def test_the_made_by_table_gives_a_gpu_its_own_row_and_each_gpu_process_once():
    from campaign.repro.made_by import stage_costs

    def run(seed, backend, wall, commit):
        machine = {"backend": backend, "device_kind": "NVIDIA H200" if backend == "gpu" else "cpu"}
        summary = {"status": "complete", "wall_time_s": wall, "finished_at": f"2026-11-27T18:{seed:02d}:00Z",
                   "machine": machine}
        return stored_run("mountaincar", "rfig", seed, summary, {"commit": commit, "machine": backend})

    runs = [run(s, "cpu", 600.0, "aaaaaaa") for s in range(8, 16)]      # one CPU job of seeds 8-15
    runs += [run(s, "gpu", 30.0, "bbbbbbb") for s in range(16, 32)]     # one GPU job of seeds 16-31
    costs = stage_costs({r.key: r for r in runs})
    assert set(costs) == {("p32-mountaincar-8", "aaaaaaa"), ("paper32 on a GPU (NVIDIA H200)", "bbbbbbb")}
    cpu, gpu = costs[("p32-mountaincar-8", "aaaaaaa")], costs[("paper32 on a GPU (NVIDIA H200)", "bbbbbbb")]
    assert (cpu["runs"], cpu["wall_s"]) == (8, 600.0)
    assert (gpu["runs"], gpu["wall_s"], gpu["finished"]) == (16, 30.0, "2026-11-27T18:31:00Z")


def test_a_resumed_job_counts_the_training_time_of_every_attempt_and_is_marked():
    """A job cut short and resumed records only its last process's wall time; its checkpoint carries
    the training time of every attempt, so the stage counts that plus the last compile, and the table
    marks the stage, while a job that ran once counts its wall time."""
    from campaign.repro.made_by import process_seconds, stage_costs, stage_coverage, stage_rows

    def run(bonus, seed, wall, resumed=(), train=0.0, compile_s=0.0):
        summary = {"status": "complete", "wall_time_s": wall, "train_time_s": train, "compile_time_s": compile_s,
                   "resumed_from_windows": list(resumed), "finished_at": "2026-11-27T18:00:00Z",
                   "machine": {"backend": "cpu", "device_kind": "cpu"}}
        return stored_run("mountaincar", bonus, seed, summary, {"commit": "aaaaaaa", "machine": "cpu"})

    once = [run(b, s, 120.0, train=100.0, compile_s=15.0) for b in PAPER_BONUSES[:-1] for s in range(8, 16)]
    cut = [run(PAPER_BONUSES[-1], s, 300.0, resumed=[28], train=900.0, compile_s=50.0) for s in range(8, 16)]
    assert process_seconds(once[0].record["summary"]) == 120.0 and process_seconds(cut[0].record["summary"]) == 950.0
    stored = {r.key: r for r in once + cut}
    (cost,) = stage_costs(stored).values()
    assert (cost["wall_s"], cost["resumed"]) == (4 * 120.0 + 950.0, 1)
    meta = {"campaigns": [{"commit": "aaaaaaa", "machine": "cpu", "stages": {"p32-mountaincar-8": {"before": 20.0}}}]}
    (row,) = stage_rows(meta, stage_costs(stored), stage_coverage(stored))
    assert row[7] == f"{(4 * 120 + 950) / 60:.0f} ‡"
    (plain,) = stage_rows(meta, stage_costs({r.key: r for r in once}), stage_coverage(stored))
    assert "‡" not in plain[7]


def test_a_stage_that_made_part_of_its_runs_gets_no_ratio_and_the_data_counts_a_gpus_runs():
    """The stage table's estimate is of a whole stage: a stage measured on part of its runs (cut
    short, or its other runs made on a GPU) must not show measured / estimated, and its
    "in the data" column counts every machine's runs of its cells."""
    from campaign.repro.made_by import stage_costs, stage_coverage, stage_rows

    def run(env, bonus, seed, backend, wall):
        summary = {"status": "complete", "wall_time_s": wall, "finished_at": "2026-11-27T18:00:00Z",
                   "machine": {"backend": backend, "device_kind": "NVIDIA H200" if backend == "gpu" else "cpu"}}
        return stored_run(env, bonus, seed, summary, {"commit": "aaaaaaa", "machine": backend})

    bonuses = PAPER_BONUSES
    runs = [run("mountaincar", b, s, "cpu", 60.0 + i) for i, b in enumerate(bonuses) for s in range(8, 16)]
    runs += [run("acrobot", b, s, "cpu", 100.0) for b in bonuses[:1] for s in range(8, 16)]   # 8 of 40
    runs += [run("acrobot", b, s, "gpu", 5.0) for b in bonuses[1:] for s in range(8, 16)]     # the rest
    stored = {r.key: r for r in runs}
    meta = {"campaigns": [{"commit": "aaaaaaa", "machine": "cpu",
                           "stages": {"p32-mountaincar-8": {"before": 5.0}, "p32-acrobot-8": {"before": 5.0}}}]}
    rows = {r[0]: r for r in stage_rows(meta, stage_costs(stored), stage_coverage(stored))}
    full, part = rows["p32-mountaincar-8"], rows["p32-acrobot-8"]
    assert full[1:3] == ["40", "40/40"] and full[8] == f"{(5 * 60 + 10) / 60 / 5.0:.2f}"
    assert part[1:3] == ["8", "40/40"] and part[5] == "—" and part[8] == "—"
    assert part[7] == "2"   # its own measured minutes stay: one CPU job of 100 s


def test_the_stage_table_names_no_machine_for_a_stage_not_run_and_shows_after_estimates_only_when_recorded():
    """A stage that made none of its runs must not carry the campaign's starting machine as if it
    ran there, and the two "after" columns appear only when some stage has an after estimate."""
    from campaign.repro.build import _provenance_md
    from campaign.repro.made_by import stage_costs, stage_coverage

    summary = {"status": "complete", "wall_time_s": 60.0, "finished_at": "2026-11-28T01:00:00Z",
               "machine": {"backend": "cpu", "device_kind": "cpu"}}
    runs = [stored_run("mountaincar", b, s, summary, {"commit": "aaaaaaa", "machine": "2 CPU cores (AMD EPYC)"})
            for b in PAPER_BONUSES for s in range(8, 16)]
    stored = {r.key: r for r in runs}
    costs, coverage = stage_costs(stored), stage_coverage(stored)

    def table(after):
        stages = {"p32-mountaincar-8": {"before": 5.0, "after": after}, "p32-acrobot-8": {"before": 5.0}}
        meta = {"campaigns": [{"commit": "aaaaaaa", "machine": "2 CPU cores (Intel Xeon)", "stages": stages}]}
        text = _provenance_md(meta, costs, coverage, ["mountaincar", "acrobot"])
        rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines()
                if line.startswith("| p32-")}
        return text, rows

    text, rows = table(after=None)
    assert "estimated after" not in text and "measured / after" not in text
    assert rows["p32-mountaincar-8"][4] == "2 CPU cores (AMD EPYC)"
    assert rows["p32-acrobot-8"][1:5] == ["0", "0/40", "aaaaaaa", "—"]
    text, rows = table(after=4.0)
    assert "| estimated after (min) | measured / after |" in text
    assert rows["p32-mountaincar-8"][-2:] == ["4", f"{(5 * 60) / 60 / 4.0:.2f} |"]


def test_a_campaign_still_running_dates_the_report_by_its_newest_run_and_says_it_runs():
    """A campaign with no end yet must not print "None": the report is dated by the newest run in
    the data (not the build's clock, so rebuilds stay byte-identical), and its line says it runs."""
    from campaign.repro.build import _as_of, _campaign_span

    def run(seed, finished_at):
        return stored_run("mountaincar", "rfig", seed,
                          {"status": "complete", "wall_time_s": 60.0, "finished_at": finished_at})

    stored = {r.key: r for r in (run(8, "2026-11-28T01:00:00Z"), run(9, "2026-11-28T02:00:00Z"), run(0, None))}
    running = {"campaigns": [{"started": "2026-11-27T14:57:21Z", "finished": None, "wall_time": None}]}
    assert _as_of(running, stored).startswith("2026-11-28T02:00:00Z (the newest run's end")
    assert _campaign_span(running["campaigns"][0]) == "from 2026-11-27T14:57:21Z, still running"
    done = {"campaigns": [{"started": "2026-11-27T14:57:21Z", "finished": "2026-11-29T00:00:00Z", "wall_time": "9 h"}]}
    assert _as_of(done, stored).startswith("2026-11-29T00:00:00Z (the runs' end")
    assert _campaign_span(done["campaigns"][0]) == "2026-11-27T14:57:21Z to 2026-11-29T00:00:00Z, 9 h"
    assert _campaign_span({}) == "times not recorded" and _as_of({}, {}) == "unknown"


def test_the_claims_are_called_interim_only_while_the_grid_fills():
    from campaign.repro.build import _claims_sections

    parts = {"claims": [], "comparisons": [], "beyond": [], "timing_md": "", "backend_md": "", "experiment": "repro"}
    assert "still filling" in "\n".join(_claims_sections({**parts, "filling": True}))
    assert "still filling" not in "\n".join(_claims_sections({**parts, "filling": False}))


def test_an_export_of_complete_runs_takes_a_finished_block_while_the_next_block_of_its_cell_runs(tmp_path):
    """The 32-seed grid runs a cell in blocks of 8 seeds: seeds 16-23 done while 24-31 run. Export by
    cells holds the done block back until the running one ends (and loses it if the machine goes
    first); export by runs takes it, and only it."""
    from campaign.repro.data import read_data

    raw = tmp_path / "raw"
    for s in range(16, 24):
        write_run(raw, "paper32", "mountaincar", "rfig", s, STEPS, np.full(T, -120.0 - s))
    for s in range(24, 32):   # the next block, under way
        write_run(raw, "paper32", "mountaincar", "rfig", s, STEPS[:4], np.full(4, -150.0), complete=False)
    by_cells = export_tree(raw, tmp_path / "cells", ["paper32"], complete_cells=True)
    assert by_cells["runs"] == 0 and by_cells["held_back"] == ["paper32/mountaincar/rfig/base: 8 of 16 seeds complete"]
    by_runs = export_tree(raw, tmp_path / "runs", ["paper32"], complete_runs=True)
    assert by_runs["runs"] == 8 and by_runs["held_back"] == [
        "paper32/mountaincar/rfig/base: 8 of 16 seeds complete; seeds 24-31 left"]
    held = read_data(tmp_path / "runs")
    assert sorted(k[4] for k in held) == list(range(16, 24)) and all(r.complete for r in held.values())
    with pytest.raises(ValueError):
        export_tree(raw, tmp_path / "both", ["paper32"], complete_cells=True, complete_runs=True)


def test_the_earlier_forecasts_are_set_against_what_the_seeds_showed(tmp_path):
    from campaign.claims.claim_rows import Claim
    from campaign.repro.cells import forecasts_md

    earlier = tmp_path / "claims.json"
    earlier.write_text(json.dumps([
        {"claim": "A", "value": "0.44", "verdict": "undecided at n = 8 (estimate against the claim; an effect of this "
                                                   "size is resolved at about 12 seeds)"},
        {"claim": "B", "value": "0.9", "verdict": "supported"}]))
    now = [Claim("A", "m", "0.49", "no effect larger than d = 0.2"), Claim("B", "m", "0.9", "supported")]
    text = forecasts_md(now, earlier, "8 seeds")
    assert "| A | estimate against the claim, about 12 seeds | no effect larger than d = 0.2 |" in text
    assert "| B |" not in text and "50% power" in text
    assert forecasts_md(now, tmp_path / "absent.json", "8 seeds") == ""


def test_a_campaign_restarted_at_a_later_commit_counts_its_stages_runs_at_both():
    from campaign.repro.made_by import stage_costs, stage_coverage, stage_rows

    def run(bonus, seed, commit):
        summary = {"status": "complete", "wall_time_s": 60.0, "finished_at": "2026-11-28T10:00:00Z",
                   "machine": {"backend": "cpu", "device_kind": "cpu"}}
        made = stored_run("mountaincar", bonus, seed, summary, {"commit": commit, "machine": "cpu"})
        return replace(made, record={**made.record, "variant": "base", "variant_overrides": {}})

    runs = [run("vime", s, "aaaaaaa") for s in range(8)] + [run("noise", s, "bbbbbbb") for s in range(8)]
    stored = {r.key: r for r in runs}
    meta = {"campaigns": [{"commit": "bbbbbbb", "commits": ["aaaaaaa", "bbbbbbb"], "machine": "cpu",
                           "stages": {"bl-mountaincar-0": {"before": 2.0}}}]}
    (row,) = stage_rows(meta, stage_costs(stored), stage_coverage(stored))
    assert row[:4] == ["bl-mountaincar-0", "16", "16/16", "aaaaaaa, bbbbbbb"] and row[8] == "1.00"
    from campaign.repro.build import _provenance_md

    text = _provenance_md({"campaigns": [{**meta["campaigns"][0], "label": "the baselines"}]}, stage_costs(stored),
                          stage_coverage(stored), ["mountaincar"])
    assert "**the baselines** (commits aaaaaaa, bbbbbbb, cpu;" in text     # every commit it ran at, not the first


def test_gpu_parts_are_the_stages_left_as_whole_cells_one_sweep_per_argument_set():
    """The GPU script's work comes from the stages the data lacks: a block stage becomes its cells at
    all 32 seeds (the script restores the committed runs, so a job runs only the missing ones), an
    audit stage keeps its seeds and experiment, and stages that differ only in their env share a sweep."""
    from campaign.repro.stages import gpu_parts

    names = ["bl-mountaincar-0", "bl-mountaincar-8", "sig-acrobot", "bl-walker2d-16", "sig-ant", "hx-breakout-0",
             "hx-acrobot-8", "hx-ant-24", "sig-breakout"]
    assert gpu_parts(names, "paper32") == [
        "paper32 env=mountaincar bonus=vime,noise",
        "signal env=acrobot,minatar_breakout bonus=rfig,rnd,hashexplo seed=0 num_seeds=8",
        "paper32 env=minatar_breakout,acrobot bonus=hashexplo"]
    assert gpu_parts(names, "paper32_brax") == [
        "paper32 env=sparse_walker2d bonus=vime,noise",
        "signal env=sparse_ant bonus=rfig,rnd,hashexplo seed=0 num_seeds=8",
        "paper32 env=sparse_ant bonus=hashexplo"]
    assert gpu_parts([], "paper32") == []
    with pytest.raises(ValueError, match="p32-ant-8"):
        gpu_parts(["p32-ant-8"], "paper32")


def test_as_run_gpu_parts_keep_the_first_block_left_of_8_seeds_and_our_vime_apart():
    """The grid as run keeps its blocks: the first block any named stage is in (the 8-seed grid of
    every panel before any panel's next seeds), one sweep for the preset's bonuses and one for our
    VIME under the protocol, the panels that differ only in env together."""
    from campaign.repro.stages import gpu_parts

    names = ["ar-hopper-0", "ar-ant-0", "ar-hopper-8", "ar-breakout-16"]
    preset, ours = gpu_parts(names, "paper32_as_run", "paper32_as_run")
    assert preset == "paper32_as_run env=sparse_hopper,sparse_ant seed=0 num_seeds=8"
    assert ours.startswith("paper32_as_run env=sparse_hopper,sparse_ant bonus=vime ")
    assert "bonus.bonus_per=transition" in ours and ours.endswith("seed=0 num_seeds=8")
    assert gpu_parts(["ar-hopper-8", "ar-breakout-16"], "paper32_as_run", "paper32_as_run")[0] == (
        "paper32_as_run env=sparse_hopper seed=8 num_seeds=8")
    with pytest.raises(ValueError, match="bl-mountaincar-0"):
        gpu_parts(["bl-mountaincar-0"], "paper32_as_run", "paper32_as_run")
    with pytest.raises(ValueError, match="not repro"):
        gpu_parts([], "paper32", "repro")


def test_a_stage_s_bonuses_come_from_its_commands():
    """A stage's bonuses (and so its size and its estimate) are read from its own commands: a
    ``bonus=`` override where it has one, else its preset's bonus values."""
    from campaign.presets import preset_values
    from campaign.repro.stages import (
        AUDIT_BLOCK_BONUSES,
        AUDITED_BONUSES,
        BASELINE_BONUSES,
        FIXED_BONUS,
        Stage,
        command,
        stage_bonuses,
        stages,
    )

    by_name = {s.name: s for s in stages("baselines") + stages("paper32")}
    assert stage_bonuses(by_name["bl-acrobot-8"]) == BASELINE_BONUSES
    assert stage_bonuses(by_name["hx-acrobot-8"]) == (FIXED_BONUS,)
    assert stage_bonuses(by_name["sig-acrobot"]) == AUDITED_BONUSES
    assert stage_bonuses(by_name["sig-acrobot-16"]) == AUDIT_BLOCK_BONUSES
    assert stage_bonuses(by_name["p32-acrobot-8"]) == tuple(preset_values("paper32", "bonus"))
    two = Stage("two", (command("sweep=paper32 env=acrobot bonus=rnd,none"), command("sweep=paper32 bonus=none,vime")))
    assert stage_bonuses(two) == ("rnd", "none", "vime")


def test_the_report_command_judges_at_rule_5s_resamples_unless_told_otherwise():
    """``--reps`` draws the figures; the verdicts' count is its own flag, rule 5's REPS by default."""
    from campaign.claims.constants import REPS as RULE_5
    from campaign.claims.resampling import quick_verdicts_warning
    from campaign.repro.cli import parser

    args = parser().parse_args(["build", "--reps", "500"])
    assert args.reps == 500 and args.verdict_reps == RULE_5 == 20000
    assert quick_verdicts_warning(RULE_5) == [] and quick_verdicts_warning(2000)
