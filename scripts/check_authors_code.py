"""The RFIG authors' own code run beside ours on the same env, bonus and seeds: does ``protocol=as_run``
reproduce what their code computes?

    python3 scripts/check_authors_code.py PATH/TO/rejax --env mountaincar --bonuses none,rfig --seeds 100-107
    python3 scripts/check_authors_code.py PATH/TO/rejax --pointax PATH/TO/pointax --env pointmaze_medium \\
        --bonuses none --seeds 100-107 --work /tmp/authors-check --out docs/results/fidelity/pointmaze_medium.json

``PATH/TO/rejax`` is a tree of github.com/riiswa/rejax at :data:`COMMIT` (the paper's code; ``git archive``
of that commit, its ``img/`` left out: one of its blobs is broken), ``--pointax`` one of
github.com/riiswa/pointax (the PointMaze panels only). Nothing of theirs is copied into this project.
Their side runs in an environment of its own, made once under ``--work`` (``venv-authors``): a virtual
environment with every package pinned to their ``pdm.lock`` (jax 0.4.35, flax 0.10.1, gymnax 0.0.8,
brax 0.11.0, ...), their tree and pointax installed without dependencies; ``--python`` uses one made
before. Their training is driven the way their ``experiment.py`` drives it (their ``config.yaml``,
``PPO.create(**training)``, ``jax.vmap(jax.jit(ppo.train_with_seed))`` over the int32 seeds; the
budget ours has for the env under ``protocol=as_run``), without their logging (``aim``).

Ours runs ``launch.py protocol=as_run`` on the same env, bonus and seeds (``seed=S num_seeds=N``: one
job of N vmapped seeds, as theirs) into ``--work/ours``. Both sides evaluate 128 fresh episodes per seed
with the sampled policy at step 0 and every 24,576 steps, so each seed has the same curve on both:
the final score is its last point, the AUC the mean of its points. One line per (env, bonus): each
side's IQM with a 95% bootstrap interval, P(ours > theirs) with its interval, Mann-Whitney's
two-sided p, and each side's whole-process wall time; ``--out`` writes every seed's curve and the
statistics as JSON (docs/fidelity.md's table is made from those files).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before numpy; the flags reach both sides' processes through the environment

import numpy as np  # noqa: E402

COMMIT = "b16e24ababfbf3b05039454323efd40c462db3e8"  # riiswa/rejax, 2025-06-24 ("Use pointax")
# our env and bonus names -> theirs (their sweep.sh, run.sh and plot.py)
THEIR_ENV = {"mountaincar": "MountainCar-v0", "acrobot": "Acrobot-v1",
             "pointmaze_umaze": "custom/pointmaze-umaze-v0", "pointmaze_medium": "custom/pointmaze-medium-v0",
             "minatar_breakout": "Breakout-MinAtar", "minatar_asterix": "Asterix-MinAtar",
             "minatar_freeway": "Freeway-MinAtar", "minatar_space_invaders": "SpaceInvaders-MinAtar",
             "sparse_ant": "brax/sparse-ant", "sparse_halfcheetah": "brax/sparse-halfcheetah",
             "sparse_hopper": "brax/sparse-hopper", "sparse_walker2d": "brax/sparse-walker2d"}
THEIR_BONUS = {"none": "none", "rfig": "rnk", "rnd": "rnd", "vime": "vime", "hashexplo": "hash"}
# packages their pdm.lock does not pin that their experiment.py's config reading needs
UNPINNED = ["hydra-core", "pandas", "pyyaml"]

# Their side: what their experiment.py does, without its logging; one JSON line on stdout. Their
# progress bar (PPO.print_progress, called through io_callback every iteration) does jax.numpy
# arithmetic on its argument inside the callback; on XLA's CPU client that dispatch can wait for the
# computation that is waiting for the callback (py-spy: the callback thread in pjit's
# ExecuteReplicated, the main thread idle), a deadlock that stopped every run of their RND on this
# machine at 0%. It prints and computes nothing else, so the driver replaces it with a no-op.
DRIVER = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
from omegaconf import OmegaConf
from rejax.algos.ppo_with_bonus import PPO
PPO.print_progress = lambda self, timesteps: None
cfg = OmegaConf.load(sys.argv[1])
cfg.training.env, cfg.training.bonus_type = sys.argv[2], sys.argv[3]
cfg.training.total_timesteps = int(sys.argv[4])
seeds = jnp.asarray(json.loads(sys.argv[5]), jnp.int32)
ppo = PPO.create(**OmegaConf.to_container(cfg.training))
_, (lengths, returns) = jax.vmap(jax.jit(ppo.train_with_seed))(seeds)
print(json.dumps({"returns": np.asarray(returns.mean(axis=-1), np.float64).tolist(),
                  "eval_episodes": int(returns.shape[-1]), "eval_freq": int(cfg.training.eval_freq)}))
"""


