"""Set-up shared by the bonus tests (RND, #Explo, VIME, precision): a bonus made from its own YAML
with a few settings changed, a batch of states, the agent's call order, and one tiny end-to-end run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jax
import jax.numpy as jnp
from omegaconf import OmegaConf

from rfig_exp.bonuses import BonusBatch, make_bonus, parse_bonus
from rfig_exp.run.experiment import run_experiment

CONF = Path(__file__).resolve().parents[1] / "conf"


def bonus_config(name: str, **overrides):
    """``conf/bonus/<name>.yaml`` with ``overrides`` applied (a ``bonus`` config node)."""
    base = OmegaConf.to_container(OmegaConf.load(CONF / "bonus" / f"{name}.yaml"))
    base.update(overrides)
    return OmegaConf.create(base)


def make_test_bonus(name: str, obs_shape: tuple, action_space, batch_shape: tuple, **overrides):
    """``(Bonus, hparams)`` of :func:`bonus_config`, for observations ``obs_shape`` and rollouts of
    ``batch_shape = (T, B)`` (the bonus's settings read for a batch of ``T * B`` states)."""
    return make_bonus(parse_bonus(bonus_config(name, **overrides), batch_shape[0] * batch_shape[1]), obs_shape,
                      action_space)


def batch_of(next_obs) -> BonusBatch:
    """A batch ``[T, B, *obs]`` whose observations are ``next_obs``, action 0, no episode ends."""
    zeros = jnp.zeros(next_obs.shape[:2], bool)
    return BonusBatch(obs=next_obs, actions=jnp.zeros(next_obs.shape[:2], jnp.int32), next_obs=next_obs,
                      terminated=zeros, truncated=zeros)


def in_agent_order(bonus, state, batch, key, hp):
    """What the agent does with one batch (train.py): ``reward`` then ``update``, both on the state
    before it; ``(reward, new state)``, jitted together."""

    @jax.jit
    def agent_order(state, key):
        r, _ = bonus.reward(state, batch, hp)
        new_state, _ = bonus.update(state, batch, key, hp)
        return r, new_state

    return agent_order(state, key)


def assert_init_needs_no_lapack(bonus, hp, obs_shape: tuple) -> None:
    """A LAPACK QR (orthogonal init) vmapped over 8 seeds inside the agent's jitted init wedged
    XLA's CPU runtime (see nets.mlp_init): a bonus's init must compile to plain kernels."""
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    hlo = jax.jit(jax.vmap(bonus.init, in_axes=(0, None, None))).lower(keys, jnp.zeros((4,) + obs_shape), hp).as_text()
    assert "lapack" not in hlo.lower() and "geqrf" not in hlo.lower()


def end_to_end(tiny_config, results_dir: Path, name: str, *overrides: str) -> tuple[dict, list[dict]]:
    """A tiny MountainCar run of bonus ``name`` (2 windows of 128 steps): its summary.json as
    written, after checking it is complete, and its metrics.csv rows."""
    (summary,) = run_experiment(tiny_config("env=mountaincar", f"bonus={name}", *overrides,
                                            f"results_dir={results_dir}"))
    # The run directory may hold a variant level (hyperparameters that differ from the defaults).
    (run,) = [p.parent for p in (results_dir / "default" / "mountaincar" / name).glob("**/seed_0/summary.json")]
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["status"] == summary.status == "complete" and on_disk["env_steps"] == 256
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    return on_disk, rows
