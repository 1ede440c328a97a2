"""Progress line and the wandb mirror."""

import json
import subprocess
import sys
import time

import pytest
from conftest import ROOT, find_run

from rfig_exp.run.tracking import progress_line


def test_progress_line_reports_the_true_median():
    line = progress_line("t", 1, 2, 10, 20, 1000.0, [321.1, 412.8], [0.1, 0.2], 5.0)
    assert "return 367 (median of 2 seeds)" in line
    assert "return 321.1 (1 seed) |" in progress_line("t", 1, 2, 10, 20, 1000.0, [321.1], None, 5.0)


def test_rfig_notes_its_inverse_upkeep_and_warns_once_when_every_update_recovers(caplog):
    import numpy as np

    from rfig_exp.bonuses.rfig.progress import inverse_note, progress_note
    from rfig_exp.run.observers import ProgressLine

    line = progress_line("t", 1, 2, 10, 20, 1000.0, [1.0], [0.1], 5.0, inverse_note(2, 1, 48))
    assert "| inverse: 2 refreshes, 1 recoveries in 48 updates | eta 5s" in line
    progress = ProgressLine("t", num_windows=2, eval_frequency=10, total_env_steps=20, updates_per_window=6,
                            done_windows=0, intrinsic=True, note=progress_note("default"))
    quiet = {"bonus/refresh_count": np.array([1.0, 0.0]), "bonus/divergence_count": np.array([0.0, 0.0])}
    assert progress.bonus_note(quiet, 2) == "inverse: 1 refreshes, 0 recoveries in 12 updates"
    assert "every update" not in caplog.text
    lost = {"bonus/refresh_count": np.array([6.0, 6.0]), "bonus/divergence_count": np.array([6.0, 6.0])}
    assert progress.bonus_note(lost, 2) == "inverse: 12 refreshes, 12 recoveries in 12 updates"
    assert progress.bonus_note(lost, 2) and caplog.text.count("every update of this window replaced") == 1
    assert "[t] every update of this window replaced a diverged inverse" in caplog.text
    assert "matmul_precision=default" in caplog.text
    plain = ProgressLine("t", 2, 10, 20, 6, 0, intrinsic=False)  # a bonus without a note (none, rnd, ...)
    assert plain.bonus_note({"episode_return": np.zeros(2)}, 2) == ""


@pytest.mark.kept_apart  # its wall time is judged
def test_online_wandb_without_a_server_falls_back_to_offline_with_one_warning(tmp_path):
    # An unreachable host (a closed port on this machine) and a syntactically valid key.
    env = {"WANDB_BASE_URL": "http://127.0.0.1:9", "WANDB_API_KEY": "0" * 40, "PATH": "/usr/bin:/bin"}
    args = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
            "agent.update_epochs=1", "agent.total_timesteps=128", "eval_frequency=128",
            "agent.obs_norm_init_steps=8", "wandb.mode=online", "wandb.init_timeout=3", f"results_dir={tmp_path}"]
    t0 = time.time()
    out = subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert log.count("online init failed") == 1 and "logging offline instead" in log
    run = find_run(tmp_path, "cartpole", "none")
    assert json.loads((run / "summary.json").read_text())["status"] == "complete"
    assert len(list((run / "wandb").glob("offline-run-*"))) == 1
    assert not list((run / "wandb").glob("run-*")), "the failed online attempt leaves nothing to sync"
    assert time.time() - t0 < 240
