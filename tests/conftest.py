"""Shared helpers; the test process's CPU flags (``rfig_exp.set_cpu_flags``), set before jax loads."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import rfig_exp

rfig_exp.set_cpu_flags()  # before numpy, jax or anything importing them

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def analysis_reads() -> set[str]:
    """What of rfig_exp analysis may load: the results contract (with variant names and values),
    the results tree's JAX-free status reader (its seed ranges), each bonus's JAX-free declaration
    (its label, colour and role) and each env suite's (its envs' labels and order)."""
    from rfig_exp.bonuses import bonus_names
    from rfig_exp.envs.settings import declared_envs

    return {"rfig_exp", "rfig_exp.results", "rfig_exp.results.contract",
            "rfig_exp.results.status", "rfig_exp.bonuses",
            "rfig_exp.bonuses.settings", "rfig_exp.config", "rfig_exp.config.variants", "rfig_exp.config.settings",
            "rfig_exp.config.validation", "rfig_exp.config.errors", "rfig_exp.config.folders",
            "rfig_exp.config.run_settings", "rfig_exp.config.jobs", "rfig_exp.envs", "rfig_exp.envs.settings",
            "rfig_exp.envs.mazes", "rfig_exp.envs.suites", *(e.settings.__module__ for e in declared_envs().values()),
            *(f"rfig_exp.bonuses.{b}" for b in bonus_names())}


def pytest_configure(config):
    """One compilation cache for the whole session (conf/config.yaml's RFIG_COMPILE_CACHE), in
    this process and the launch.py processes it starts: the many tiny runs of one shape compile
    once instead of once per test. A test that sets compile_cache itself keeps its own."""
    if "RFIG_COMPILE_CACHE" not in os.environ:
        os.environ["RFIG_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="rfig-test-jax-cache-")

# A configuration small enough to compile and run in seconds on 2 CPU cores.
TINY = [
    "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=2",
    "agent.total_timesteps=256", "eval_frequency=128", "agent.obs_norm_init_steps=8", "wandb.mode=disabled",
]
TINY_RFIG = ["bonus.num_features=64", "bonus.lengthscale_samples=32"]


def fault_env(base: dict, fault: str, once: Path | None = None) -> dict:
    """``base`` with a fault asked for (``RFIG_FAULT``; ``once``: its ``RFIG_FAULT_ONCE`` file) and the
    tests' fault seam first on ``PYTHONPATH`` (tests/fault_inject/sitecustomize.py), so that every
    Python process the command starts injects it; the package has no hook of its own."""
    env = {k: v for k, v in base.items() if k not in ("RFIG_FAULT", "RFIG_FAULT_ONCE")}
    env["RFIG_FAULT"] = fault
    if once is not None:
        env["RFIG_FAULT_ONCE"] = str(once)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULT_SEAM), base.get("PYTHONPATH")]))
    return env


FAULT_SEAM = ROOT / "tests" / "fault_inject"


def command_line_value(value) -> str:
    """A setting's value as a command line writes it (a tuple of widths as ``[16,16]``)."""
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(map(command_line_value, value)) + "]"
    return str(value)


def small_bonus(bonus: str) -> list[str]:
    """The overrides of a small model of ``bonus``, as its module declares them (``small``)."""
    from rfig_exp.bonuses import settings_class

    return [f"bonus.{k}={command_line_value(v)}" for k, v in settings_class(bonus).small.items()]


def compose_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.fixture
def x64():
    """float64 inside the test only (references for float32 code)."""
    import jax

    with jax.enable_x64(True):
        yield


@pytest.fixture
def tiny_config():
    def make(*overrides: str):
        chosen = [o.split("=", 1)[1] for o in overrides if o.startswith("bonus=")]
        extra = TINY_RFIG if chosen in ([], ["rfig"]) else []
        return compose_config(*TINY, *extra, *overrides)

    return make


def trainer_of(cfg):
    """``(trainer, hparams)`` of a composed config: the PPO trainer of its env and bonus, and its
    hyperparameters as the compiled functions take them."""
    from rfig_exp.agents.ppo.train import as_arrays, make_trainer
    from rfig_exp.bonuses import make_bonus
    from rfig_exp.envs import make_env
    from rfig_exp.spec.run_spec import build_run_spec

    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    return make_trainer(spec.train, env, bonus), as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hp))


def find_run(results_dir, env: str, bonus: str, seed: int = 0, experiment: str = "default", variant: str = "*"):
    """The one run directory ``<results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<seed>``
    (tiny test configs are variants of the defaults, so their variant name is long)."""
    found = sorted(Path(results_dir).glob(f"{experiment}/{env}/{bonus}/{variant}/seed_{seed}"))
    assert len(found) == 1, f"expected one run of {env}/{bonus}/{variant}/seed_{seed}, found {found}"
    return found[0]


# Relative residuals of a float32 inverse are rounding noise whose digits depend on the order XLA
# sums in (a vmapped seed against the same seed alone): 100 float32 epsilons (~1.2e-5) bounds them
# far below refresh_tol (1e-3), while a wrong inverse gives a residual of order 1.
FLOAT32_ROUNDING = 100 * float(np.finfo(np.float32).eps)
ROUNDING_LEVEL_COLUMNS = ("bonus/inverse_residual",)


def assert_same_to_float32_rounding(rows_a, rows_b) -> None:
    """Two runs' metrics.csv rows (dicts of strings) agree to float32 rounding: each value to
    rel 1e-4 (abs 1e-6), and a residual column by its size (both at rounding level), not relative
    to each other."""
    assert [r["env_steps"] for r in rows_a] == [r["env_steps"] for r in rows_b]
    for a, b in zip(rows_a, rows_b):
        assert a.keys() == b.keys()
        for k in a:
            va, vb = float(a[k] or "nan"), float(b[k] or "nan")
            if math.isnan(va) or math.isnan(vb):
                assert math.isnan(va) and math.isnan(vb), k
            elif k in ROUNDING_LEVEL_COLUMNS:
                assert max(va, vb) < FLOAT32_ROUNDING, (k, va, vb)
            else:
                assert va == pytest.approx(vb, rel=1e-4, abs=1e-6), k
