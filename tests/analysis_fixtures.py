"""Synthetic results trees for the analysis tests (real config.yaml /
metrics.csv / summary.json files, following the results contract)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

STEP = 2048
T = 10
STEPS = STEP * np.arange(1, T + 1)
SEEDS = list(range(5))
CLEAN_ENVS = ["minatar_breakout", "acrobot", "mountaincar"]  # deliberately not in paper order
CLEAN_BONUSES = ["rfig", "none", "rnd"]


def write_run(root: Path, experiment: str, env: str, bonus: str, seed: int, steps, returns, episodes=None,
              complete: bool = True, extra: dict | None = None, summary: dict | None = None,
              drop_rows=()) -> Path:
    """Write one run dir. returns: NaN -> empty CSV cell. episodes: per-window
    episodes_finished (default 4 everywhere). drop_rows: row indices left out
    of metrics.csv (missing windows)."""
    d = Path(root) / experiment / env / bonus / f"seed_{seed}"
    d.mkdir(parents=True, exist_ok=True)
    steps = np.asarray(steps, np.int64)
    returns = np.asarray(returns, float)
    episodes = np.full(len(steps), 4) if episodes is None else np.asarray(episodes)
    cfg = {"env": {"name": env}, "bonus": {"name": bonus}, "seed": seed, "experiment": experiment,
           "agent": {"total_timesteps": int(steps[-1]) if len(steps) else 0, "num_envs": 8},
           "eval_frequency": int(steps[0]) if len(steps) else 0}
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    cols = {"env_steps": steps, "episode_return": returns, "episodes_finished": episodes,
            "intrinsic_reward": (0.0 if bonus == "none" else 1.0) / (1 + np.arange(len(steps))),
            "loss_total": np.linspace(1, 0.1, len(steps)), "wall_time_s": np.arange(len(steps)) * 0.5}
    cols.update(extra or {})
    lines = [",".join(cols)]
    for i in range(len(steps)):
        if i in drop_rows:
            continue
        cells = []
        for v in (c[i] for c in cols.values()):
            if isinstance(v, float):
                cells.append("" if np.isnan(v) else repr(float(v)))
            else:
                cells.append(str(v))
        lines.append(",".join(cells))
    (d / "metrics.csv").write_text("\n".join(lines) + "\n")
    if not complete and (d / "summary.json").exists():
        (d / "summary.json").unlink()
    if complete:
        s = {"status": "complete", "env": env, "bonus": bonus, "seed": seed, "experiment": experiment,
             "final_return": float(returns[-1]) if len(returns) else None,
             "env_steps": int(steps[-1]) if len(steps) else 0, "wall_time_s": 12.0 + seed,
             "compile_time_s": 3.0, "env_steps_per_second": 1000.0 * (2 if bonus == "none" else 1) + seed,
             "versions": {"python": "3.11"}}
        s.update(summary or {})
        (d / "summary.json").write_text(json.dumps(s))
    return d


def truth_returns(env: str, bonus: str, n_seeds: int = len(SEEDS), t: int = T) -> np.ndarray:
    """Known (S, T) returns: env-specific scale, method offset, seed noise."""
    rng = np.random.default_rng(sum(map(ord, env + bonus)))
    base = {"acrobot": -500.0, "mountaincar": -200.0, "minatar_breakout": 0.0}.get(env, 10.0)
    gain = {"none": 1.0, "rnd": 1.5, "rfig": 2.0}.get(bonus, 1.2)
    scale = {"acrobot": 40.0, "mountaincar": 10.0, "minatar_breakout": 2.0}.get(env, 5.0)
    progress = np.linspace(0, 1, t)[None, :]
    return np.round(base + scale * gain * (progress * 5 + rng.normal(0, 1, (n_seeds, t))), 3)


def make_clean_tree(root: Path, experiment: str = "synth") -> dict:
    """3 envs x 3 bonuses x 5 seeds, every run complete and on one grid.
    Returns {(env, bonus): (S, T) array} of the returns written."""
    truth = {}
    for env in CLEAN_ENVS:
        for bonus in CLEAN_BONUSES:
            r = truth_returns(env, bonus)
            truth[(env, bonus)] = r
            for s in SEEDS:
                write_run(root, experiment, env, bonus, s, STEPS, r[s])
    return truth


def make_defect_tree(root: Path, experiment: str = "defects") -> dict:
    """The clean tree plus one of each problem. Returns a dict describing them."""
    truth = make_clean_tree(root, experiment)
    # Incomplete: acrobot/rnd/seed_4 crashed after 6 windows (no summary.json).
    r = truth[("acrobot", "rnd")][4]
    write_run(root, experiment, "acrobot", "rnd", 4, STEPS[:6], r[:6], complete=False)
    # Failed: NaN return although episodes finished, mountaincar/rfig/seed_3 window 5.
    r = truth[("mountaincar", "rfig")][3].copy()
    r[5] = np.nan
    write_run(root, experiment, "mountaincar", "rfig", 3, STEPS, r)
    # Missing window: mountaincar/none/seed_2 lacks row 7.
    write_run(root, experiment, "mountaincar", "none", 2, STEPS, truth[("mountaincar", "none")][2], drop_rows={7})
    # Empty windows (no finished episode): breakout/rnd/seed_1 windows 3, 4; breakout/none/seed_0 window 0.
    r = truth[("minatar_breakout", "rnd")][1].copy()
    ep = np.full(T, 4)
    r[[3, 4]] = np.nan
    ep[[3, 4]] = 0
    write_run(root, experiment, "minatar_breakout", "rnd", 1, STEPS, r, episodes=ep)
    r0 = truth[("minatar_breakout", "none")][0].copy()
    ep0 = np.full(T, 4)
    r0[0] = np.nan
    ep0[0] = 0
    write_run(root, experiment, "minatar_breakout", "none", 0, STEPS, r0, episodes=ep0)
    # A just-started run: config.yaml and an empty metrics.csv, as the launcher leaves them.
    d = Path(root) / experiment / "minatar_breakout" / "rfig" / "seed_4"
    (d / "summary.json").unlink()
    (d / "metrics.csv").write_text("")
    # Missing seed: mountaincar/rnd/seed_4 never ran.
    d = Path(root) / experiment / "mountaincar" / "rnd" / "seed_4"
    for f in d.iterdir():
        f.unlink()
    d.rmdir()
    return {"truth": truth}


def make_full_suite_tree(root: Path, experiment: str = "suite", n_seeds: int = 4, t: int = 12) -> list[str]:
    """The paper's 12 envs x 5 methods (for the 3 x 4 figure)."""
    envs = ["acrobot", "mountaincar", "sparse_ant", "sparse_halfcheetah", "sparse_hopper", "sparse_walker2d",
            "pointmaze_umaze", "pointmaze_large", "minatar_breakout", "minatar_asterix", "minatar_freeway",
            "minatar_space_invaders"]
    steps = 24576 * np.arange(1, t + 1)
    for env in envs:
        for bonus in ["none", "rfig", "rnd", "vime", "hashexplo"]:
            r = truth_returns(env, bonus, n_seeds, t)
            for s in range(n_seeds):
                write_run(root, experiment, env, bonus, s, steps, r[s])
    return envs
