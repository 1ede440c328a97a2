"""End to end: the real training pipeline writes a results tree, the analysis
CLI turns it into a report (about a minute: JAX compiles PPO twice)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TINY_ARGS = ["agent.total_timesteps=8192", "agent.num_envs=8", "agent.num_steps=64", "agent.num_minibatches=4",
             "eval_frequency=2048"]


def _launch(args: list[str], tmp_path: Path, experiment: str) -> None:
    env = dict(os.environ, WANDB_MODE="disabled")
    cmd = [sys.executable, "launch.py", "-m", *args, f"results_dir={tmp_path}", f"experiment={experiment}",
           "wandb.mode=disabled"]
    try:
        train = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=480)
    except subprocess.TimeoutExpired as exc:
        written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("seed_*/*"))
        pytest.fail(f"launch.py did not finish in {exc.timeout} s; files written: {written}; "
                    f"output tail: {(exc.stdout or b'')[-2000:]!r}")
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]


def _only_variant_dir(bonus_dir: Path) -> Path:
    """The single variant folder under <bonus>/ (every job of these tests shares its overrides)."""
    found = [p for p in bonus_dir.iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.extended
@pytest.mark.timeout(600)
def test_launch_then_analysis_report(tmp_path):
    _launch(["env=cartpole", "bonus=none,rfig", "seed=0", "num_seeds=2", *TINY_ARGS], tmp_path, "e2e")

    # The results contract, as the analysis reads it: the tiny budget makes both
    # runs one variant (the same overrides), under <bonus>/<variant>/seed_<k>.
    for bonus in ("none", "rfig"):
        variant_dir = _only_variant_dir(tmp_path / "e2e" / "cartpole" / bonus)
        overrides = yaml.safe_load((variant_dir / "variant.yaml").read_text())
        assert overrides["agent.total_timesteps"] == 8192 and overrides["eval_frequency"] == 2048
        for seed in (0, 1):
            run = variant_dir / f"seed_{seed}"
            summary = json.loads((run / "summary.json").read_text())
            assert summary["variant"] == variant_dir.name and summary["variant_overrides"] == overrides
            assert summary["status"] == "complete" and summary["env_steps"] == 8192
            assert (summary["env"], summary["bonus"], summary["seed"]) == ("cartpole", bonus, seed)
            assert (run / "config.yaml").is_file() and (run / "metrics.csv").is_file()

    from analysis import collect

    coll = collect(tmp_path, "e2e")
    assert coll.envs == ["cartpole"] and coll.methods == ["none", "rfig"]
    assert [coll.label(m) for m in coll.methods] == ["PPO", "RFIG"]  # the shared budget goes in the header
    assert coll.common_overrides["agent.total_timesteps"] == 8192
    assert [i for i in coll.issues if i.severity == "error"] == []
    ed = coll.env_data["cartpole"]
    assert ed.steps[-1] == 8192 and np.all(np.diff(ed.steps) > 0)
    for bonus in ("none", "rfig"):
        seeds, values = ed.returns(bonus)
        assert list(seeds) == [0, 1]
        assert np.isfinite(values[:, -1]).all()  # CartPole episodes end quickly under a random-ish policy

    out = tmp_path / "report"
    rep = subprocess.run([sys.executable, "-m", "analysis", "--results", str(tmp_path), "--experiment", "e2e",
                          "--out", str(out), "--reps", "200"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    assert "report written to" in rep.stdout
    index = (out / "index.md").read_text()
    assert "CartPole" in index and "RFIG" in index and "PPO" in index
    assert "Overrides common to every method" in index and "agent.total_timesteps=8192" in index
    assert "No missing, incomplete or failed runs." in index
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "final_scores.tex").read_text().count("\\\\") >= 2
    blob = json.loads((out / "aggregates.json").read_text())
    assert blob["per_env"]["cartpole"]["rfig"]["n"] == 2
    assert [(p["x"], p["y"]) for p in blob["probability_of_improvement"]] == [("rfig", "none")]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_hyperparameter_sweep_keeps_both_runs_and_the_analysis_shows_both(tmp_path):
    """``agent.lr=1e-4,1e-3`` runs both values (a sweep once ran the first value only)."""
    _launch(["env=cartpole", "bonus=none", "agent.lr=1e-4,1e-3", "seed=0", "num_seeds=2", *TINY_ARGS], tmp_path,
            "lr")
    from analysis import collect

    bonus_dir = tmp_path / "lr" / "cartpole" / "none"
    variants = sorted(p.name for p in bonus_dir.iterdir() if p.is_dir())
    assert len(variants) == 2, variants
    lrs = set()
    for v in variants:
        overrides = yaml.safe_load((bonus_dir / v / "variant.yaml").read_text())
        for seed in (0, 1):
            cfg = yaml.safe_load((bonus_dir / v / f"seed_{seed}" / "config.yaml").read_text())
            assert cfg["agent"]["lr"] == overrides["agent.lr"]
            assert json.loads((bonus_dir / v / f"seed_{seed}" / "summary.json").read_text())["status"] == "complete"
        lrs.add(overrides["agent.lr"])
    assert lrs == {1e-4, 1e-3}

    coll = collect(tmp_path, "lr")
    assert len(coll.methods) == 2
    assert sorted(coll.label(m) for m in coll.methods) == ["PPO (lr=0.0001)", "PPO (lr=0.001)"]
    assert coll.common_overrides["agent.total_timesteps"] == 8192 and "agent.lr" not in coll.common_overrides
    out = tmp_path / "report"
    rep = subprocess.run([sys.executable, "-m", "analysis", "--results", str(tmp_path), "--experiment", "lr",
                          "--out", str(out), "--reps", "100"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    table = (out / "final_scores.md").read_text()
    assert "PPO (lr=0.0001)" in table and "PPO (lr=0.001)" in table
