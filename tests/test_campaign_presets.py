"""The campaign's sweep presets in a config folder of its own (campaign/conf/, campaign.presets): its
commands name that folder on Hydra's search path, launch.py composes them from there, and the
users' presets in conf/sweep/ are the only ones a command without it sees."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from campaign import presets
from campaign.repro.stages import CAMPAIGNS, split_command, stages
from rfig_exp.config.folders import CONF_DIR, group_options
from rfig_exp.launch.preflight import PreflightError, expand_jobs, help_text

ROOT = Path(__file__).resolve().parents[1]


def test_the_campaigns_presets_are_its_own_and_shadow_none_of_conf():
    own = presets.preset_names()
    assert {"paper32", "paper32_brax", "repro", "repro_minatar", "repro_brax", "deepsea_scaling",
            "sensitivity"} <= set(own)
    # a name of both folders would compose conf/'s file (Hydra takes the first folder's)
    assert not set(own) & set(group_options("sweep")), "a campaign preset shadowed by one of conf/sweep/"
    assert {"smoke", "coverage", "paper"} <= set(group_options("sweep"))  # the users' presets stay
    assert presets.preset_file("paper") == CONF_DIR / "sweep" / "paper.yaml"
    assert presets.preset_file("repro") == presets.CONF_DIR / "sweep" / "repro.yaml"
    assert presets.CONF_DIR == ROOT / "campaign" / "conf"
    assert presets.SEARCHPATH == "hydra.searchpath=[file://campaign/conf]"  # relative: the commands run from ROOT


def test_every_stage_command_names_the_campaigns_folder_and_a_preset_there():
    for campaign in CAMPAIGNS:
        for stage in stages(campaign):
            for command in stage.commands:
                assert command.split()[0] == presets.SEARCHPATH, (stage.name, command)
                preset, overrides = split_command(command)
                assert presets.preset_file(preset).is_file() and preset in presets.preset_names(), command
                assert not any(o.startswith(("sweep=", "hydra.searchpath=")) for o in overrides), command


def _plan(line: list[str]) -> list[list[str]]:
    with contextlib.redirect_stdout(io.StringIO()):  # the plan's notes (seeds grouped, Brax split)
        return expand_jobs(line, multirun=True, gpu=False)


def test_a_command_of_each_campaign_preset_plans_as_launch_py_would_and_needs_the_folder():
    first = {}
    for campaign in CAMPAIGNS:
        for stage in stages(campaign):
            for command in stage.commands:
                first.setdefault(split_command(command)[0], command)
    assert set(first) == set(presets.preset_names())
    for preset, command in first.items():
        jobs = _plan(command.split())
        assert jobs and all(f"sweep={preset}" in job for job in jobs), command
        # the jobs carry no search path: a run's overrides (the manifest's) are what they were
        assert not any(o.startswith("hydra.searchpath") for job in jobs for o in job)
    with pytest.raises(PreflightError) as refused:
        _plan(["sweep=repro"])
    assert refused.value.lines[0].startswith("sweep=repro is not a known sweep preset; valid: coverage, paper, smoke")
    assert "hydra.searchpath=[file://DIR]" in refused.value.lines[0]
    listed = help_text([presets.SEARCHPATH])
    assert all(f"\n  {name} " in listed for name in presets.preset_names())
    assert "\n  repro " not in help_text()


def test_every_sensitivity32_sweep_composes_and_makes_each_bonuss_default_and_beta_runs(monkeypatch):
    """Planned as launch.py plans them (rfig_exp.launch.preflight.plan_launch, as campaign/estimate_sweep.py
    does): every sweep of the first block composes; a knob's value equal to the bonus's default makes
    the default run (its variant drops the override), so every bonus has its run at beta 0.5, the beta
    claim's reference, beside 0.25 and 1; each planned run's stage is the one that planned it, which makes
    as many runs as stage_sizes says. Each later block is the first's sweeps with its own seed."""
    from collections import defaultdict

    from campaign.estimate_sweep import launch_plan
    from campaign.repro.reproducible import block_command
    from campaign.repro.stages import SENS32, SENSITIVITY, stage_of, stage_sizes

    monkeypatch.chdir(ROOT)
    s32 = stages(SENS32)
    first = {s.name.rsplit("-", 1)[0]: s for s in s32[:4]}
    for stage in s32[:4]:
        made: dict[str, set] = defaultdict(set)
        runs = 0
        for line in stage.commands:
            preset, words = split_command(line)
            for job in launch_plan(preset, words, say=None).jobs:
                for spec in (part.spec for part in job.parts):
                    assert (spec.experiment, spec.seeds, spec.requested_timesteps) == (SENS32, tuple(range(8)), 500000)
                    assert stage_of(SENS32, spec.env_name, spec.bonus_name, spec.variant_overrides,
                                    spec.seeds[-1]) == stage.name
                    made[spec.bonus_name].add(tuple(sorted((k, v) for k, v in spec.variant_overrides.items()
                                                           if k != "agent.total_timesteps")))
                    runs += len(spec.seeds)
        assert runs == stage_sizes()[stage.name] and set(made) == set(SENSITIVITY)
        for bonus, variants in made.items():
            assert {(), (("bonus.beta", 0.25),), (("bonus.beta", 1.0),)} <= variants, (stage.name, bonus)
    for stage in s32[4:]:
        panel, block = stage.name.rsplit("-", 1)
        assert stage.commands == tuple(line.replace(" seed=0 ", f" seed={block} ")
                                       for line in first[panel].commands)
    # a rerun of a committed block takes its stage's sweep of that bonus: the knob's own, and for the
    # run at the defaults the bonus's first knob, whose values hold the default
    stage, args = block_command(SENS32, "deepsea", "rnd", list(range(8, 16)), {"agent.total_timesteps": 500000})
    assert stage == "s32-deepsea-8" and "bonus=rnd" in args and "bonus.lr=1e-5,1e-4,1e-3" in args
    _, args = block_command(SENS32, "deepsea", "vime", list(range(8, 16)), {"bonus.beta": 0.25})
    assert "bonus=vime" in args and "bonus.beta=0.25,1" in args and "seed=8" in args


