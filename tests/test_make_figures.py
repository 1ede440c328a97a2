"""``make figures``: the report of each of the user's experiments under RESULTS (or the one named by
EXPERIMENT), never the campaign's published reports (``make figures-paper``), and messages that name
the Make variables (analysis/__main__.py with ``--caller make``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from analysis_fixtures import STEPS, T, write_run

from rfig_exp.results import contract

ROOT = Path(__file__).resolve().parents[1]
# A CartPole run whose last window ends after every env could reach the time limit (500 x 4 envs),
# so its final score is not censored: a run that compiles and trains in seconds.
SHORT_RUN = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
             "agent.update_epochs=1", "agent.total_timesteps=2048", "eval_frequency=1024",
             "agent.obs_norm_init_steps=8", "wandb.mode=disabled"]
FLAGS = ("--experiment", "--results", "--out", "--allow-incomplete")


def make_figures(cwd: Path, *variables: str) -> subprocess.CompletedProcess:
    """``make figures VARIABLES`` from ``cwd`` (reports/ lands there), with the test's Python and
    without make's one-off install of .venv (``-o``: its stamp counts as up to date)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run(["make", "-s", "-f", str(ROOT / "Makefile"), "-o", ".venv/.installed", "figures",
                           f"PY={sys.executable}", *variables], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def said(out: subprocess.CompletedProcess) -> str:
    return out.stdout + out.stderr


def exit_status(out: subprocess.CompletedProcess) -> int:
    """The analysis CLI's status under make, which itself exits 2 whenever a recipe fails and
    says the recipe's status in its ``make: *** [...] Error N`` line."""
    if out.returncode == 0:
        return 0
    assert out.returncode == 2, said(out)
    # "make: ***", or "make[1]: ***" when the test itself runs under make (make test)
    (line,) = [line for line in out.stderr.splitlines() if re.match(r"make(\[\d+\])?: \*\*\*", line)]
    return int(line.rsplit("Error ", 1)[1])


def errors(out: subprocess.CompletedProcess) -> list[str]:
    """The lines the command printed as errors (make's own ``make: ***`` line aside)."""
    return [line for line in out.stderr.splitlines() if line.startswith("error:")]


def assert_names_no_flag(out: subprocess.CompletedProcess) -> None:
    for line in errors(out):
        assert not any(flag in line for flag in FLAGS), line


