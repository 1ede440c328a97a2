#!/usr/bin/env bash
# The GPU numbers in one go, about 7 minutes on one H100 and up to 7 more for part 4 (each part has
# its own time limit, so a slow part cannot eat the next one's):
#   1. RFIG's precision: MountainCar, 32 seeds, 1M steps, bonus.matmul_precision=default (the
#      GPU's TF32) against highest (the default): recoveries, refreshes, largest residual, steps/s;
#   2. checkpoint cost: RFIG, Breakout, 32 seeds, 1M steps, cadence off / default / every 5 windows;
#   3. speed against a PureJaxRL-style PPO at 1, 8 and 32 seeds on MountainCar and Breakout;
#   4. stacked sweep jobs: RFIG, 3 bonus.beta x 2 agent.lr x 8 seeds on MountainCar and Breakout,
#      one job per setting against one stacked job (docs/speed.md has the CPU's numbers).
#
#   benchmarks/gpu_check.sh [OUT_DIR]        (default: $OUT, else gpu-check/)
#   SEEDS=2 WINDOWS=2 REF_SEEDS=1 STACK_SEEDS=1 STACK_STEPS=49152 benchmarks/gpu_check.sh /tmp/dry   # a dry run on CPU
#
# PYTHON picks the interpreter (default: python3). A box without a package index but with CUDA
# JAX, flax and optax installed (../shared/specs/gpu.md) needs the project's pure-Python
# dependencies: `make gpu-wheels` here downloads them into .gpu-wheels/, which this script
# installs from (no index, no dependencies) when an import fails.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-${OUT:-gpu-check}}
PY=${PYTHON:-python3}
SEEDS=${SEEDS:-32} WINDOWS=${WINDOWS:-41} REF_SEEDS=${REF_SEEDS:-1,8,32}  # smaller for a dry run on CPU
STACK_SEEDS=${STACK_SEEDS:-8} STACK_STEPS=${STACK_STEPS:-245760}
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
exec > >(tee "$OUT_DIR/gpu_check.log") 2>&1

if ! "$PY" -c "import hydra, gymnax, submitit, hydra_plugins.hydra_submitit_launcher" 2>/dev/null \
        && [ -d .gpu-wheels ]; then
    "$PY" -m pip install --quiet --no-index --no-deps .gpu-wheels/*.whl
fi
"$PY" -c "import jax; print('jax', jax.__version__, jax.devices())" || exit 1
START=$SECONDS
part() { echo; echo "=== $1 (at $((SECONDS - START)) s)"; }

part "1. RFIG under TF32: MountainCar, $SEEDS seeds, $WINDOWS windows"
for precision in default highest; do
    timeout 150 "$PY" launch.py env=mountaincar bonus=rfig num_seeds=$SEEDS bonus.matmul_precision=$precision \
        experiment=precision-$precision results_dir="$OUT_DIR/results" compile_cache="$OUT_DIR/jax_cache" \
        agent.total_timesteps=$((WINDOWS * 24576)) wandb.mode=disabled || echo "precision=$precision: exit $?"
done
"$PY" - "$OUT_DIR/results" <<'PY'
import json, sys
from pathlib import Path
print("| matmul_precision | seeds | recoveries | refreshes | max residual | env steps/s |")
print("|---|---|---|---|---|---|")
for precision in ("default", "highest"):
    runs = [json.loads(p.read_text()) for p in sorted(Path(sys.argv[1]).glob(f"precision-{precision}/**/summary.json"))]
    if runs:
        total = lambda k: sum(r.get(f"bonus_{k}", 0) for r in runs)  # noqa: E731
        print(f"| {precision} | {len(runs)} | {total('recoveries'):.0f} | {total('refreshes'):.0f} | "
              f"{max(r.get('bonus_max_inverse_residual', float('nan')) for r in runs):.3g} | "
              f"{runs[0]['env_steps_per_second']:,.0f} |")
PY

part "2. Checkpoint cost: RFIG, Breakout, $SEEDS seeds, $WINDOWS windows (41: 1M steps)"
timeout 210 "$PY" benchmarks/bench_checkpoint_runs.py --env minatar_breakout --bonus rfig --seeds $SEEDS \
    --windows $WINDOWS --rounds 1 --cadences default,every5 || echo "checkpoint benchmark: exit $?"

part "3. Against a PureJaxRL-style PPO"
timeout 240 "$PY" benchmarks/bench_reference_ppo.py --env mountaincar,minatar_breakout --seeds $REF_SEEDS \
    --windows 4 --rounds 3 || echo "reference benchmark: exit $?"

part "4. Stacked sweep jobs: RFIG, 3 bonus.beta x 2 agent.lr x $STACK_SEEDS seeds, $STACK_STEPS steps per run"
timeout 420 "$PY" benchmarks/bench_stacked.py --envs mountaincar,minatar_breakout --seeds $STACK_SEEDS \
    --steps $STACK_STEPS --work-dir "$OUT_DIR/stacked" || echo "stacked benchmark: exit $?"
part "done"
