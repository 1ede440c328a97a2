"""Run one experiment (env, bonus, a group of vmapped seeds) and write the results contract.

A thin Python loop around one compiled window function: after each window it appends
the window's metrics, prints a progress line and mirrors to wandb. Nothing inside a
window touches the host.
"""

from __future__ import annotations

import math
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import OmegaConf

from rfig_exp import results
from rfig_exp.agents.ppo.train import make_trainer
from rfig_exp.bonuses import make_bonus
from rfig_exp.config import RunSpec, agent_hparams, build_run_spec
from rfig_exp.envs import make_env
from rfig_exp.tracking import WandbRuns, log, progress_line

PACKAGES = ("rfig_exp", "jax", "jaxlib", "flax", "optax", "gymnax", "hydra-core", "numpy", "wandb")


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).parent)
        versions["git_commit"] = out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = None
    return versions


def seed_config_yaml(cfg, seed: int) -> str:
    """The resolved config as this seed's run saw it (its own ``seed``, ``num_seeds: 1``)."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved.pop("hydra", None)
    resolved.update(seed=seed, num_seeds=1)
    return OmegaConf.to_yaml(OmegaConf.create(resolved))


def run_experiment(cfg) -> list[dict]:
    """Validate ``cfg``, train every seed that is not already complete, write results.

    Returns the summaries written (empty when everything was complete already).
    """
    spec = build_run_spec(cfg)
    env = make_env(spec.env_name)
    bonus, bonus_hparams = make_bonus(cfg.bonus, env.obs_shape, env.action_space,
                                      (spec.train.num_steps, spec.train.num_envs))
    hparams = {**agent_hparams(cfg), "bonus": bonus_hparams}
    dirs = {s: results.run_dir(spec.results_dir, spec.experiment, spec.env_name, spec.bonus_name, s)
            for s in spec.seeds}
    seeds = [s for s in spec.seeds if spec.overwrite or not results.is_complete(dirs[s])]
    tag = f"{spec.env_name}/{spec.bonus_name} seeds {_seed_range(spec.seeds)}"
    if not seeds:
        log.info("[%s] already complete in %s; skipping (overwrite=true re-runs it)",
                 tag, dirs[spec.seeds[0]].parent)
        return []
    if len(seeds) < len(spec.seeds):
        tag = f"{spec.env_name}/{spec.bonus_name} seeds {_seed_range(seeds)}"
        log.info("[%s] other seeds of this job are complete; running only these", tag)
    for s in seeds:
        results.start_run(dirs[s], seed_config_yaml(cfg, s))
    return _train(cfg, spec, env, bonus, hparams, seeds, dirs, tag)


def _seed_range(seeds) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))


def _train(cfg, spec: RunSpec, env, bonus, hparams, seeds, dirs, tag) -> list[dict]:
    start = time.perf_counter()
    trainer = make_trainer(spec.train, env, bonus)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    writers = {s: results.MetricsWriter(dirs[s]) for s in seeds}
    wandb_runs = WandbRuns(
        cfg.wandb.mode, cfg.wandb.project, cfg.wandb.entity,
        group=f"{spec.experiment}/{spec.env_name}/{spec.bonus_name}",
        runs={s: (str(dirs[s]), {**OmegaConf.to_container(cfg, resolve=True), "seed": s}) for s in seeds})
    failed = True
    try:
        init = jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))
        states = jax.block_until_ready(init(keys, hparams))
        window = jax.jit(trainer.run_window, donate_argnums=0).lower(states, hparams).compile()
        compile_time = time.perf_counter() - start
        if bonus.describe is not None:
            for key, values in jax.device_get(jax.vmap(bonus.describe)(states.bonus_state)).items():
                log.info("[%s] %s: %s", tag, key, ", ".join(f"{v:.4g}" for v in np.ravel(values)))

        steps_per_window = spec.eval_frequency
        train_time = 0.0
        last_rows: dict[int, dict] = {}
        # final_return: the return of the last window in which episodes finished
        final_returns = {s: float("nan") for s in seeds}
        for w in range(1, spec.num_windows + 1):
            t0 = time.perf_counter()
            states, metrics = window(states, hparams)
            metrics = jax.device_get(metrics)  # the only host round-trip: [S] scalars per metric
            train_time += time.perf_counter() - t0
            env_steps = w * steps_per_window
            for i, s in enumerate(seeds):
                row = {"env_steps": env_steps, "update": w * spec.train.updates_per_window,
                       **{k: float(v[i]) for k, v in metrics.items()},
                       "wall_time_s": time.perf_counter() - start}
                writers[s].append(row)
                if math.isfinite(row["episode_return"]):
                    final_returns[s] = row["episode_return"]
                wandb_runs.log(s, row, step=env_steps)
                last_rows[s] = row
            rate = env_steps * len(seeds) / train_time
            eta = (spec.num_windows - w) * train_time / w
            log.info(progress_line(tag, w, spec.num_windows, env_steps, spec.total_env_steps, rate,
                                   [last_rows[s]["episode_return"] for s in seeds],
                                   [last_rows[s]["intrinsic_reward"] for s in seeds], eta))

        described = jax.device_get(jax.vmap(bonus.describe)(states.bonus_state)) if bonus.describe else {}
        summaries = []
        versions = package_versions()
        wall = time.perf_counter() - start
        for i, s in enumerate(seeds):
            writers[s].close()
            summary = {
                "status": "complete", "experiment": spec.experiment, "env": spec.env_name,
                "bonus": spec.bonus_name, "seed": s, "num_seeds_in_process": len(seeds),
                "env_steps": spec.total_env_steps, "num_windows": spec.num_windows,
                "final_return": final_returns[s],
                "wall_time_s": wall, "compile_time_s": compile_time, "train_time_s": train_time,
                "env_steps_per_second": spec.total_env_steps * len(seeds) / train_time,
                "warmup_env_steps": spec.train.obs_norm_init_steps * spec.train.num_envs,
                "versions": versions,
                **{f"bonus_{k}": float(np.ravel(v)[i]) for k, v in described.items()},
            }
            results.write_summary(dirs[s], summary)
            wandb_runs.finish(s, summary)
            summaries.append(summary)
        log.info("[%s] done in %.1fs (compile %.1fs, %.0f env steps/s over %d seeds); results in %s",
                 tag, wall, compile_time, summaries[0]["env_steps_per_second"], len(seeds), dirs[seeds[0]].parent)
        failed = False
        return summaries
    finally:
        for w in writers.values():
            w.close()
        wandb_runs.finish_all(failed=failed)
