"""The layer boundaries of docs/architecture.md, checked on the code itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.bonuses import bonus_names

ROOT = Path(__file__).resolve().parents[1]

# Modules that validate a config or read a results tree: none may import JAX, directly or not.
# Each bonus's module too: it declares the bonus's settings (read by preflight and analysis) and
# imports what the bonus computes with only when the bonus is made.
JAX_FREE = ["rfig_exp.config", "rfig_exp.settings", "rfig_exp.validation", "rfig_exp.errors", "rfig_exp.results",
            "rfig_exp.variants", "rfig_exp.status", "rfig_exp.estimate", "rfig_exp.agents.ppo.config",
            "rfig_exp.bonuses", "rfig_exp.bonuses.settings", *(f"rfig_exp.bonuses.{b}" for b in bonus_names()),
            "rfig_exp.envs", "rfig_exp.envs.settings", "analysis.collect", "analysis.names",
            "rfig_exp.preflight", "rfig_exp.sweep_plan", "rfig_exp.seed_plan"]


def _python(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter from the repository root (src/ first on the path); its
    stdout lines. A non-zero exit fails the test with the interpreter's stderr."""
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path[:0] = ['src', '.']\n" + code],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def _build_specs(jobs: list[list[str]]) -> str:
    """Code that builds the run spec of each job (a list of overrides), printing each ConfigError,
    then whether JAX got imported."""
    return ("from hydra import compose, initialize_config_dir\n"
            "from rfig_exp.config import build_run_spec\n"
            "from rfig_exp.errors import ConfigError\n"
            f"with initialize_config_dir(config_dir={str(ROOT / 'conf')!r}, version_base='1.3'):\n"
            f"    for job in {jobs!r}:\n"
            "        try:\n"
            "            build_run_spec(compose('config', overrides=job))\n"
            "        except ConfigError as err:\n"
            "            print(err)\n"
            "print('jax' in sys.modules)")


@pytest.mark.parametrize("module", JAX_FREE)
def test_config_and_results_modules_import_no_jax(module):
    heavy = _python(f"import {module}\n"
                    "print(','.join(sorted(m for m in ('jax', 'jaxlib', 'flax', 'optax') if m in sys.modules)))")
    assert heavy == [""], f"importing {module} imports {heavy}"


def test_a_full_config_validates_without_jax():
    jobs = [[f"bonus={bonus}", "env=minatar_breakout"] for bonus in ("none", "rfig", "rnd", "vime", "hashexplo")]
    assert _python(_build_specs(jobs)) == ["False"]  # no ConfigError printed, and no JAX


def test_a_bad_env_option_is_refused_without_jax():
    jobs = [["env=sparse_ant", "env.backend=nope"], ["env=deepsea", "env.size=0"],
            ["env=pointmaze_umaze", "env.dynamics=x"]]
    assert _python(_build_specs(jobs)) == ["env.backend='nope' must be one of generalized, positional, spring, mjx",
                                           "env.size=0 must be an integer >= 2",
                                           "env.dynamics='x' is not known; valid: pointax, mujoco", "False"]


def test_only_the_adapter_reaches_into_hydra_and_submitit_internals():
    private = re.compile(r"hydra\._internal|\._return_value|_make_command|\._requeue\(")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in [*ROOT.joinpath("src").rglob("*.py"), ROOT / "launch.py"]
                 if p.name != "hydra_adapter.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if private.search(line)]
    assert not offenders, f"Hydra/submitit internals outside rfig_exp/hydra_adapter.py: {offenders}"


def test_the_adapter_refuses_a_hydra_it_was_not_written_for():
    out = _python("import hydra; hydra.__version__ = '1.4.0'\n"
                  "try:\n    import rfig_exp.hydra_adapter\nexcept ImportError as err:\n    print(err)\n")
    assert len(out) == 1 and "needs hydra-core 1.3.x" in out[0] and "found 1.4.0" in out[0], out


def test_preflight_imports_only_the_env_suites_of_the_sweep(tmp_path):
    """A sweep of gymnax envs makes its envs (gymnax, hence JAX) and nothing of the training: no
    run loop, no agent, no bonus code (a bonus module's declared settings are read: they import
    no JAX), no other suite."""
    code = ("from rfig_exp.preflight import preflight\n"
            f"preflight(['-m', 'env=cartpole,acrobot', 'bonus=rfig,rnd', 'results_dir={tmp_path}'])\n"
            "print(sorted(m for m in ('gymnax', 'brax', 'rfig_exp.envs.pointmaze', 'rfig_exp.run_loop',\n"
            "      'rfig_exp.agents.ppo.train', 'rfig_exp.bonuses.base', 'rfig_exp.bonuses.rfig.bonus',\n"
            "      'rfig_exp.bonuses.nets') if m in sys.modules))")
    assert _python(code)[-1] == "['gymnax']"
