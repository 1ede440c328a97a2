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

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(600)
def test_launch_then_analysis_report(tmp_path):
    env = dict(os.environ, WANDB_MODE="disabled")
    cmd = [sys.executable, "launch.py", "-m", "env=cartpole", "bonus=none,rfig", "seed=0", "num_seeds=2",
           "agent.total_timesteps=8192", "agent.num_envs=8", "agent.num_steps=64", "agent.num_minibatches=4",
           "eval_frequency=2048", f"results_dir={tmp_path}", "experiment=e2e", "wandb.mode=disabled"]
    try:
        train = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=480)
    except subprocess.TimeoutExpired as exc:
        written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("seed_*/*"))
        pytest.fail(f"launch.py did not finish in {exc.timeout} s; files written: {written}; "
                    f"output tail: {(exc.stdout or b'')[-2000:]!r}")
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]

    # The results contract, as the analysis reads it.
    for bonus in ("none", "rfig"):
        for seed in (0, 1):
            run = tmp_path / "e2e" / "cartpole" / bonus / f"seed_{seed}"
            summary = json.loads((run / "summary.json").read_text())
            assert summary["status"] == "complete" and summary["env_steps"] == 8192
            assert (summary["env"], summary["bonus"], summary["seed"]) == ("cartpole", bonus, seed)
            assert (run / "config.yaml").is_file() and (run / "metrics.csv").is_file()

    from analysis import collect

    coll = collect(tmp_path, "e2e")
    assert coll.envs == ["cartpole"] and coll.methods == ["none", "rfig"]
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
    assert "No missing, incomplete or failed runs." in index
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "final_scores.tex").read_text().count("\\\\") >= 2
    blob = json.loads((out / "aggregates.json").read_text())
    assert blob["per_env"]["cartpole"]["rfig"]["n"] == 2
    assert [(p["x"], p["y"]) for p in blob["probability_of_improvement"]] == [("rfig", "none")]