@pytest.fixture(scope="module")
def two_real_experiments(tmp_path_factory) -> Path:
    """``results/`` with two experiments made by launch.py as a user runs it; beta's run then loses
    its summary.json, as a run killed before its end (incomplete: its report lists an error)."""
    root = tmp_path_factory.mktemp("figures")
    for experiment in ("alpha", "beta"):
        out = subprocess.run([sys.executable, str(ROOT / "launch.py"), *SHORT_RUN, f"results_dir={root / 'results'}",
                              f"experiment={experiment}"], cwd=root, env=dict(os.environ, WANDB_MODE="disabled"),
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    (beta,) = (run.path for run in contract.iter_runs(root / "results", "beta"))
    (beta / contract.SUMMARY).unlink()
    return root


@pytest.mark.extended
def test_make_figures_builds_each_experiment_then_exits_4_for_the_one_with_problems(two_real_experiments):
    root = two_real_experiments
    out = make_figures(root)
    assert exit_status(out) == 4, said(out)
    log = said(out)
    for experiment in ("alpha", "beta"):
        assert (root / "reports" / experiment / "index.md").is_file(), experiment
        assert f"experiment `{experiment}`" in (root / "reports" / experiment / "index.md").read_text()
    assert log.index("[1/2] building the report of EXPERIMENT=alpha into reports/alpha/") < \
        log.index("[2/2] building the report of EXPERIMENT=beta into reports/beta/")
    assert "  alpha: written (reports/alpha/, exit 0)" in out.stdout
    assert "  beta: written, lists errors (reports/beta/, exit 4)" in out.stdout
    assert errors(out)[-1] == "error: 1 of 2 report(s) have problems (beta); exit 4"
    assert any("Set ALLOW_INCOMPLETE=1 to accept them" in line for line in errors(out))
    assert "campaign.repro" not in log and not (root / "docs").exists()
    assert_names_no_flag(out)

    accepted = make_figures(root, "ALLOW_INCOMPLETE=1")
    assert accepted.returncode == 0, said(accepted)
    assert errors(accepted) == []


def test_make_figures_experiment_builds_only_that_one_where_report_says(two_real_experiments, tmp_path):
    out = make_figures(tmp_path, f"RESULTS={two_real_experiments / 'results'}", "EXPERIMENT=alpha",
                       f"REPORT={tmp_path / 'mine'}")
    assert out.returncode == 0, said(out)
    assert (tmp_path / "mine" / "index.md").is_file() and not (tmp_path / "reports").exists()
    assert "building the report" not in out.stdout  # one experiment: no count, no summary


def _synthetic_results(root: Path) -> Path:
    """Two complete experiments of one run each (analysis_fixtures.write_run)."""
    for experiment in ("exp_a", "exp_b"):
        write_run(root / "results", experiment, "acrobot", "none", 0, STEPS, np.linspace(-500, -100, T))
    return root / "results"


def test_make_figures_without_runs_says_how_to_make_some(tmp_path):
    for results in ("nowhere", "empty"):
        (tmp_path / "empty" / "exp" / ".hydra").mkdir(parents=True, exist_ok=True)  # a sweep that ran nothing
        out = make_figures(tmp_path, f"RESULTS={results}")
        assert exit_status(out) == 1, said(out)
        (line,) = errors(out)
        assert f"RESULTS={results}" in line and "`make run`" in line and "launch.py" in line, line
        assert_names_no_flag(out)
    assert not (tmp_path / "reports").exists()


def test_make_figures_errors_name_the_make_variables(tmp_path):
    results = _synthetic_results(tmp_path)
    unknown = make_figures(tmp_path, f"RESULTS={results}", "EXPERIMENT=exp_c")
    assert exit_status(unknown) == 1
    (line,) = errors(unknown)
    assert f"no runs for EXPERIMENT=exp_c under RESULTS={results}" in line and "found: exp_a, exp_b" in line
    one_folder = make_figures(tmp_path, f"RESULTS={results}", "REPORT=rep")
    assert exit_status(one_folder) == 2
    (line,) = errors(one_folder)
    assert line.startswith(f"error: REPORT= names one report folder, and RESULTS={results} holds 2 experiments "
                           "(exp_a, exp_b): name one with EXPERIMENT=NAME"), line
    for out in (unknown, one_folder):
        assert_names_no_flag(out)
    assert not (tmp_path / "reports").exists() and not (tmp_path / "rep").exists()


def test_make_figures_leaves_the_published_reports_to_figures_paper():
    def planned(target: str) -> str:
        out = subprocess.run(["make", "-n", "-s", "-o", ".venv/.installed", target], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "campaign.repro" not in planned("figures") and "-m analysis --caller make" in planned("figures")
    paper = planned("figures-paper")
    assert "campaign.repro build --readme README.md" in paper and "--out docs/results/paper32" in paper


def test_the_cli_without_experiment_builds_every_one_into_its_own_folder(tmp_path, monkeypatch, capsys):
    from analysis.__main__ import main

    results = _synthetic_results(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["--results", str(results), "--reps", "20"]) == 0
    said = capsys.readouterr()
    assert "[1/2] building the report of experiment 'exp_a' into reports/exp_a/" in said.out
    for experiment in ("exp_a", "exp_b"):
        assert f"experiment `{experiment}`" in (tmp_path / "reports" / experiment / "index.md").read_text()
    assert main(["--results", str(results), "--out", "one"]) == 2
    assert "--out names one report folder" in capsys.readouterr().err and not (tmp_path / "one").exists()
