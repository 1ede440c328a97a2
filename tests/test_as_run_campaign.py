"""The grid as the authors' code ran it (campaign ``paper32_as_run``): its stages, what each sweep
composes to, which stage made a run, and the estimate before a stage runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from campaign import presets
from campaign.repro.data import StoredRun
from campaign.repro.reproducible import block_command
from campaign.repro.stages import (
    AS_RUN,
    AS_RUN_ORDER,
    CAMPAIGN_DATA,
    CAMPAIGNS,
    as_run_estimates,
    command_overrides,
    panel_name,
    paper32_envs,
    stage_of,
    stage_sizes,
    stages,
)
from rfig_exp.config.folders import CONF_DIR

ROOT = Path(__file__).resolve().parents[1]
BONUSES = ["none", "rfig", "rnd", "vime", "hashexplo", "noise"]


def _compose(words: dict[str, str]):
    overrides = [f"{k}={v}" for k, v in words.items() if k not in ("seed", "num_seeds")]
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return compose("config", [presets.SEARCHPATH.replace("file://campaign/conf", f"file://{presets.CONF_DIR}"),
                                  f"sweep={AS_RUN}", *overrides])


def test_the_8_seed_grid_of_every_panel_comes_before_any_panel_has_more():
    ar = stages(AS_RUN)
    names = [s.name for s in ar]
    assert len(names) == len(set(names)) == 12 * 4
    others = {s.name for c in CAMPAIGNS if c != AS_RUN for s in stages(c)}
    assert not set(names) & others  # one namespace for `commands NAME`
    assert sorted(AS_RUN_ORDER) == sorted(paper32_envs())
    assert names[:12] == [f"ar-{panel_name(e)}-0" for e in AS_RUN_ORDER]
    assert [n.rsplit("-", 1)[1] for n in names] == [str(b) for b in (0, 8, 16, 24) for _ in range(12)]
    assert CAMPAIGN_DATA[AS_RUN] == "docs/results/paper32_as_run/data"
    listed = subprocess.run(["bash", str(ROOT / "campaign/scripts/repro.sh"), "--list"], capture_output=True,
                            text=True, env={"PY": sys.executable, "PATH": "/usr/bin:/bin", "CAMPAIGN": AS_RUN},
                            check=True).stdout.split()
    assert listed == names


def test_each_stage_runs_the_six_bonuses_as_run_and_our_vime_under_the_same_protocol():
    theirs = yaml.safe_load((CONF_DIR / "protocol" / "bonus" / "as_run_vime.yaml").read_text())
    ours = yaml.safe_load((CONF_DIR / "bonus" / "vime.yaml").read_text())
    changed = {k for k in theirs if theirs[k] != ours[k]}
    assert {"target", "bonus_per", "loss", "hidden"} <= changed
    sizes = stage_sizes()
    for stage in stages(AS_RUN):
        grid, own = stage.commands
        preset, words = command_overrides(grid)
        env, seed = words["env"], int(words["seed"])
        assert preset == AS_RUN and words == {"env": env, "seed": words["seed"], "num_seeds": "8"}
        assert presets.preset_values(AS_RUN, "bonus") == BONUSES
        preset, own_words = command_overrides(own)
        assert preset == AS_RUN and own_words["bonus"] == "vime" and own_words["env"] == env
        assert {k.removeprefix("bonus.") for k in own_words if k.startswith("bonus.")} == changed
        for k in changed:
            assert yaml.safe_load(own_words[f"bonus.{k}"]) == ours[k], (stage.name, k)
        assert sizes[stage.name] == 8 * (len(BONUSES) + 1)
        for s in range(seed, seed + 8):  # every seed of both sweeps is the stage's
            assert stage_of(AS_RUN, env, "rnd", {}, seed=s) == stage.name
            assert stage_of(AS_RUN, env, "vime", {"bonus.bonus_per": "transition"}, seed=s) == stage.name
    assert stage_of(AS_RUN, "acrobot", "none", {}, seed=32) is None
    assert stage_of(AS_RUN, "deepsea", "none", {}, seed=0) is None


@pytest.mark.parametrize("env", ["sparse_ant", "minatar_freeway", "acrobot"])
def test_the_preset_selects_the_authors_protocol_and_the_own_vime_only_its_bonus(env):
    stage = next(s for s in stages(AS_RUN) if f"env={env} " in s.commands[0])
    _, words = command_overrides(stage.commands[0])
    vime_theirs = _compose({**words, "bonus": "vime"})
    _, own_words = command_overrides(stage.commands[1])
    vime_ours = _compose(own_words)
    for cfg in (vime_theirs, vime_ours):
        assert cfg.experiment == AS_RUN and cfg.num_seeds == 8
        assert (cfg.agent.advantage_mix, cfg.agent.intrinsic_return, cfg.agent.eval_episodes) == (
            "separate", "episodic", 128)
        assert cfg.bonus.beta == 1.0
        if env.startswith(("sparse_", "minatar_")):
            assert cfg.agent.total_timesteps == 2_500_000
        if env.startswith("sparse_"):
            assert cfg.env.backend == "generalized"
    assert (vime_theirs.bonus.bonus_per, vime_theirs.bonus.target) == ("batch", "rolled_batch")
    assert (vime_ours.bonus.bonus_per, vime_ours.bonus.target) == ("transition", "next_obs")


def test_a_rerun_of_our_vime_takes_the_sweep_that_made_it():
    overrides = {"bonus.target": "next_obs", "bonus.bonus_per": "transition", "bonus.hidden": [256, 256],
                 "bonus.activation": "relu", "bonus.action_input": "onehot", "bonus.num_samples": 1,
                 "bonus.lr": 0.0001, "bonus.init_sigma": 0.05, "bonus.weight_init": "he", "bonus.kl_ratio_len": 10,
                 "bonus.loss": "variational"}
    stage, args = block_command(AS_RUN, "acrobot", "vime", list(range(8, 16)), overrides)
    assert stage == "ar-acrobot-8" and "bonus.bonus_per=transition" in args and "seed=8" in args
    stage, args = block_command(AS_RUN, "acrobot", "vime", list(range(8, 16)), {})
    assert stage == "ar-acrobot-8" and not any(a.startswith("bonus.") for a in args)


def _run(experiment, env, bonus, seed, wall, per_process, variant="base", status="complete"):
    summary = {"wall_time_s": wall, "num_seeds_in_process": per_process, "status": status}
    record = {"experiment": experiment, "env": env, "bonus": bonus, "variant": variant, "seed": seed,
              "variant_overrides": {}, "summary": summary}
    return StoredRun(record=record, rows="")


def test_the_estimate_scales_the_reproductions_jobs_and_then_uses_the_campaigns_own():
    stored = {}
    for b in ("none", "rfig", "rnd", "vime", "hashexplo"):
        for env in ("acrobot", "sparse_hopper", "sparse_halfcheetah"):
            for s in range(8):  # one job of 8 vmapped seeds: 600 s of wall time
                run = _run("repro", env, b, s, 600.0, 8)
                stored[run.key] = run
    for b, wall in (("none", 2400.0), ("rfig", 3600.0)):  # the backend check: one seed per process
        for s in range(8):
            run = _run("backend", "sparse_halfcheetah", b, s, wall, 1)
            stored[run.key] = run
    # backend ratio: (8 x 2400 + 8 x 3600) / (600 + 600) s = 40; a stage's 7 jobs of 10 minutes each
    est = as_run_estimates(stored, {})
    assert est["ar-acrobot-0"] == pytest.approx(70.0)  # the same budget as the paper's
    assert est["ar-hopper-0"] == pytest.approx(70.0 * 2.5 * 40)
    assert est["ar-breakout-0"] is None  # no job of the reproduction to scale
    held = {}
    for b, n in (("none", 8), ("vime", 16)):  # a whole first stage: 56 runs, 30 s each
        for s in range(8):
            for k in range(n // 8 if b == "vime" else 1):
                for bonus in ((b,) if b == "vime" else BONUSES[:3] + BONUSES[4:]):
                    run = _run(AS_RUN, "acrobot", bonus, s, 30.0, 1, variant=f"v{k}")
                    held[run.key] = run
    assert len(held) == 56
    measured = as_run_estimates(stored, held)
    assert measured["ar-acrobot-8"] == measured["ar-acrobot-0"] == pytest.approx(56 * 0.5)
    partial = {k: v for k, v in list(held.items())[:-1]}
    assert as_run_estimates(stored, partial)["ar-acrobot-8"] == pytest.approx(70.0)


# --------------------------------------------------------------------------- each difference alone


def _flat(cfg) -> dict:
    from omegaconf import OmegaConf

    def walk(tree, prefix=""):
        for k, v in tree.items():
            if isinstance(v, dict):
                yield from walk(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v

    return dict(walk(OmegaConf.to_container(cfg)))


def _parsed(override: str):
    """An override's value as Hydra reads it from a command line."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides([override])[0].value()


