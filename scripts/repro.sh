#!/usr/bin/env bash
# The reproduction (docs/results/repro/): every sweep it needs, in stages, each relaunched until it
# completes. A relaunch skips complete seeds and resumes partial ones from their last checkpoint,
# so this script can be stopped at any point and started again; a job that stalls (exit 75, the
# watchdog) or is killed is relaunched without a person.
#
#   scripts/repro.sh                       # every stage, on two lanes of one core each (LANES=1: one)
#   scripts/repro.sh minatar-asterix brax-hopper   # some stages, one after another
#   scripts/repro.sh --list                # the stages, in the order the lanes take them
#   RESULTS=/data/rfig PY=python scripts/repro.sh deepsea-40
#   EXTRA="hydra/launcher=slurm hydra.launcher.partition=cpu" scripts/repro.sh core   # on a cluster
#
# Each stage is one env (or one DeepSea size, or one bonus's sensitivity knobs), so a stage
# half-done when the machine goes away costs only that stage. On two lanes, each lane takes the
# next stage that no lane has taken yet. A stage's line `[repro] stage NAME complete` is the cue
# to publish it (README: the reproduction).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RESULTS=${RESULTS:-results}
TRIES=${TRIES:-4}
EXTRA=${EXTRA:-}
# wandb off: the CSV files are the record; stall_timeout_s 300: a wedged job costs 5 minutes, not 15.
COMMON="results_dir=$RESULTS wandb.mode=disabled stall_timeout_s=300"

# In the order the lanes take them: the cheap panels first, a long Brax stage early on the
# second lane, the sensitivity study last.
STAGES="core minatar-asterix brax-halfcheetah minatar-freeway minatar-space_invaders brax-hopper
deepsea-10 deepsea-20 deepsea-30 deepsea-40 brax-walker2d brax-ant
sens-rfig sens-rnd sens-vime sens-hashexplo"

sweep() {  # sweep ARGS...: run one launch.py -m command until it exits 0 (at most TRIES times)
    local try code
    for try in $(seq 1 "$TRIES"); do
        echo "[repro] $(date -u +%FT%TZ) try $try/$TRIES: launch.py -m $* $COMMON $EXTRA"
        # shellcheck disable=SC2086
        $PY launch.py -m "$@" $COMMON $EXTRA
        code=$?
        echo "[repro] $(date -u +%FT%TZ) exit $code"
        case $code in
            0) return 0 ;;
            2) echo "[repro] bad configuration: not retried"; return 2 ;;
            75) echo "[repro] a job stalled (watchdog): relaunching, it resumes from its checkpoint" ;;
            *) echo "[repro] exit $code: relaunching (complete seeds are skipped, partial ones resume)" ;;
        esac
    done
    echo "[repro] gave up after $TRIES tries: $*"
    return 1
}

run_stage() {
    case $1 in
        core) sweep sweep=repro ;;
        minatar-*) sweep sweep=repro_minatar "env=minatar_${1#minatar-}" ;;
        brax-*) sweep sweep=repro_brax "env=sparse_${1#brax-}" ;;
        deepsea-[0-9]*) sweep sweep=deepsea_scaling env=deepsea "env.size=${1#deepsea-}" ;;
        sens-rfig)
            sweep sweep=sensitivity bonus=rfig 'bonus.lengthscale_scale=0.25,0.5,1,2,4' &&
            sweep sweep=sensitivity bonus=rfig 'bonus.lengthscale_method=valko_fixed_point,participation_ratio' &&
            sweep sweep=sensitivity bonus=rfig 'bonus.reg=0.1,10' &&
            sweep sweep=sensitivity bonus=rfig 'bonus.beta=0.25,1' &&
            sweep sweep=sensitivity bonus=rfig 'bonus.num_features=256,512' &&
            sweep sweep=sensitivity bonus=rfig 'bonus.rho=0.03125,0.125' ;;
        sens-rnd)
            sweep sweep=sensitivity bonus=rnd 'bonus.lr=1e-5,1e-4,1e-3' &&
            sweep sweep=sensitivity bonus=rnd 'bonus.update_proportion=0.25,0.5' ;;
        sens-vime)
            sweep sweep=sensitivity bonus=vime 'bonus.lr=1e-5,1e-4,1e-3' &&
            sweep sweep=sensitivity bonus=vime 'bonus.step_size=0.001,0.1' ;;
        sens-hashexplo)
            sweep sweep=sensitivity bonus=hashexplo 'bonus.lr=1e-5,1e-4,1e-3' &&
            sweep sweep=sensitivity bonus=hashexplo 'bonus.hash_bits=16,64' ;;
        *) echo "unknown stage $1; valid: $(echo $STAGES)" >&2; return 2 ;;
    esac
}

stage() {  # one stage, with the lines that say when it started and how it ended
    local code
    echo "[repro] $(date -u +%FT%TZ) stage $1 started"
    run_stage "$1"
    code=$?
    if [ "$code" = 0 ]; then
        echo "[repro] $(date -u +%FT%TZ) stage $1 complete"
    else
        echo "[repro] $(date -u +%FT%TZ) stage $1 NOT complete (exit $code): rerun it to go on"
    fi
    return "$code"
}

lane() {  # lane CLAIMS: take the next stage that no lane has claimed, until none is left
    local status=0 s
    for s in $STAGES; do
        mkdir "$1/$s" 2>/dev/null || continue
        stage "$s" || status=1
    done
    return $status
}

if [ "${1:-}" = "--list" ]; then
    echo $STAGES
    exit 0
fi

# Committed runs are put back into RESULTS first (as complete runs), so every sweep below skips
# the cells the published data already holds and runs only what is missing.
if [ -z "${NO_RESTORE:-}" ]; then
    $PY -m analysis.reproduction restore --results "$RESULTS" || exit $?
fi

# No stages named: every stage, on two lanes of one core each (placed processes ran faster than two
# unpinned ones sharing both cores, README: Scale-out).
if [ $# -eq 0 ] && [ "${LANES:-2}" = 2 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    claims=$(mktemp -d "${TMPDIR:-/tmp}/repro-claims.XXXXXX")
    trap 'rm -rf "$claims"' EXIT
    echo "[repro] two lanes (cores 0 and 1), each taking the next stage: $(echo $STAGES)"
    ( NO_RESTORE=1 taskset -c 0 bash -c "$(declare -f sweep run_stage stage lane); PY='$PY' COMMON='$COMMON' \
        EXTRA='$EXTRA' TRIES='$TRIES' STAGES='$(echo $STAGES)'; lane '$claims'" 2>&1 | sed -u 's/^/[lane A] /' ) &
    lane_a=$!
    sleep 5  # lane A claims the first stage first
    ( NO_RESTORE=1 taskset -c 1 bash -c "$(declare -f sweep run_stage stage lane); PY='$PY' COMMON='$COMMON' \
        EXTRA='$EXTRA' TRIES='$TRIES' STAGES='$(echo $STAGES)'; lane '$claims'" 2>&1 | sed -u 's/^/[lane B] /' ) &
    lane_b=$!
    wait "$lane_a"; code_a=$?
    wait "$lane_b"; code_b=$?
    exit $(( code_a != 0 || code_b != 0 ))
fi

status=0
for s in ${@:-$STAGES}; do
    stage "$s" || status=1
done
exit $status
