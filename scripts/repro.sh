#!/usr/bin/env bash
# The reproduction of issue 14 (docs/results/repro/): every sweep it needs, in stages, each
# relaunched until it completes. A relaunch skips complete seeds and resumes partial ones from
# their last checkpoint, so this script can be stopped at any point and started again; a job
# that stalls (exit 75, the watchdog) or is killed is relaunched without a person.
#
#   scripts/repro.sh                       # every stage, on two lanes of one core each (LANES=1: one)
#   scripts/repro.sh core brax             # some stages
#   RESULTS=/data/rfig PY=python scripts/repro.sh deepsea
#   EXTRA="hydra/launcher=slurm hydra.launcher.partition=cpu" scripts/repro.sh core   # on a cluster
#
# Stages: core (6 envs x 5 bonuses), brax (sparse_halfcheetah), deepsea (sizes 10-40),
# sens-rfig, sens-rnd, sens-vime, sens-hashexplo (sensitivity, one knob at a time).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RESULTS=${RESULTS:-results}
TRIES=${TRIES:-4}
EXTRA=${EXTRA:-}
# wandb off: the CSV files are the record; stall_timeout_s 300: a wedged job costs 5 minutes, not 15.
COMMON="results_dir=$RESULTS wandb.mode=disabled stall_timeout_s=300"

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

stage() {
    case $1 in
        core) sweep sweep=repro ;;
        brax) sweep sweep=repro_brax ;;
        deepsea) sweep sweep=deepsea_scaling ;;
        sens-rfig)
            sweep sweep=sensitivity bonus=rfig 'bonus.lengthscale_scale=0.25,0.5,1,2,4'
            sweep sweep=sensitivity bonus=rfig 'bonus.lengthscale_method=valko_fixed_point,participation_ratio'
            sweep sweep=sensitivity bonus=rfig 'bonus.reg=0.1,10'
            sweep sweep=sensitivity bonus=rfig 'bonus.beta=0.25,1'
            sweep sweep=sensitivity bonus=rfig 'bonus.num_features=256,512'
            sweep sweep=sensitivity bonus=rfig 'bonus.rho=0.03125,0.125' ;;
        sens-rnd)
            sweep sweep=sensitivity bonus=rnd 'bonus.lr=1e-5,1e-4,1e-3'
            sweep sweep=sensitivity bonus=rnd 'bonus.update_proportion=0.25,0.5' ;;
        sens-vime)
            sweep sweep=sensitivity bonus=vime 'bonus.lr=1e-5,1e-4,1e-3'
            sweep sweep=sensitivity bonus=vime 'bonus.step_size=0.001,0.1' ;;
        sens-hashexplo)
            sweep sweep=sensitivity bonus=hashexplo 'bonus.lr=1e-5,1e-4,1e-3'
            sweep sweep=sensitivity bonus=hashexplo 'bonus.hash_bits=16,64' ;;
        *) echo "unknown stage $1; valid: core brax deepsea sens-rfig sens-rnd sens-vime sens-hashexplo" >&2; return 2 ;;
    esac
}

# No stages named: the whole reproduction on two lanes, one core each (the form it was measured in;
# placed processes ran faster than two unpinned ones sharing both cores, README: Scale-out).
if [ $# -eq 0 ] && [ "${LANES:-2}" = 2 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    echo "[repro] two lanes: core 0 runs core deepsea sens-rnd sens-vime sens-hashexplo; core 1 runs brax sens-rfig"
    taskset -c 0 "$0" core deepsea sens-rnd sens-vime sens-hashexplo &
    lane_a=$!
    taskset -c 1 "$0" brax sens-rfig &
    lane_b=$!
    wait "$lane_a"; code_a=$?
    wait "$lane_b"; code_b=$?
    exit $(( code_a != 0 || code_b != 0 ))
fi

status=0
for s in "${@:-core brax deepsea sens-rfig sens-rnd sens-vime sens-hashexplo}"; do
    for one in $s; do stage "$one" || status=1; done
done
exit $status
