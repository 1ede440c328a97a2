#!/usr/bin/env bash
# The package as a user of its bonuses gets it (docs/library.md): a wheel built from this tree,
# installed alone (no extras) into a fresh virtual environment with gymnax for the examples' envs,
# runs examples/ppo_bonus.py for a few updates and examples/dqn_bonus.py for a few hundred iterations
# from a folder outside the checkout (so `import rfig_exp` is the wheel's), without importing any
# extra's package, and docs/library-extending.md's module and script; then the same environment with
# the wheel's `[all]` extras runs launch.py in the checkout for a tiny run, which finds conf/ as
# before. The environment's size is printed after each install (`du -sh`).
#
#   scripts/wheel_check.sh                 # or `make wheel-check`; PYTHON=python3.11 picks the interpreter
#
# It installs jax, flax, gymnax, then brax, hydra, wandb & co. (from pip's index or cache): a few
# minutes. The folder it works in is removed at the end (KEEP=1 keeps it and prints its path).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rfig-wheel-check.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; else echo "[wheel-check] working in $WORK"; fi

echo "[wheel-check] building the wheel"
# from a copy of the tracked files: the wheel holds nothing untracked, and the build leaves no
# build/ or egg-info behind in the checkout
mkdir "$WORK/tree"
git ls-files -z | xargs -0 cp --parents -t "$WORK/tree"
"$PYTHON" -m pip wheel --quiet --no-deps -w "$WORK/dist" "$WORK/tree"
WHEEL=$(ls "$WORK"/dist/rfig_exp-*.whl)
echo "[wheel-check] $(basename "$WHEEL"): installing it into a fresh virtual environment"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$VPY" -m pip install --quiet --upgrade pip
echo "[wheel-check] an empty environment: $(du -sh "$WORK/venv" | cut -f1)"
"$VPY" -m pip install --quiet "$WHEEL"
echo "[wheel-check] the wheel alone: $(du -sh "$WORK/venv" | cut -f1), $("$VPY" -m pip list 2>/dev/null | tail -n +3 | wc -l) packages"
"$VPY" -m pip install --quiet gymnax==1.0.1 six   # the example's env (gymnax imports six without declaring it)

echo "[wheel-check] the example, from outside the checkout, with none of the extras' packages"
mkdir "$WORK/user" && cp "$REPO/examples/ppo_bonus.py" "$WORK/user/"
cd "$WORK/user"
"$VPY" -c "import rfig_exp, sys; f = rfig_exp.__file__; print('rfig_exp from', f); sys.exit('site-packages' not in f)"
# each example as __main__, then which packages of the extras its process imported: none may be
HEAVY="('hydra', 'omegaconf', 'submitit', 'wandb', 'brax', 'rliable')"
"$VPY" -c "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path('ppo_bonus.py', run_name='__main__')
loaded = sorted(m for m in $HEAVY if m in sys.modules); print('extras imported:', loaded); sys.exit(bool(loaded))" \
    ppo_bonus.py --bonus rfig --seeds 2 --set total_timesteps=2048 num_envs=8 num_steps=64 \
    num_minibatches=4 update_epochs=1 warmup_steps=8 final_updates=2 num_features=64 lengthscale_samples=32
"$VPY" ppo_bonus.py --bonus rnd --seeds 1 --set total_timesteps=2048 num_envs=8 num_steps=64 \
    num_minibatches=4 update_epochs=1 warmup_steps=8 final_updates=2 hidden=[32,32]

echo "[wheel-check] the DQN example (ReplayIntrinsic) on Breakout-MinAtar, with RFIG and without a bonus"
cp "$REPO/examples/dqn_bonus.py" "$WORK/user/"
DQN_FEW="total_timesteps=3200 learning_starts=1600 buffer_size=3200 batch_size=32 warmup_steps=8 final_iterations=50"
"$VPY" -c "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path('dqn_bonus.py', run_name='__main__')
loaded = sorted(m for m in $HEAVY if m in sys.modules); print('extras imported:', loaded); sys.exit(bool(loaded))" \
    dqn_bonus.py --bonus rfig --seeds 2 --set $DQN_FEW num_features=64 lengthscale_samples=32
"$VPY" dqn_bonus.py --bonus none --seeds 1 --set $DQN_FEW

echo "[wheel-check] docs/library-extending.md: a bonus of the user's own module, by module="
mkdir "$WORK/own" && cd "$WORK/own"
"$VPY" - "$REPO/docs/library-extending.md" <<'PY'
import re, sys
from pathlib import Path
blocks = re.findall(r"```python\n(.*?)```", Path(sys.argv[1]).read_text(), flags=re.S)
Path("my_bonus.py").write_text(blocks[0])
Path("use.py").write_text(blocks[1])
PY
PYTHONPATH=. "$VPY" use.py

echo "[wheel-check] the wheel's [all] extras, then launch.py in the checkout with that environment"
"$VPY" -m pip install --quiet "$WHEEL[all]"
echo "[wheel-check] with [all]: $(du -sh "$WORK/venv" | cut -f1), $("$VPY" -m pip list 2>/dev/null | tail -n +3 | wc -l) packages"
cd "$REPO"
"$VPY" launch.py env=cartpole bonus=none agent.total_timesteps=256 agent.num_envs=4 agent.num_steps=16 \
    agent.num_minibatches=2 agent.update_epochs=1 eval_frequency=128 agent.obs_norm_init_steps=8 \
    wandb.mode=disabled results_dir="$WORK/results" compile_cache=null
ls "$WORK"/results/default/cartpole/none/*/seed_0/summary.json > /dev/null
echo "[wheel-check] ok"
