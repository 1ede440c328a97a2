"""The layer boundaries of docs/architecture.md, checked on the code itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Modules that validate a config or read a results tree: none may import JAX, directly or not.
JAX_FREE = ["rfig_exp.config", "rfig_exp.validation", "rfig_exp.errors", "rfig_exp.results", "rfig_exp.variants",
            "rfig_exp.status", "rfig_exp.estimate", "rfig_exp.agents.ppo.config", "rfig_exp.bonuses",
            "rfig_exp.bonuses.settings", "rfig_exp.envs", "rfig_exp.envs.settings", "analysis.collect"]


@pytest.mark.parametrize("module", JAX_FREE)
def test_config_and_results_modules_import_no_jax(module):
    code = (f"import sys; sys.path[:0] = ['src', '.']; import {module}; "
            "heavy = sorted(m for m in ('jax', 'jaxlib', 'flax', 'optax') if m in sys.modules); "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"importing {module} imports {out.stdout.strip()}"


def test_a_full_config_validates_without_jax():
    code = ("import sys; sys.path[:0] = ['src', '.']\n"
            "from hydra import compose, initialize_config_dir\n"
            "from rfig_exp.config import build_run_spec\n"
            "with initialize_config_dir(config_dir=sys.argv[1], version_base='1.3'):\n"
            "    for bonus in ('none', 'rfig', 'rnd', 'vime', 'hashexplo'):\n"
            "        build_run_spec(compose('config', overrides=['bonus=' + bonus, 'env=minatar_breakout']))\n"
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "conf")], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def test_a_bad_env_option_is_refused_without_jax():
    code = ("import sys; sys.path[:0] = ['src', '.']\n"
            "from hydra import compose, initialize_config_dir\n"
            "from rfig_exp.config import build_run_spec\n"
            "from rfig_exp.errors import ConfigError\n"
            "with initialize_config_dir(config_dir=sys.argv[1], version_base='1.3'):\n"
            "    for job in (['env=sparse_ant', 'env.backend=nope'], ['env=deepsea', 'env.size=0'],\n"
            "                ['env=pointmaze_umaze', 'env.dynamics=x']):\n"
            "        try:\n"
            "            build_run_spec(compose('config', overrides=job))\n"
            "        except ConfigError as err:\n"
            "            print(err)\n"
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "conf")], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["env.backend='nope' must be one of generalized, positional, spring, mjx",
                                       "env.size=0 must be an integer >= 2",
                                       "env.dynamics='x' is not known; valid: pointax, mujoco", "False"]


def test_only_the_adapter_reaches_into_hydra_and_submitit_internals():
    private = re.compile(r"hydra\._internal|\._return_value|_make_command|\._requeue\(")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in [*ROOT.joinpath("src").rglob("*.py"), ROOT / "launch.py"]
                 if p.name != "hydra_adapter.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if private.search(line)]
    assert not offenders, f"Hydra/submitit internals outside rfig_exp/hydra_adapter.py: {offenders}"


def test_the_adapter_refuses_a_hydra_it_was_not_written_for(monkeypatch):
    code = ("import sys; sys.path[:0] = ['src']; import hydra; hydra.__version__ = '1.4.0'\n"
            "try:\n    import rfig_exp.hydra_adapter\nexcept ImportError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "needs hydra-core 1.3.x" in out.stdout and "found 1.4.0" in out.stdout, out.stdout + out.stderr
