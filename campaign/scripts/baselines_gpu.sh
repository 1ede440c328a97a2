#!/usr/bin/env bash
# The working-baselines campaign's non-Brax work on one GPU box, in one command that ends before a
# deadline (docs/paper32.md: the baselines campaign). Three sweeps run side by side, each a
# campaign/scripts/paper32_gpu.sh call with a results folder, a site folder and an output folder of
# its own:
#   vime    VIME at its defaults and the noise control, 32 seeds, on the MinAtar panels the CPU lanes
#           have not reached (the stages bl-<panel>-<block>; experiment paper32)
#   signal  the signal audit's MinAtar stages left (RFIG, RND, #Explo at seeds 0-7; experiment signal)
#   probe   #Explo's hash granularity (bonus.hash_bits) on the panels where the signal check finds it
#           degenerate at 32 bits, seeds 0-7 (experiment hashprobe; a diagnosis, never in the claims)
# and the three outputs come back as one archive, OUT_DIR/gpu.tgz (the device tool returns at most
# eight files). Then, here:
#   tar xzf gpu.tgz -C X && python -m campaign.repro merge --from X/vime/data --data docs/results/paper32/data
#   (and X/signal/data alike; X/probe/data is read by campaign/scripts/hash_probe.py)
#
#   COMMIT=<sha> campaign/scripts/baselines_gpu.sh OUT_DIR
#   ALLOW_CPU=1 DEADLINE_S=120 VIME_ENVS=cartpole SIGNAL_ENVS=cartpole PROBE_ENVS=cartpole \
#       EXTRA='agent.total_timesteps=20000 num_seeds=2' campaign/scripts/baselines_gpu.sh /tmp/dry   # a dry run
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
OUT_DIR=$1
VIME_ENVS=${VIME_ENVS:-minatar_asterix,minatar_space_invaders,minatar_freeway}
SIGNAL_ENVS=${SIGNAL_ENVS:-minatar_space_invaders,minatar_freeway}
PROBE_ENVS=${PROBE_ENVS:-minatar_breakout,minatar_asterix}  # MountainCar: probed in the first call
PROBE_BITS=${PROBE_BITS:-8,16}
EXTRA=${EXTRA:-}
JOBS=${JOBS:-6,6,4}  # jobs at once on the GPU of the three sweeps: vime, signal, probe
export DEADLINE_S=${DEADLINE_S:-300}
# Three sweeps share one GPU: any process that took the default 75% of its memory upfront (the
# device check, a job) left the other sweeps' jobs none ("no supported devices found"), so nothing
# here preallocates; each job still gets its share as a cap (run/placement.py).
export XLA_PYTHON_CLIENT_PREALLOCATE=false
WORK=$(mktemp -d)
mkdir -p "$OUT_DIR" || exit 2

part() {  # part NAME JOBS EXPERIMENT OVERRIDES...: one paper32_gpu.sh sweep into WORK/NAME
    local name=$1 jobs=$2 experiment=$3; shift 3
    # shellcheck disable=SC2086
    JOBS_PER_GPU=$jobs EXPERIMENT=$experiment RESULTS="$WORK/results-$name" SITE="$WORK/site-$name" \
        bash campaign/scripts/paper32_gpu.sh "$WORK/$name" "$@" $EXTRA > /dev/null 2>&1
    echo "[baselines-gpu] $name: exit $? (its log: $name/paper32_gpu.log)"
}
IFS=, read -r jobs_vime jobs_signal jobs_probe <<< "$JOBS"
part vime "$jobs_vime" paper32 bonus=vime,noise "env=$VIME_ENVS" &
part signal "$jobs_signal" signal bonus=rfig,rnd,hashexplo "env=$SIGNAL_ENVS" seed=0 num_seeds=8 &
part probe "$jobs_probe" hashprobe bonus=hashexplo "bonus.hash_bits=$PROBE_BITS" "env=$PROBE_ENVS" seed=0 num_seeds=8 &
wait
for name in vime signal probe; do grep -h "s: done\|cells\|complete\|failed\|sweep ended" "$WORK/$name/paper32_gpu.log" | tail -n 6; done
tar czf "$OUT_DIR/gpu.tgz" -C "$WORK" vime signal probe && echo "[baselines-gpu] wrote $OUT_DIR/gpu.tgz"