def parse_seeds(text: str) -> list[int]:
    """``100-107`` or ``100,101,104``: consecutive seeds, as one job of vmapped seeds takes them."""
    if "-" in text:
        first, last = (int(x) for x in text.split("-"))
        seeds = list(range(first, last + 1))
    else:
        seeds = [int(x) for x in text.split(",")]
    if seeds != list(range(seeds[0], seeds[0] + len(seeds))):
        raise SystemExit(f"--seeds {text}: give consecutive seeds (both sides train them as one vmapped job)")
    return seeds


def authors_python(checkout: Path, pointax: Path | None, work: Path) -> Path:
    """Their environment's Python, made under ``work`` on first use: every package of their
    ``pdm.lock`` at its version, their tree and pointax without dependencies."""
    venv = work / "venv-authors"
    python = venv / "bin" / "python"
    if (venv / ".installed").exists():
        return python
    lock = tomllib.loads((checkout / "pdm.lock").read_text())
    constraints = work / "authors-constraints.txt"
    constraints.write_text("".join(f"{p['name']}=={p['version']}\n" for p in lock["package"]))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints)]
    pinned = {p["name"] for p in lock["package"]}
    needed = [n for n in ("jax", "jaxlib", "flax", "optax", "gymnax", "distrax", "evosax", "brax", "numpy", "chex")
              if n in pinned]
    subprocess.run([*pip, *needed, *UNPINNED], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(checkout)], check=True)
    if pointax is not None:
        subprocess.run([*pip, "--no-deps", str(pointax)], check=True)
    (venv / ".installed").touch()
    return python


def driver_result(stdout: str) -> dict | None:
    """The driver's JSON line in their process's stdout, None if it printed none. Anything their code
    prints there may precede it on the same line (their progress bar, drawn with carriage returns and
    no newline, did before the driver silenced it): the result is the text from the last ``{"returns"``
    to the end of that line."""
    start = stdout.rfind('{"returns"')
    return None if start < 0 else json.loads(stdout[start:].splitlines()[0])


def run_theirs(python: Path, checkout: Path, env: str, bonus: str, steps: int, seeds: list[int]) -> dict:
    start = time.perf_counter()
    out = subprocess.run([str(python), "-c", DRIVER, str(checkout / "config.yaml"), THEIR_ENV[env], THEIR_BONUS[bonus],
                          str(steps), json.dumps(seeds)], capture_output=True, text=True,
                         env=dict(os.environ))
    if out.returncode != 0:
        raise SystemExit(f"their code failed on {env}/{bonus}:\n{out.stderr[-3000:]}")
    result = driver_result(out.stdout)
    if result is None:
        raise SystemExit(f"their code printed no result on {env}/{bonus}; its output ended:\n"
                         f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return {**result, "wall_s": time.perf_counter() - start}


def as_run_budget(env: str) -> int:
    """``agent.total_timesteps`` of ``protocol=as_run`` on ``env`` (conf/protocol/)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(ROOT / "conf"), version_base=None):
        return int(compose("config", [f"env={env}", "protocol=as_run"]).agent.total_timesteps)


def run_ours(python: str, env: str, bonus: str, seeds: list[int], work: Path, extra: list[str]) -> dict:
    results = work / "ours"
    start = time.perf_counter()
    out = subprocess.run([python, str(ROOT / "launch.py"), "protocol=as_run", f"env={env}", f"bonus={bonus}",
                          f"seed={seeds[0]}", f"num_seeds={len(seeds)}", "experiment=fidelity",
                          f"results_dir={results}", "wandb.mode=disabled", *extra],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"our as-run protocol failed on {env}/{bonus}:\n{out.stderr[-3000:]}")
    wall = time.perf_counter() - start
    curves = []
    for seed in seeds:
        (run,) = sorted((results / "fidelity" / env / bonus).glob(f"*/seed_{seed}"))
        summary = json.loads((run / "summary.json").read_text())
        rows = [line.split(",") for line in (run / "metrics.csv").read_text().splitlines()]
        column = rows[0].index("eval/episode_return")
        curves.append([summary["eval_return_at_start"], *(float(r[column]) for r in rows[1:])])
    return {"returns": curves, "wall_s": wall, "variant": run.parent.name}


def iqm(x: np.ndarray) -> float:
    """The mean of the middle half (rliable's IQM: scipy's 25% trimmed mean)."""
    from scipy.stats import trim_mean

    return float(trim_mean(x, 0.25))


def prob_greater(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 over every pair."""
    return float(((x[:, None] > y[None]).mean() + 0.5 * (x[:, None] == y[None]).mean()))


def compare(ours: np.ndarray, theirs: np.ndarray, reps: int = 5000, seed: int = 0) -> dict:
    """Each side's IQM and P(ours > theirs), each with a 95% percentile bootstrap interval (seeds
    resampled on each side), and Mann-Whitney's two-sided p."""
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(ours), (reps, len(ours)))
    b = rng.integers(0, len(theirs), (reps, len(theirs)))
    boot = {"iqm_ours": [iqm(ours[i]) for i in a], "iqm_theirs": [iqm(theirs[j]) for j in b],
            "p_ours_greater": [prob_greater(ours[i], theirs[j]) for i, j in zip(a, b)]}
    point = {"iqm_ours": iqm(ours), "iqm_theirs": iqm(theirs), "p_ours_greater": prob_greater(ours, theirs)}
    same = np.array_equal(np.sort(ours), np.sort(theirs))
    return {**{k: [v, *np.percentile(boot[k], [2.5, 97.5]).tolist()] for k, v in point.items()},
            "mann_whitney_p": 1.0 if same else float(mannwhitneyu(ours, theirs, alternative="two-sided").pvalue)}


