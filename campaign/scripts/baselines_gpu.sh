#!/usr/bin/env bash
# What the working-baselines campaign still lacks, on one GPU box, in one command that ends before a
# deadline (docs/paper32.md: the baselines campaign). The work is read from the committed data, not
# named here: `python -m campaign.repro.stages gpu-parts --left DATA --sweep SWEEP` turns the stages
# the data lacks into sweeps (one line each: experiment and overrides; a block stage's cells at all
# 32 seeds), and each runs side by side with the others as a campaign/scripts/paper32_gpu.sh call
# with a results folder and an output folder of its own. The outputs come back as one archive,
# OUT_DIR/gpu.tgz (the device tool returns at most eight files). Then, here:
#   tar xzf gpu.tgz -C X && for d in X/*/data; do python -m campaign.repro merge --from $d --data DATA; done
#
#   COMMIT=<sha> campaign/scripts/baselines_gpu.sh OUT_DIR                     # the non-Brax panels left
#   COMMIT=<sha> SWEEP=paper32_brax campaign/scripts/baselines_gpu.sh OUT_DIR  # the sparse Brax ones (wheels/brax)
#   ALLOW_CPU=1 DEADLINE_S=120 EXTRA='hydra.sweeper.params.env=cartpole agent.total_timesteps=20000 num_seeds=2' \
#       campaign/scripts/baselines_gpu.sh /tmp/dry                              # a dry run on a CPU
#   CAMPAIGN=paper32_as_run ENVS=sparse_hopper,sparse_walker2d,sparse_ant,sparse_halfcheetah \
#       campaign/scripts/baselines_gpu.sh OUT_DIR    # the grid as run: the first block of 8 seeds the panels lack
#
# CAMPAIGN=paper32_as_run takes its stages (and DATA, SWEEP) from the as-run campaign: the first block
# of 8 seeds any of ENVS lacks (every panel when ENVS is empty), the preset's six bonuses and our VIME
# under the protocol as two sweeps side by side; Brax is probed when ENVS names a sparse Brax panel.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
OUT_DIR=$1
PY=${PYTHON:-python3}
CAMPAIGN=${CAMPAIGN:-baselines}
ENVS=${ENVS:-}
if [ "$CAMPAIGN" = paper32_as_run ]; then
    SWEEP=${SWEEP:-paper32_as_run}
    DATA=${DATA:-docs/results/paper32_as_run/data}
    case ",$ENVS," in *,sparse_*|,,) export BRAX_PROBE=${BRAX_PROBE:-1} ;; esac
else
    SWEEP=${SWEEP:-paper32}
    DATA=${DATA:-docs/results/paper32/data}
fi
EXTRA=${EXTRA:-}
JOBS_TOTAL=${JOBS_TOTAL:-16}     # jobs at once on the GPU, shared out over the sweeps
export DEADLINE_S=${DEADLINE_S:-300} SWEEP DATA
# The sweeps share one GPU: any process that took the default 75% of its memory upfront (the device
# check, a job) left the other sweeps' jobs none ("no supported devices found"), so nothing here
# preallocates; each job still gets its share as a cap (run/placement.py).
export XLA_PYTHON_CLIENT_PREALLOCATE=false
WORK=$(mktemp -d)
mkdir -p "$OUT_DIR" || exit 2
say() { echo "[baselines-gpu] $SECONDS s: $*"; }

# The packages once, into one site every sweep shares (then none of them installs anything).
export SITE="$WORK/site"
INSTALL_ONLY=1 bash campaign/scripts/paper32_gpu.sh "$WORK/install" > /dev/null 2>&1 \
    || { tail -n 5 "$WORK/install/paper32_gpu.log"; say "installing the packages failed"; exit 1; }
mapfile -t parts < <(PYTHONPATH="$SITE:$PWD/src:$PWD" "$PY" -m campaign.repro.stages gpu-parts --left "$DATA" \
    --campaign "$CAMPAIGN" --sweep "$SWEEP" --envs "$ENVS")
[ ${#parts[@]} -gt 0 ] && [ -n "${parts[0]}" ] || { say "nothing left of sweep=$SWEEP in $DATA"; exit 0; }
jobs=$(( JOBS_TOTAL / ${#parts[@]} )); [ "$jobs" -ge 1 ] || jobs=1
say "${#parts[@]} sweep(s) of sweep=$SWEEP, $jobs job(s) at once each:"; printf '  %s\n' "${parts[@]}"

part() {  # part NAME EXPERIMENT OVERRIDES...: one paper32_gpu.sh sweep into WORK/NAME
    local name=$1 experiment=$2; shift 2
    # shellcheck disable=SC2086
    JOBS_PER_GPU=$jobs EXPERIMENT=$experiment RESULTS="$WORK/results-$name" \
        bash campaign/scripts/paper32_gpu.sh "$WORK/$name" "$@" $EXTRA > /dev/null 2>&1
    say "$name: exit $? (its log: $name/paper32_gpu.log)"
}
names=()
for i in "${!parts[@]}"; do
    read -r -a words <<< "${parts[$i]}"
    names+=("part$i-${words[0]}")
    part "part$i-${words[0]}" "${words[@]}" &
done
wait
for name in "${names[@]}"; do
    grep -h "s: done\|cells\|complete\|failed\|sweep ended" "$WORK/$name/paper32_gpu.log" | tail -n 6
done
tar czf "$OUT_DIR/gpu.tgz" -C "$WORK" "${names[@]}" && say "wrote $OUT_DIR/gpu.tgz"
