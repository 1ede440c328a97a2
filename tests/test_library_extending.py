"""docs/library-extending.md's code runs as written: its module saved as ``my_bonus.py`` and its usage
script, run from a folder of their own, make the bonus by ``module=`` and train a step of it alone and
with ``IntrinsicReward`` (``make wheel-check`` runs the same from the wheel alone)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import ROOT


def test_the_pages_module_and_script_run_from_a_folder_of_their_own(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "library-extending.md").read_text(), flags=re.S)
    assert len(blocks) == 2
    (tmp_path / "my_bonus.py").write_text(blocks[0])
    (tmp_path / "use.py").write_text(blocks[1])
    out = subprocess.run([sys.executable, "use.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "count: r_int (16, 4) 1.0 cells visited" in out.stdout
    assert "count with IntrinsicReward: r_int (16, 4)" in out.stdout
    assert "RuntimeWarning" not in out.stderr  # the page calls set_cpu_flags before jax
