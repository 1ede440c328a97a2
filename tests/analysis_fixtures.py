"""Synthetic results trees for the analysis tests (real variant.yaml /
config.yaml / metrics.csv / summary.json / visits.npy files, following the
results contract: ``<exp>/<env>/<bonus>/<variant>/seed_<k>/``)."""

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


def _fmt(v) -> str:
    # As the launcher spells values in folder names: an integral float as an integer.
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def variant_name(overrides: dict | None) -> str:
    """The launcher's folder name for a variant (sorted ``key=value`` joined by ``,``)."""
    if not overrides:
        return "base"
    return ",".join(f"{k}={_fmt(v)}" for k, v in sorted(overrides.items()))


def run_path(root: Path, experiment: str, env: str, bonus: str, seed: int, variant: str = "base") -> Path:
    """A run folder."""
    return Path(root) / experiment / env / bonus / variant / f"seed_{seed}"


def _set_dotted(cfg: dict, key: str, value) -> None:
    node = cfg
    *parents, last = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value


def write_run(root: Path, experiment: str, env: str, bonus: str, seed: int, steps, returns, episodes=None,
              complete: bool = True, extra: dict | None = None, summary: dict | None = None,
              drop_rows=(), overrides: dict | None = None, variant: str | None = None,
              defaults: dict | None = None, visits: np.ndarray | None = None,
              write_variant_yaml: bool = True) -> Path:
    """Write one run dir. returns: NaN -> empty CSV cell. episodes: per-window
    episodes_finished (default 4 everywhere). drop_rows: row indices left out
    of metrics.csv (missing windows). overrides: the variant's {dotted key:
    value} (written to variant.yaml, summary.json and config.yaml); variant:
    its folder name (default variant_name(overrides)).
    defaults: {dotted key: value} of the composed config the overrides change.
    visits: [n0, n1] counts written to visits.npy (pass summary={"coverage_grid": ...})."""
    overrides = dict(overrides or {})
    variant = variant or variant_name(overrides)
    d = run_path(root, experiment, env, bonus, seed, variant)
    d.mkdir(parents=True, exist_ok=True)
    if write_variant_yaml:
        (d.parent / "variant.yaml").write_text(yaml.safe_dump(overrides))
    steps = np.asarray(steps, np.int64)
    returns = np.asarray(returns, float)
    episodes = np.full(len(steps), 4) if episodes is None else np.asarray(episodes)
    cfg = {"env": {"name": env}, "bonus": {"name": bonus}, "seed": seed, "experiment": experiment,
           "agent": {"total_timesteps": int(steps[-1]) if len(steps) else 0, "num_envs": 8, "lr": 2.5e-4},
           "eval_frequency": int(steps[0]) if len(steps) else 0}
    for k, v in {**(defaults or {}), **overrides}.items():
        _set_dotted(cfg, k, v)
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    if visits is not None:
        np.save(d / "visits.npy", np.asarray(visits))
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
             "versions": {"python": "3.11"}, "host": "testhost", "git_dirty": False,
             "overrides": [f"{k}={v}" for k, v in sorted(overrides.items())]}
        s.update({"variant": variant, "variant_overrides": overrides})
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
    d = run_path(root, experiment, "minatar_breakout", "rfig", 4)
    (d / "summary.json").unlink()
    (d / "metrics.csv").write_text("")
    # Missing seed: mountaincar/rnd/seed_4 never ran.
    d = run_path(root, experiment, "mountaincar", "rnd", 4)
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


def make_lr_sweep_tree(root: Path, experiment: str = "lrsweep", n_seeds: int = 4) -> dict:
    """``launch.py -m env=cartpole,acrobot bonus=none 'agent.lr=1e-4,1e-3' agent.total_timesteps=20480``
    as the launcher writes it: two variants that share the budget override.
    Returns {(env, lr): (S, T) returns}."""
    truth = {}
    steps = STEP * np.arange(1, T + 1)
    for env in ("cartpole", "acrobot"):
        for lr in (1e-4, 1e-3):
            r = truth_returns(env, f"none{lr}", n_seeds)
            truth[(env, lr)] = r
            for s in range(n_seeds):
                write_run(root, experiment, env, "none", s, steps, r[s],
                          overrides={"agent.lr": lr, "agent.total_timesteps": int(steps[-1])})
    return truth