def line(env: str, bonus: str, name: str, stats: dict) -> str:
    iv = lambda k: f"{stats[k][0]:.2f} [{stats[k][1]:.2f}, {stats[k][2]:.2f}]"  # noqa: E731
    return (f"{env} {bonus} {name}: IQM ours {iv('iqm_ours')}, theirs {iv('iqm_theirs')}; "
            f"P(ours > theirs) {iv('p_ours_greater')}; Mann-Whitney p = {stats['mann_whitney_p']:.3g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a tree of github.com/riiswa/rejax at COMMIT")
    parser.add_argument("--pointax", type=Path, help="a tree of github.com/riiswa/pointax (PointMaze panels)")
    parser.add_argument("--env", required=True, choices=sorted(THEIR_ENV))
    parser.add_argument("--bonuses", default="none,rfig", help=f"comma-separated, of {', '.join(THEIR_BONUS)}")
    parser.add_argument("--seeds", default="100-107", type=parse_seeds)
    parser.add_argument("--work", type=Path, default=Path("/tmp/rfig-authors-check"))
    parser.add_argument("--python", type=Path, help="their environment's Python (default: made under --work)")
    parser.add_argument("--ours-python", default=sys.executable, help="the Python that runs our launch.py")
    parser.add_argument("--reuse", action="store_true", help="reuse a side's results already in --work")
    parser.add_argument("--out", type=Path, help="write the curves and statistics as JSON")
    parser.add_argument("extra", nargs="*", help="overrides for our side (one difference toggled, e.g. "
                                                 "agent.time_limit=truncation)")
    args = parser.parse_args(argv)
    bonuses = args.bonuses.split(",")
    unknown = [b for b in bonuses if b not in THEIR_BONUS]
    if unknown:
        parser.error(f"--bonuses: {', '.join(unknown)} unknown; valid: {', '.join(THEIR_BONUS)}")
    if args.env.startswith("pointmaze") and args.pointax is None and args.python is None:
        parser.error("--pointax is needed for the PointMaze panels (their code imports pointax)")
    args.work.mkdir(parents=True, exist_ok=True)
    python = args.python or authors_python(args.checkout.resolve(), args.pointax, args.work)
    steps = as_run_budget(args.env)
    report: dict = {"commit": COMMIT, "env": args.env, "seeds": args.seeds, "total_timesteps": steps,
                    "extra": args.extra, "bonuses": {}}
    for bonus in bonuses:
        cache = args.work / f"theirs-{args.env}-{bonus}-{args.seeds[0]}-{len(args.seeds)}.json"
        if args.reuse and cache.exists():
            theirs = json.loads(cache.read_text())
        else:
            theirs = run_theirs(python, args.checkout.resolve(), args.env, bonus, steps, args.seeds)
            cache.write_text(json.dumps(theirs))
        ours = run_ours(args.ours_python, args.env, bonus, args.seeds, args.work, args.extra)
        a, b = np.asarray(ours["returns"]), np.asarray(theirs["returns"])
        if a.shape != b.shape:
            raise SystemExit(f"{args.env}/{bonus}: our curves are {a.shape}, theirs {b.shape} (seeds x points)")
        stats = {"final": compare(a[:, -1], b[:, -1]), "auc": compare(a.mean(1), b.mean(1))}
        report["bonuses"][bonus] = {"ours": ours, "theirs": theirs, **stats}
        for name in ("final", "auc"):
            print(line(args.env, bonus, name, stats[name]))
        print(f"{args.env} {bonus} wall time (whole process, {len(args.seeds)} seeds): ours {ours['wall_s']:.0f} s, "
              f"theirs {theirs['wall_s']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
