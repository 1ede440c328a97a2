"""The job's log file on a full disk: one line says so, no traceback per log line (rfig_exp.run.logfile)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.run.logfile import LogFile

ROOT = Path(__file__).resolve().parents[1]


def test_a_full_disk_is_said_once_and_the_lines_are_dropped(capsys):
    handler = LogFile("/dev/full")  # every write fails with ENOSPC, as on a full disk
    logger = logging.getLogger("test_logfile")
    logger.addHandler(handler)
    try:
        for i in range(5):
            logger.warning("line %d", i)
        handler.flush()
    finally:
        logger.removeHandler(handler)
        handler.close()
    err = capsys.readouterr().err
    assert err.count("logging: cannot write the log file /dev/full") == 1 and "No space left on device" in err
    assert "Logging error" not in err and "Traceback" not in err


@pytest.mark.extended
def test_a_run_whose_log_file_cannot_be_written_says_so_once_and_completes(tmp_path):
    """Hydra's job log file on a full device (/dev/full) under a real run: one line, no traceback."""
    tiny = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
            "agent.update_epochs=1", "agent.obs_norm_init_steps=8", "eval_frequency=128", "agent.total_timesteps=256",
            "wandb.mode=disabled", f"results_dir={tmp_path}", "hydra.job_logging.handlers.file.filename=/dev/full"]
    out = subprocess.run([sys.executable, "launch.py", *tiny], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, WANDB_MODE="disabled"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr.count("logging: cannot write the log file /dev/full") == 1, out.stderr[-3000:]
    assert "Logging error" not in out.stderr and "Traceback" not in out.stderr
    assert "window 2/2" in out.stdout  # the console has every line
