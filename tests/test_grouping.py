"""A sweep's one-seed jobs grouped into vmapped jobs (rfig_exp.launch.grouping), as a user runs it."""

from __future__ import annotations

import csv

import pytest

from rfig_exp.launch import grouping
from rfig_exp.launch.preflight import PreflightError, expand_jobs, preflight

try:
    from test_launch import TINY, launch
except ImportError:  # tests/ imported as a package
    from tests.test_launch import TINY, launch

from conftest import assert_same_to_float32_rounding, find_run


def test_seeds_of_a_cell_become_consecutive_vmapped_jobs():
    jobs = [["env=a", "bonus=rfig", f"seed={s}"] for s in range(5)] + \
           [["env=a", "bonus=rnd", f"seed={s}"] for s in (0, 1, 7)]
    assert grouping.group_seeds(jobs, 2) == [
        ["env=a", "bonus=rfig", "seed=0", "num_seeds=2"], ["env=a", "bonus=rfig", "seed=2", "num_seeds=2"],
        ["env=a", "bonus=rfig", "seed=4"],
        ["env=a", "bonus=rnd", "seed=0", "num_seeds=2"], ["env=a", "bonus=rnd", "seed=7"]]
    assert grouping.group_seeds(jobs, None)[0] == ["env=a", "bonus=rfig", "seed=0", "num_seeds=5"]
    assert grouping.group_seeds(jobs, 1) == jobs


def test_jobs_that_already_vmap_seeds_or_differ_otherwise_are_left_alone():
    explicit = [["env=a", f"seed={s}", "num_seeds=8"] for s in (0, 8)]
    assert grouping.group_seeds(explicit, None) == explicit
    # A preset's num_seeds=8 (sweep=paper with 'seed=range(0,32,8)') is not a one-seed job either.
    preset = [["env=a", f"seed={s}"] for s in (0, 8, 16)]
    assert grouping.group_seeds(preset, None, default_num_seeds=8) == preset
    lrs = [["agent.lr=0.1", "seed=0"], ["agent.lr=0.2", "seed=0"]]
    assert grouping.group_seeds(lrs, None) == lrs
    assert grouping.group_seeds([["env=a"]], None) == [["env=a"]]


def test_seeds_per_job_auto_is_all_on_a_gpu_and_eight_on_a_cpu():
    assert grouping.resolve("auto", gpu=True) is None
    assert grouping.resolve("auto", gpu=False) == grouping.CPU_SEEDS_PER_JOB == 8
    assert grouping.resolve(3, gpu=True) == 3
    for bad in (0, -1, "many", 2.5, True):
        with pytest.raises(ValueError, match="seeds_per_job"):
            grouping.resolve(bad, gpu=False)


def test_preflight_expands_the_card_command_into_grouped_jobs(capsys):
    jobs = expand_jobs(["env=minatar_breakout", "bonus=rfig,rnd", "seed=range(32)", "seeds_per_job=8"], True)
    assert len(jobs) == 8
    assert {j[-1] for j in jobs} == {"num_seeds=8"}
    assert sorted(int(o.split("=")[1]) for j in jobs for o in j if o.startswith("seed=")) == [0, 0, 8, 8, 16, 16,
                                                                                          24, 24]
    assert "64 jobs that differ only in their seed run as 8 jobs" in capsys.readouterr().out
    assert len(expand_jobs(["bonus=rfig", "seed=range(4)", "seeds_per_job=1"], True)) == 4
    with pytest.raises(PreflightError, match="seeds_per_job=0 must be auto or an integer"):
        expand_jobs(["seed=range(4)", "seeds_per_job=0"], True)


def _rows(run):
    with open(run / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in csv.DictReader(f)]


@pytest.mark.extended
def test_a_grouped_sweep_writes_every_seed_exactly_as_it_would_alone(tmp_path):
    args = ["env=cartpole", "bonus=none", *TINY, f"results_dir={tmp_path}"]
    out = launch("-m", *args, "seed=range(3)", "seeds_per_job=2", "experiment=grouped")
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "[sweep] 3 runs as 2 compiled jobs" in log and "vmapped over seed" in log
    assert "2 job(s) in" in log and "2 completed" in log
    alone = launch(*args, "seed=1", "experiment=alone")
    assert alone.returncode == 0, alone.stderr[-3000:]
    grouped = {s: find_run(tmp_path, "cartpole", "none", seed=s, experiment="grouped") for s in range(3)}
    assert all((run / "summary.json").is_file() for run in grouped.values())
    # The same numbers to float32 rounding (XLA orders a vmapped reduction differently), as in
    # tests/test_training.py's vmapped-against-alone check; and the same windows.
    mine, theirs = _rows(grouped[1]), _rows(find_run(tmp_path, "cartpole", "none", seed=1, experiment="alone"))
    assert_same_to_float32_rounding(mine, theirs)
    assert _rows(grouped[0]) != mine  # different seeds really differ


# A preset of a config folder of one's own (hydra.searchpath): the sparse Brax envs x every bonus x 8
# vmapped seeds on brax's spring backend, as a reproduction's preset may run them.
SPRING_PRESET = ("# @package _global_\n# Sparse Brax on spring.\nnum_seeds: 8\nenv:\n  backend: spring\nhydra:\n"
                 "  sweeper:\n    params:\n      env: sparse_halfcheetah,sparse_ant,sparse_hopper,sparse_walker2d\n"
                 "      bonus: none,rfig,rnd,vime,hashexplo\n")