SENS_DEFAULT = 1.0


def make_sensitivity_tree(root: Path, experiment: str = "sens", values=(0.5, 2.0), n_seeds: int = 5) -> dict:
    """rfig at its default lengthscale (base, 1.0 in config.yaml) and at each of
    ``values`` (variants ``bonus.lengthscale=<v>``), plus PPO, on two envs.
    Final score grows with log2(lengthscale). Returns {(env, method key): (S, T)}."""
    truth = {}
    rng = np.random.default_rng(7)
    for env in ("mountaincar", "minatar_breakout"):
        for bonus, ls in [("none", None), ("rfig", None)] + [("rfig", v) for v in values]:
            base_level = 10.0 * (np.log2(ls if ls is not None else SENS_DEFAULT) + 3) if bonus == "rfig" else 5.0
            r = np.round(base_level * np.linspace(0.2, 1.0, T)[None, :] + rng.normal(0, 1.0, (n_seeds, T)), 3)
            overrides = {"bonus.lengthscale": ls} if ls is not None else {}
            key = bonus if ls is None else f"rfig/{variant_name(overrides)}"
            truth[(env, key)] = r
            for s in range(n_seeds):
                write_run(root, experiment, env, bonus, s, STEPS, r[s], overrides=overrides,
                          defaults={"bonus.lengthscale": SENS_DEFAULT} if bonus == "rfig" else None)
    return truth


MAZE_LAYOUT = [[1, 1, 1, 1, 1],
               [1, 0, 0, 0, 1],
               [1, 1, 1, 0, 1],
               [1, 0, 0, 0, 1],
               [1, 1, 1, 1, 1]]
MAZE_EXTENT = [-2.5, 2.5, -2.5, 2.5]
MAZE_GRID = {"axes": ["x", "y"], "bounds": [[-2.5, 2.5], [-2.5, 2.5]], "shape": [10, 10],
             "maze": {"layout": MAZE_LAYOUT, "extent": MAZE_EXTENT}}
MC_GRID = {"axes": ["position", "velocity"], "bounds": [[-1.2, 0.6], [-0.07, 0.07]], "shape": [6, 5], "maze": None}


def make_coverage_tree(root: Path, experiment: str = "cov", n_seeds: int = 3) -> dict:
    """mountaincar (a 6 x 5 position x velocity grid) and pointmaze_umaze (a
    10 x 10 x-y grid over MAZE_LAYOUT) with none and rfig: ``coverage`` and
    ``env/distance`` columns, visits.npy and summary coverage_grid; plus
    acrobot without any grid. Returns {"visits": {(env, bonus): [S, n0, n1]},
    "coverage": {(env, bonus): (S, T)}}."""
    rng = np.random.default_rng(11)
    visits, coverage = {}, {}
    for env, grid in (("mountaincar", MC_GRID), ("pointmaze_umaze", MAZE_GRID), ("acrobot", None)):
        for bonus in ("none", "rfig"):
            r = truth_returns(env, bonus, n_seeds)
            if grid is None:
                for s in range(n_seeds):
                    write_run(root, experiment, env, bonus, s, STEPS, r[s])
                continue
            shape = tuple(grid["shape"])
            # rfig reaches more cells; some counts land on wall cells (they must not be drawn).
            p = 0.35 if bonus == "none" else 0.8
            v = rng.poisson(20.0, (n_seeds, *shape)) * (rng.random((n_seeds, *shape)) < p)
            cov = np.sort(rng.random((n_seeds, T)), axis=1) * (0.4 if bonus == "none" else 0.9)
            visits[(env, bonus)] = v
            coverage[(env, bonus)] = np.round(cov, 4)
            for s in range(n_seeds):
                write_run(root, experiment, env, bonus, s, STEPS, r[s], visits=v[s],
                          summary={"coverage_grid": grid},
                          extra={"coverage": np.round(cov[s], 4),
                                 "env/distance": np.linspace(0, 3 if bonus == "rfig" else 1, T) + 0.1 * s})
    return {"visits": visits, "coverage": coverage}
