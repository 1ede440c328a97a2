"""Each difference alone, as the as-run report reads it: runs filed by the difference their overrides
switch on (the ablation's own stage commands), a bonus a difference leaves alone keeping its as-written
runs, the change of P(X > Y) against a plain double loop, and the attribution naming the setting that
moved a comparison and no other."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from campaign.repro import ablation_tables as A
from campaign.repro.data import StoredRun, read_data
from campaign.repro.protocol_stages import ABLATION_DIFFERENCES, ablation_difference, ablation_stages
from campaign.repro.stage_parts import ABLATION, command_overrides, panel_name

ROOT = Path(__file__).resolve().parents[1]
ENV = "acrobot"
NOT_OVERRIDES = {"env", "bonus", "seed", "num_seeds"}
# what sweep=as_run_ablation gives every run beyond its stage's words, as the runs' records carry it
PRESET_OVERRIDES = {"agent.eval_episodes": 128}


def _stage_overrides(env: str) -> dict[str, dict[str, str]]:
    """setting -> the variant overrides its stage's runs carry (the stage command's words beyond the
    env, the bonuses and the seeds)."""
    out = {}
    for stage in ablation_stages():
        prefix, suffix = "abl-", f"-{panel_name(env)}"
        if stage.name.startswith(prefix) and stage.name.endswith(suffix):
            _, words = command_overrides(stage.commands[0])
            out[stage.name[len(prefix):-len(suffix)]] = {**PRESET_OVERRIDES, **{k: v for k, v in words.items()
                                                                            if k not in NOT_OVERRIDES}}
    return out


def _run(env: str, bonus: str, overrides: dict, seed: int, final: float, complete: bool = True) -> StoredRun:
    variant = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))  # one per setting, in every process
    record = {"experiment": ABLATION, "env": env, "bonus": bonus, "variant": variant,
              "seed": seed, "variant_overrides": overrides,
              "summary": {"status": "complete" if complete else "running"}}
    rows = f"env_step,eval/episode_return\n24576,-400.0\n49152,{final}\n"
    return StoredRun(record, rows)


def _scores(seeds=range(8)):
    """As-written runs of every bonus on Acrobot, and every difference's runs of the bonuses it
    changes: RFIG scores -100 + seed as written, -60 + seed under ``mix`` (its comparison with PPO
    moves), the rest equal to as written. PPO: -90 + seed."""
    settings = _stage_overrides(ENV)
    stored = {}
    for setting, overrides in settings.items():
        bonuses = A.BONUSES if setting == A.AS_WRITTEN else ABLATION_DIFFERENCES[setting][2]
        for b, s in itertools.product(bonuses, seeds):
            final = {"none": -90.0, "rfig": -60.0 if setting == "mix" else -100.0}.get(b, -95.0) + s
            run = _run(ENV, b, overrides, s, final)
            stored[run.key] = run
    return A.ablation_scores(stored), settings


def test_runs_are_filed_by_the_difference_their_stage_switches_on():
    a, settings = _scores()
    assert set(settings) == {A.AS_WRITTEN, "episodic", "mix", "details", "rfig", "vime", "hashexplo"}
    assert a.envs == [ENV]
    assert a.settings(ENV) == [A.AS_WRITTEN, "episodic", "mix", "details", "rfig", "vime", "hashexplo"]
    assert not a.left_out
    # PPO under mix is its as-written runs; RFIG's are mix's own
    assert np.array_equal(a.runs(ENV, "none", "mix"), a.runs(ENV, "none", A.AS_WRITTEN))
    assert np.array_equal(a.runs(ENV, "rfig", "mix"), -60.0 + np.arange(8))
    assert a.changes(ENV, "rfig", "mix") and not a.changes(ENV, "none", "mix") and a.changes(ENV, "none", "details")


def test_an_incomplete_run_or_one_without_evaluation_is_left_out_with_why():
    overrides = _stage_overrides(ENV)[A.AS_WRITTEN]
    running = _run(ENV, "rfig", overrides, 0, -80.0, complete=False)
    unscored = StoredRun({**_run(ENV, "none", overrides, 1, 0.0).record}, "env_step,episode_return\n24576,-80\n")
    stray = _run(ENV, "rfig", {"agent.lr": "0.1"}, 2, -80.0)
    a = A.ablation_scores({r.key: r for r in (running, unscored, stray)})
    why = sorted(w for _, w in a.left_out)
    assert why == ["it records no evaluation episodes (eval/episode_return)", "its overrides switch on no single "
                   "difference", "not complete"]
    assert a.scores == {}


def _loop_poi(x, y) -> float:
    wins = 0.0
    for u in x:
        for v in y:
            wins += 1.0 if u > v else 0.5 if u == v else 0.0
    return wins / (len(x) * len(y))


def test_the_change_of_p_against_a_plain_loop_and_the_attribution_names_only_the_mover():
    a, _ = _scores()
    x0, y0 = a.runs(ENV, "rfig", A.AS_WRITTEN), a.runs(ENV, "none", A.AS_WRITTEN)
    for setting in a.settings(ENV)[1:]:
        x, y = a.runs(ENV, "rfig", setting), a.runs(ENV, "none", setting)
        d = A.comparison_change(a, ENV, "rfig", "none", setting)
        assert d.point == pytest.approx(_loop_poi(x, y) - _loop_poi(x0, y0), abs=1e-12)
    mix = A.comparison_change(a, ENV, "rfig", "none", "mix")
    assert mix.point == pytest.approx(_loop_poi(-60 + np.arange(8), -90 + np.arange(8)) - _loop_poi(
        -100 + np.arange(8), -90 + np.arange(8)))
    assert A.moves(mix, A.bonferroni(0.95, 6))
    text = A.attribution(a, "PPO+RFIG ... outperforming vanilla PPO (final score)", [ENV, "mountaincar"])
    assert text.startswith("Acrobot: mix against PPO +")
    assert A.attribution(a, "RFIG maintains stable performance without catastrophic failures", [ENV]).startswith(
        "Acrobot: mix (RFIG's own score) +0.50")
    assert "episodic" not in text and "details" not in text and "(1 panel not ablated yet)" in text
    # the subject's own score: RFIG under mix against its as-written runs, P - 1/2
    own = A.comparison_change(a, ENV, "rfig", None, "mix")
    assert own.point == pytest.approx(_loop_poi(-60 + np.arange(8), -100 + np.arange(8)) - 0.5)
    assert A.attribution(a, "no such claim", [ENV]) == "—"
    assert A.attribution(a, "RFIG competitively matches or exceeds RND", ["mountaincar"]) == "not ablated yet"


def test_the_bonferroni_level_and_the_panel_table():
    assert A.bonferroni(0.95, 5) == pytest.approx(0.99)
    assert A.bonferroni(0.95, 0) == pytest.approx(0.95)
    a, _ = _scores()
    table = A.panel_table_md(a, ENV)
    lines = table.splitlines()
    assert lines[0].startswith("| Setting | PPO | RFIG |")
    mix = next(line for line in lines if line.startswith("| `mix`"))
    cells = [c.strip() for c in mix.strip("|").split("|")]
    assert cells[1] == "·"  # PPO keeps its as-written runs under mix
    assert cells[2] == f"{float(np.mean(sorted(-60.0 + np.arange(8))[2:6])):.3g} (n=8)"
    assert cells[-1].startswith("**+")  # moved, in bold
    details = next(line for line in lines if line.startswith("| `details`"))
    assert "**" not in details  # nothing moved
    vime = [c.strip() for c in next(line for line in lines if line.startswith("| `vime`")).strip("|").split("|")]
    assert vime[-2:] == ["·", "·"]  # changes neither RFIG nor PPO


def test_the_section_on_the_committed_data_names_what_is_left():
    as_run = read_data(ROOT / "docs/results/paper32_as_run/data")
    a = A.ablation_scores({}, as_run)
    assert a.envs == [] and a.scores == {}  # the as-run row only beside an ablated panel
    text = A.ablation_section_md(a)
    assert f"No stage of the ablation is in the data yet ({len(ablation_stages())} stages to run)" in text
    b, _ = _scores()
    with_as_run = A.ablation_scores({k: r for k, r in _as_stored(b).items()}, as_run)
    assert A.AS_RUN_ROW in with_as_run.settings(ENV)
    seeds = with_as_run.scores[(ENV, "rfig", A.AS_RUN_ROW)]
    assert len(seeds) >= 8 and all(math.isfinite(v) for v in seeds.values())
    assert f"abl-paper-{panel_name('mountaincar')}" in A.stages_left(with_as_run)


def _as_stored(a: A.AblationScores) -> dict:
    settings = _stage_overrides(ENV)
    out = {}
    for (env, bonus, setting), per in a.scores.items():
        for seed, final in per.items():
            run = _run(env, bonus, settings[setting], seed, final)
            out[run.key] = run
    return out


def test_the_presets_own_settings_switch_on_no_difference():
    # every run of sweep=ablation_brax carries the as-written backend; the brax difference changes it
    brax = {"agent.eval_episodes": 128, "env.backend": "spring"}
    hopper = "sparse_hopper"
    assert ablation_difference(hopper, "rfig", brax) == A.AS_WRITTEN
    assert ablation_difference(hopper, "rfig", {**brax, "env.backend": "generalized",
                                                "env.milestone_distance": 5.0}) == "brax"
    assert ablation_difference(hopper, "rfig", {**brax, "bonus.prior_scale": 1024.0}) == "rfig"
    assert ablation_difference(ENV, "none", {"agent.eval_episodes": 128}) == A.AS_WRITTEN
    assert ablation_difference(ENV, "none", {"agent.eval_episodes": 64}) is None  # not the preset's value
    # a setting is read past only at the value the run's own preset gives it: Acrobot's preset sets no backend
    assert ablation_difference(ENV, "none", brax) is None


def test_the_committed_runs_are_each_filed_by_their_stage():
    stored = read_data(A.ABLATION_DATA)
    a = A.ablation_scores(stored)
    assert stored and a.left_out == []
    assert sum(len(seeds) for seeds in a.scores.values()) == len(stored)
    assert a.envs and all(A.AS_WRITTEN in a.settings(e) for e in a.envs)
    names = {st.name for st in ablation_stages()}
    assert all(f"abl-{s}-{panel_name(e)}" in names for e, _, s in a.scores)


def test_a_stage_is_left_until_every_bonus_it_runs_has_all_its_seeds():
    from campaign.repro.protocol_stages import ABLATION_SEEDS

    whole, _ = _scores(seeds=range(ABLATION_SEEDS))
    done = {f"abl-{s}-{panel_name(ENV)}" for s in whole.settings(ENV)}
    assert not done & set(A.stages_left(whole))  # every stage of the panel is whole
    assert len(A.stages_left(whole)) == len(ablation_stages()) - len(done)
    # a stage stopped after its first bonus (details: PPO ran, the rest did not) is still to run
    details = f"abl-details-{panel_name(ENV)}"
    partial = A.AblationScores({k: v for k, v in whole.scores.items() if k[2] != "details" or k[1] == "none"})
    assert details in A.stages_left(partial)
    # and so is one whose every bonus lacks a seed
    short = A.AblationScores({k: (dict(list(v.items())[:-1]) if k[2] == "mix" else v) for k, v in whole.scores.items()})
    assert f"abl-mix-{panel_name(ENV)}" in A.stages_left(short) and details not in A.stages_left(short)


def test_a_comparison_every_pair_decides_prints_the_exact_test_not_a_zero_width_interval():
    from math import comb

    x, y = np.arange(16.0), np.arange(16.0) + 100.0
    cell = A._poi_cell(x, y, 0.95)
    assert cell.startswith("0.00 (every pair one way; exact p ") and f"{2 / comb(32, 16):.1g}" in cell
    assert A._poi_cell(y, x, 0.95).startswith("1.00 (every pair one way")
    overlapping = A._poi_cell(x, x + 3.0, 0.95)
    assert overlapping.startswith("0.") and "[" in overlapping and "every pair" not in overlapping


def test_each_defect_of_their_code_is_measured_by_its_own_stage_or_said_unmeasured():
    a, _ = _scores()
    text = A.defects_md(a)
    vime = next(line for line in text.splitlines() if line.startswith("- `vime`"))
    # the synthetic VIME scores -95 + seed both ways: IQM -91.5 over seeds 0-7, no change
    assert "Acrobot: VIME -91.5 (n=8) as written, -91.5 (n=8) with it" in vime and "+0.00 [" in vime
    without = A.AblationScores({k: v for k, v in a.scores.items() if k[2] != "vime"})
    assert A.defects_md(without).count("not measured yet") == 1
    assert "- `vime`" in A.defects_md(without) and "not measured yet" in next(
        line for line in A.defects_md(without).splitlines() if line.startswith("- `vime`"))


def test_a_panel_half_run_is_not_said_to_be_moved_by_no_setting():
    """A panel whose runs so far make none of a claim's comparisons (only PPO's as-written runs: the
    first part of its first stage) counts as not ablated for that claim; one with some differences
    run says how many of its planned differences the reading covers, counting only whole stages."""
    from campaign.repro.protocol_stages import ABLATION_SEEDS

    a, settings = _scores(seeds=range(ABLATION_SEEDS))
    first = {k: v for k, v in a.scores.items() if k[2] == A.AS_WRITTEN and k[1] == "none"}
    ppo_only = A.AblationScores(first)
    assert ppo_only.envs == [ENV]
    assert A.attribution(ppo_only, "RFIG competitively matches or exceeds RND", [ENV]) == "not ablated yet"
    assert A.attribution(ppo_only, "PPO+RFIG ... outperforming vanilla PPO (final score)",
                         [ENV, "mountaincar"]) == "not ablated yet"
    planned = len(settings) - 1
    some = A.AblationScores({k: v for k, v in a.scores.items() if k[2] in (A.AS_WRITTEN, "mix")})
    text = A.attribution(some, "PPO+RFIG ... outperforming vanilla PPO (final score)", [ENV])
    assert text.startswith("Acrobot: mix against PPO +") and text.endswith(f"(1 of {planned} differences run so far)")
    whole = A.attribution(a, "RFIG competitively matches or exceeds RND", [ENV])
    assert whole.startswith("Acrobot: mix against RND +") and "so far" not in whole  # every difference run
    # a stage stopped after some of its bonuses (details: PPO and RFIG in, the rest not) is not yet run
    half = A.AblationScores({k: v for k, v in a.scores.items() if k[2] != "details" or k[1] in ("none", "rfig")})
    text = A.attribution(half, "RFIG competitively matches or exceeds RND", [ENV])
    assert text.endswith(f"({planned - 1} of {planned} differences run so far)")
    # and so is one whose bonuses each lack a seed
    short = A.AblationScores({k: (dict(list(v.items())[:-1]) if k[2] == "mix" else v) for k, v in a.scores.items()})
    assert A.attribution(short, "RFIG competitively matches or exceeds RND", [ENV]).endswith(
        f"({planned - 1} of {planned} differences run so far)")