@pytest.mark.parametrize("env,bonus", [("mountaincar", "rfig"), ("minatar_breakout", "vime"),
                                       ("sparse_ant", "hashexplo"), ("sparse_hopper", "none")])
def test_every_difference_switched_on_together_is_the_authors_protocol(env, bonus):
    from campaign.repro.stages import ABLATION, ABLATION_DIFFERENCES, ablation_preset, difference_overrides

    on = [w for name, (_, _, bonuses) in ABLATION_DIFFERENCES.items() if bonus in bonuses
          for w in difference_overrides(name, env)]
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        search = f"hydra.searchpath=[file://{presets.CONF_DIR}]"
        ablated = _flat(compose("config", [search, f"sweep={ablation_preset(env)}", f"env={env}", f"bonus={bonus}",
                                           *on]))
        as_run = _flat(compose("config", [f"env={env}", f"bonus={bonus}", "protocol=as_run"]))
    differ = {k for k in as_run if ablated.get(k) != as_run[k]}
    # a difference that changes no computation of this bonus is not switched on for it (the
    # intrinsic return and the advantage mix of a run without a bonus)
    idle = {k for name, (_, keys, bonuses) in ABLATION_DIFFERENCES.items() if bonus not in bonuses for k in keys}
    assert differ <= {"experiment", "num_seeds"} | idle, sorted(differ)
    assert ablated["experiment"] == ABLATION and ablated["agent.eval_episodes"] == 128


