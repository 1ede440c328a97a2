"""The PureJaxRL diffs of the docs, applied as a user applies them, then trained: docs/library.md's (its
``wrappers.py`` on gymnax 1.0, then the bonus in ``ppo.py``) on MountainCar-v0, and docs/library-dqn.md's
(``dqn.py`` on gymnax 1.0 and jax 0.10, then the bonus) on Breakout-MinAtar.

    python3 scripts/check_purejaxrl_diff.py PATH/TO/purejaxrl                  # a fresh environment (below)
    python3 scripts/check_purejaxrl_diff.py PATH/TO/purejaxrl --python ENV/bin/python --only ppo

``PATH/TO/purejaxrl`` is a checkout of github.com/luchris429/purejaxrl, at the commit the docs name
(:data:`COMMIT`; another commit is tried with a warning). Its three files are copied into a temporary
folder, the diffs are extracted from the docs (every fenced ``diff`` block that opens with
``--- a/purejaxrl/``, in the pages' order) and applied there with ``git apply --unidiff-zero``; the
checkout is not touched. Without ``--python`` the environment is the documented install: a wheel of
this tree in a fresh virtual environment, with gymnax and distrax (PureJaxRL's ``ppo.py`` imports it)
and, for the DQN, flashbax and wandb (``dqn.py`` imports them); a few minutes from pip's cache. Each
bonus of ``--bonuses`` then trains, seeds vmapped as PureJaxRL does (``jax.jit(jax.vmap(make_train(config)))``,
``config["BONUS"]`` naming the bonus), and one line per bonus and seed reports its returns and its
intrinsic reward from PureJaxRL's ``metric`` output, raw and scaled; a non-finite reward, or none
at all, fails the check (exit 1). ``KEEP=1`` keeps the temporary folder.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "31756b197773a52db763fdbe6d635e4b46522a73"  # PureJaxRL's main, 2024-11 ("Update README.md")
PAGES = {"ppo": ROOT / "docs" / "library.md", "dqn": ROOT / "docs" / "library-dqn.md"}
FILES = {"ppo": ("wrappers.py", "ppo.py"), "dqn": ("dqn.py",)}
PACKAGES = {"ppo": ["gymnax==1.0.1", "six", "distrax"], "dqn": ["gymnax==1.0.1", "six", "flashbax", "wandb"]}

# The user's own run script: PureJaxRL's config for the file (its __main__'s), another env, the bonus by
# name; the patched file is imported first, so rfig_exp.set_cpu_flags() runs before jax is imported.
DRIVER = """
import json, sys, time
sys.path.insert(0, "purejaxrl")
import {module}, jax, numpy as np  # the patched file first: its set_cpu_flags() before jax
config = {config}
for bonus in {bonuses}:
    start = time.time()
    train = jax.jit(jax.vmap({module}.make_train(dict(config, BONUS=bonus))))
    out = jax.block_until_ready(train(jax.random.split(jax.random.PRNGKey(0), {seeds})))
    m = jax.tree.map(np.asarray, out["metrics"])
    for seed in range({seeds}):
        raw, scaled = m["intrinsic_reward"][seed], m["intrinsic_reward_normalized"][seed]
        first = int(np.flatnonzero(scaled)[0]) if scaled.any() else 0  # the DQN's: zero while its std warms up
        print(json.dumps({{"file": "{module}.py", "env": config["ENV_NAME"], "bonus": bonus, "seed": seed,
                          "return_first_last": {returns},
                          "intrinsic_reward_first_last": [float(raw[0]), float(raw[-1])],
                          "intrinsic_reward_normalized_first_last": [float(scaled[first]), float(scaled[-1])],
                          "first_scaled_at": first,
                          "finite": bool(np.isfinite(raw).all() and np.isfinite(scaled).all()),
                          "varying": bool(scaled.std() > 0), "seconds": round(time.time() - start, 1)}}))
"""
# PureJaxRL's ppo.py __main__ config on MountainCar-v0; the returns of the episodes that ended in the
# first and the last 5 updates
PPO_CONFIG = {"LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "UPDATE_EPOCHS": 4, "NUM_MINIBATCHES": 4, "GAMMA": 0.99,
              "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5,
              "ACTIVATION": "tanh", "ENV_NAME": "MountainCar-v0", "ANNEAL_LR": True, "DEBUG": False}
PPO_RETURNS = ("[float(m['returned_episode_returns'][seed][s][m['returned_episode'][seed][s]].mean()) "
               "for s in (slice(0, 5), slice(-5, None))]")
# PureJaxRL's dqn.py main() config on Breakout-MinAtar, with 16 envs (RFIG keeps floor(16 * 0.0625) = 1
# state per step) and learning from 5,000 steps; the logged return, averaged over the first and last 10%
DQN_CONFIG = {"NUM_ENVS": 16, "BUFFER_SIZE": 10000, "BUFFER_BATCH_SIZE": 128, "EPSILON_START": 1.0,
              "EPSILON_FINISH": 0.05, "EPSILON_ANNEAL_TIME": 25e4, "TARGET_UPDATE_INTERVAL": 512, "LR": 2.5e-4,
              "LEARNING_STARTS": 5000, "TRAINING_INTERVAL": 16, "LR_LINEAR_DECAY": False, "GAMMA": 0.99, "TAU": 1.0,
              "ENV_NAME": "Breakout-MinAtar", "WANDB_MODE": "disabled"}
DQN_RETURNS = "[float(r.mean()) for r in np.array_split(m['returns'][seed], 10)[::9]]"


def diffs(page: Path) -> list[str]:
    """The page's fenced ``diff`` blocks that open with ``--- a/purejaxrl/``, in order."""
    blocks = re.findall(r"```diff\n(.*?)```", page.read_text(), flags=re.S)
    return [b for b in blocks if b.startswith("--- a/purejaxrl/")]