def test_brax_jobs_on_a_cpu_train_one_seed_per_process(monkeypatch, capsys, tmp_path):
    # The 8-seed Brax wedge (README, XLA CPU wedges): on a CPU a sweep never vmaps Brax seeds on
    # the generalized backend (the envs' default); spring keeps them vmapped.
    jobs = [["env=sparse_ant", f"seed={s}"] for s in range(3)] + [["env=cartpole", f"seed={s}"] for s in range(3)]
    cpu, lines = grouping.plan(jobs, "auto", gpu=False, default_env="mountaincar")
    assert [j for j in cpu if "env=sparse_ant" in j] == [["env=sparse_ant", f"seed={s}", "num_seeds=1"]
                                                         for s in range(3)]
    assert ["env=cartpole", "seed=0", "num_seeds=3"] in cpu, "other envs are still grouped"
    assert len(lines) == 2 and "Brax jobs (sparse_ant) train one seed per process" in lines[1]
    gpu, lines = grouping.plan(jobs, "auto", gpu=True, default_env="mountaincar")
    assert ["env=sparse_ant", "seed=0", "num_seeds=3"] in gpu and not any("Brax" in line for line in lines)
    # an explicit num_seeds, and a default env or num_seeds that makes a job Brax of 8 seeds
    assert grouping.one_seed_per_brax_job([["seed=8", "num_seeds=2", "bonus=rfig"]], False, "sparse_hopper") == [
        ["bonus=rfig", "seed=8", "num_seeds=1"], ["bonus=rfig", "seed=9", "num_seeds=1"]]
    assert len(grouping.one_seed_per_brax_job([["env=sparse_ant"]], False, "mountaincar", default_num_seeds=8)) == 8
    assert grouping.one_seed_per_brax_job([["env=cartpole", "num_seeds=8"]], False, "x") == [
        ["env=cartpole", "num_seeds=8"]]
    # the backend decides: the job's env.backend, else the sweep's, else the env's default (generalized)
    eight = [["env=sparse_ant", "seed=0", "num_seeds=8"]]
    assert len(grouping.one_seed_per_brax_job(eight, False, "mountaincar")) == 8
    assert grouping.one_seed_per_brax_job([eight[0] + ["env.backend=spring"]], False, "mountaincar") == [
        eight[0] + ["env.backend=spring"]]
    assert grouping.one_seed_per_brax_job(eight, False, "mountaincar", default_backend="spring") == eight
    assert len(grouping.one_seed_per_brax_job([eight[0] + ["env.backend=generalized"]], False, "mountaincar",
                                              default_backend="spring")) == 8
    # as a user runs it on this CPU: the generalized backend splits, said once; the spring preset does not
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "brax_spring.yaml").write_text(SPRING_PRESET)
    preset = [f"hydra.searchpath=[file://{tmp_path}]", "sweep=brax_spring"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    capsys.readouterr()
    jobs = expand_jobs([*preset, "env=sparse_ant", "env.backend=generalized"], True)
    assert len(jobs) == 5 * 8 and {j[-1] for j in jobs} == {"num_seeds=1"}
    assert sorted(int(o.split("=")[1]) for j in jobs for o in j if o.startswith("seed=")) == sorted(list(range(8)) * 5)
    said = capsys.readouterr().out
    assert said.count("train one seed per process") == 1 and "5 jobs -> 40" in said
    jobs = expand_jobs([*preset, "env=sparse_ant"], True)
    assert len(jobs) == 5 and "one seed per process" not in capsys.readouterr().out
    assert len(expand_jobs(["-m", "env=sparse_ant", "env.backend=spring", "seed=0", "num_seeds=8"][1:], True)) == 1
    # a SLURM sweep that asks for GPUs keeps its vmapped seeds on any backend, as does a GPU here
    assert len(expand_jobs([*preset, "env.backend=generalized", "hydra/launcher=slurm",
                            "hydra.launcher.gpus_per_node=1"], True)) == 4 * 5
    assert len(expand_jobs([*preset, "env.backend=generalized"], True, gpu=True)) == 4 * 5


@pytest.mark.slow  # imports brax (about 18 s); the split itself is tested without it
def test_a_single_brax_run_of_several_seeds_on_a_cpu_is_warned_about(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    preflight(["env=sparse_ant", "num_seeds=2", "seed=3", f"results_dir={tmp_path}"])  # validates, trains nothing
    said = capsys.readouterr().err
    assert said.count("warning: env=sparse_ant num_seeds=2 on a CPU") == 1 and "'seed=range(3,5)'" in said
    assert grouping.brax_cpu_warning("sparse_ant", 8, gpu=False).startswith("warning: env=sparse_ant num_seeds=8")
    assert grouping.brax_cpu_warning("sparse_ant", 1, gpu=False) is None
    assert grouping.brax_cpu_warning("sparse_ant", 8, gpu=True) is None
    assert grouping.brax_cpu_warning("cartpole", 8, gpu=False) is None
    assert grouping.brax_cpu_warning("sparse_ant", 8, gpu=False, backend="spring") is None
