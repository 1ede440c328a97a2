"""The wheel (`make wheel-check`): built from this tree and installed with its dependencies into a
fresh virtual environment, it runs examples/ppo_bonus.py, examples/dqn_bonus.py and
docs/library-extending.md's code from outside the checkout, and launch.py
with that environment still finds conf/. Slow (it installs jax & co.), so not in `make test`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_example(tmp_path):
    out = subprocess.run([str(ROOT / "scripts" / "wheel_check.sh")], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path), "PYTHON": sys.executable}, timeout=1700)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "rfig_exp from " in out.stdout and "site-packages" in out.stdout
    assert '"bonus": "rfig", "seed": 1' in out.stdout and '"bonus": "rnd", "seed": 0' in out.stdout
    assert "extras imported: []" in out.stdout and "[wheel-check] the wheel alone: " in out.stdout
    assert '"bonus": "rfig", "seed": 1, "final_return"' in out.stdout and '"bonus": "none", "seed": 0' in out.stdout
    assert "count with IntrinsicReward: r_int (16, 4)" in out.stdout
    assert out.stdout.rstrip().endswith("[wheel-check] ok")