def test_the_campaigns_folder_goes_first_on_a_sweeps_own_search_path(monkeypatch):
    monkeypatch.chdir(ROOT)  # where the campaign's relative search path points at its folder
    line = presets.with_searchpath(["sweep=repro", "hydra.searchpath=[file://my_conf]", "env=acrobot"])
    assert line == [f"hydra.searchpath=['file://{presets.CONF_DIR}','file://my_conf']", "sweep=repro", "env=acrobot"]
    # the campaign's own relative entry is not named twice
    assert presets.with_searchpath([presets.SEARCHPATH, "sweep=repro"]) == [
        f"hydra.searchpath=['file://{presets.CONF_DIR}']", "sweep=repro"]
    assert presets.preset_values("repro_minatar", "env") == ["minatar_asterix", "minatar_freeway",
                                                             "minatar_space_invaders"]


def test_a_users_search_path_in_extra_joins_the_campaigns_folder_instead_of_replacing_it(tmp_path, monkeypatch):
    from campaign.repro.stages import with_extra

    monkeypatch.chdir(ROOT)
    stage = next(s for s in stages("baselines") if s.name == "hx-mountaincar-0").commands[0]
    assert with_extra(stage, []) == stage and with_extra(stage, ["x=1"]) == f"{stage} x=1"
    mine = f"hydra.searchpath=[file://{tmp_path}]"
    line = with_extra(stage, ["results_dir=r", mine]).split()
    assert line[0] == f"hydra.searchpath=['file://{presets.CONF_DIR}','file://{tmp_path}']"
    assert line[1:] == [*stage.split()[1:], "results_dir=r"]
    assert _plan(line)  # the stage's preset still composes
    with pytest.raises(PreflightError, match="sweep=paper32 is not a known sweep preset"):
        _plan([*stage.split(), mine])  # what Hydra makes of the words put side by side


@pytest.mark.extended
def test_repro_sh_passes_extra_with_a_search_path_and_the_stage_still_finds_its_preset(tmp_path):
    """The stage runs for real up to launch.py's checks: an impossible value in EXTRA is what stops it
    (exit 2, not retried), not a preset lost to the user's search path."""
    import subprocess
    import sys

    env = {"PY": sys.executable, "PATH": "/usr/bin:/bin", "RESULTS": str(tmp_path / "results"), "TRIES": "1",
           "NO_RESTORE": "1", "CAMPAIGN": "baselines",
           "EXTRA": f"hydra.searchpath=[file://{tmp_path}] agent.total_timesteps=-5"}
    out = subprocess.run(["bash", str(ROOT / "campaign/scripts/repro.sh"), "hx-mountaincar-0"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert "[repro] bad configuration: not retried" in out.stdout, out.stdout + out.stderr
    assert "not a known sweep preset" not in out.stdout + out.stderr
    assert "agent.total_timesteps" in out.stdout + out.stderr
    assert f"'file://{tmp_path}'" in out.stdout  # the launched command, as the log shows it