def test_each_difference_is_its_protocol_files_keys_on_the_panels_and_bonuses_it_changes():
    from campaign.repro.stages import ABLATION, ABLATION_DIFFERENCES, ABLATION_SEEDS, ablation_preset

    abl = stages(ABLATION)
    sizes = stage_sizes()
    names = [s.name for s in abl]
    assert len(names) == len(set(names)) and not set(names) & {s.name for c in CAMPAIGNS if c != ABLATION
                                                                for s in stages(c)}
    as_run_agent = yaml.safe_load((CONF_DIR / "protocol" / "as_run.yaml").read_text())
    for stage in abl:
        (line,) = stage.commands
        preset, words = command_overrides(line)
        env, difference = words["env"], stage.name.split("-")[1]
        assert preset == ablation_preset(env) and (words["seed"], words["num_seeds"]) == ("0", str(ABLATION_SEEDS))
        on = {k: _parsed(f"{k}={v}") for k, v in words.items() if k not in ("env", "bonus", "seed", "num_seeds")}
        if difference == "paper":
            assert not on and "bonus" not in words
            assert sizes[stage.name] == ABLATION_SEEDS * 5
        else:
            _, _, bonuses = ABLATION_DIFFERENCES[difference]
            assert words["bonus"].split(",") == list(bonuses) and sizes[stage.name] == 16 * len(bonuses)
            assert on
            for key, value in on.items():  # each value is the protocol's, read here from its file
                if difference in ("rfig", "vime", "hashexplo"):
                    file = CONF_DIR / "protocol" / "bonus" / f"as_run_{difference}.yaml"
                    want = yaml.safe_load(file.read_text())[key.removeprefix("bonus.")]
                elif difference in ("budget", "brax"):
                    want = yaml.safe_load((CONF_DIR / "protocol" / "env" / f"as_run_{env}.yaml").read_text())
                    for part in key.split("."):
                        want = want[part]
                else:
                    group, leaf = key.split(".")
                    want = as_run_agent[group][leaf]
                assert value == want, (stage.name, key)
        typed = {k: v for k, v in on.items()}
        for bonus in words.get("bonus", "none,rfig,rnd,vime,hashexplo").split(","):
            for seed in (0, 15):
                assert stage_of(ABLATION, env, bonus, typed, seed=seed) == stage.name
        assert stage_of(ABLATION, env, "rfig", typed, seed=16) is None
    by_panel: dict[str, set[str]] = {}
    for name in names:
        _, difference, panel = name.split("-", 2)
        by_panel.setdefault(panel, set()).add(difference)
    agent_and_bonus = {"paper", "episodic", "mix", "details", "rfig", "vime", "hashexplo"}
    assert by_panel["mountaincar"] == by_panel["pointmaze_medium"] == agent_and_bonus
    assert by_panel["breakout"] == agent_and_bonus | {"budget"}
    assert by_panel["ant"] == by_panel["hopper"] == agent_and_bonus | {"budget", "brax"}
    assert names[0] == "abl-paper-pointmaze_medium"