def apply(checkout: Path, work: Path, kind: str) -> None:
    """``kind``'s files copied from ``checkout`` into ``work/purejaxrl`` and its page's diffs applied there."""
    (work / "purejaxrl").mkdir(exist_ok=True)
    for name in FILES[kind]:
        shutil.copy(checkout / "purejaxrl" / name, work / "purejaxrl" / name)
    found = diffs(PAGES[kind])
    if not found:
        sys.exit(f"no PureJaxRL diff in {PAGES[kind].relative_to(ROOT)}")
    for i, text in enumerate(found):
        patch = work / f"{kind}_{i}.diff"
        patch.write_text(text)
        subprocess.run(["git", "apply", "--unidiff-zero", "--verbose", patch.name], cwd=work, check=True)


def environment(work: Path, kinds: list[str]) -> str:
    """A fresh virtual environment with a wheel of this tree and the packages ``kinds`` need; its python."""
    tree, dist, venv = work / "tree", work / "dist", work / "venv"
    tree.mkdir()
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(tree)],
                   check=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    wheel = next(dist.glob("rfig_exp-*.whl"))
    packages = sorted({p for kind in kinds for p in PACKAGES[kind]})
    print(f"[purejaxrl-check] installing {wheel.name} and {' '.join(packages)} into a fresh environment", flush=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel), *packages], check=True)
    return python


def train(python: str, work: Path, kind: str, bonuses: list[str], seeds: int, timesteps: int) -> bool:
    """The patched file trained with each bonus; True when every line reports a finite intrinsic reward."""
    config = {**(PPO_CONFIG if kind == "ppo" else DQN_CONFIG), "TOTAL_TIMESTEPS": timesteps}
    code = DRIVER.format(module=kind, config=repr(config), bonuses=repr(bonuses), seeds=seeds,
                         returns=PPO_RETURNS if kind == "ppo" else DQN_RETURNS)
    (work / f"run_{kind}.py").write_text(code)
    out = subprocess.run([python, f"run_{kind}.py"], cwd=work, capture_output=True, text=True)
    print(out.stdout, end="", flush=True)
    if out.returncode != 0:
        print(out.stderr[-4000:], file=sys.stderr)
        return False
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return len(lines) == len(bonuses) * seeds and all('"finite": true' in line for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("purejaxrl", type=Path, help="a PureJaxRL checkout (the folder holding purejaxrl/ppo.py)")
    parser.add_argument("--python", help="an environment's python that has rfig_exp, gymnax, distrax (and flashbax, "
                                         "wandb for the DQN) instead of a fresh one")
    parser.add_argument("--only", choices=("ppo", "dqn"), help="one of the two diffs (default: both)")
    parser.add_argument("--bonuses", nargs="+", default=["rfig", "rnd"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--ppo-timesteps", type=int, default=100_000, help="per seed, MountainCar-v0")
    parser.add_argument("--dqn-timesteps", type=int, default=20_000, help="per seed, Breakout-MinAtar")
    args = parser.parse_args()
    head = subprocess.run(["git", "-C", str(args.purejaxrl), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.stdout.strip() != COMMIT:
        print(f"[purejaxrl-check] warning: {args.purejaxrl} is at {head.stdout.strip() or 'no git commit'}, the docs' "
              f"diffs are against {COMMIT[:7]}", file=sys.stderr)
    kinds = [args.only] if args.only else ["ppo", "dqn"]
    work = Path(tempfile.mkdtemp(prefix="rfig-purejaxrl-check."))
    try:
        for kind in kinds:
            apply(args.purejaxrl, work, kind)
        python = args.python or environment(work, kinds)
        steps = {"ppo": args.ppo_timesteps, "dqn": args.dqn_timesteps}
        ok = all([train(python, work, kind, args.bonuses, args.seeds, steps[kind]) for kind in kinds])
    finally:
        if os.environ.get("KEEP"):
            print(f"[purejaxrl-check] kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("[purejaxrl-check] ok" if ok else "[purejaxrl-check] FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
