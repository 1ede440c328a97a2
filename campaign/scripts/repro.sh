#!/usr/bin/env bash
# The reproduction (docs/results/repro/): every sweep it needs, in stages, each relaunched until it
# completes. A relaunch skips complete seeds and resumes partial ones from their last checkpoint,
# so this script can be stopped at any point and started again; a job that stalls (exit 75, the
# stall clock of its supervisor) or is killed is relaunched without a person.
#
#   campaign/scripts/repro.sh                       # every stage, on two lanes of one core each (LANES=1: one)
#   CAMPAIGN=paper32 NICE=19 campaign/scripts/repro.sh   # the paper's 12 panels, seeds 8-31, beside other work
#   CAMPAIGN=sensitivity32 NICE=19 campaign/scripts/repro.sh   # the sensitivity knobs at 32 seeds on four panels
#   campaign/scripts/repro.sh minatar-asterix brax-hopper   # some stages, one after another (names: --list)
#   LANES=2 campaign/scripts/repro.sh brax-ant brax-hopper deepsea-30   # some stages, on two lanes
#   campaign/scripts/repro.sh --list                # the stages, in the order the lanes take them
#   RESULTS=/data/rfig PY=python campaign/scripts/repro.sh deepsea-40
#   EXTRA="hydra/launcher=slurm hydra.launcher.partition=cpu" campaign/scripts/repro.sh core   # on a cluster
#   EXTRA="hydra.searchpath=[file://my_conf]" campaign/scripts/repro.sh core   # your folders after the campaign's
#
# CAMPAIGN=repro (the default) is the 8-seed reproduction: each stage one env (or one DeepSea size, or
# one bonus's sensitivity knobs). CAMPAIGN=paper32 is the 32-seed grid: each stage one panel x one
# block of 8 seeds. A stage half-done when the machine goes away costs only that stage. On two lanes, each lane takes the
# next stage that no lane has taken yet. A stage's line `[repro] stage NAME complete` is the cue
# to publish it (README: the reproduction).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RESULTS=${RESULTS:-results}
TRIES=${TRIES:-4}
EXTRA=${EXTRA:-}
CAMPAIGN=${CAMPAIGN:-repro}
DATA=${DATA:-$($PY -m campaign.repro.stages data --campaign "$CAMPAIGN")}  # the committed runs it joins, put back first
# The lanes' niceness: 19 lets tests and development on the same cores go first (the lanes take
# what is left) without stopping the campaign.
NICE=${NICE:-0}
# With autogroup scheduling (Linux's default where /proc/sys/kernel/sched_autogroup_enabled is 1),
# niceness counts only against the processes of one's own session: lanes started in a session of
# their own (setsid, a detached tmux) took the cores as equals of a test suite run elsewhere (58%
# of a core each, measured). Such a session holds the lanes alone, so its group takes the
# niceness too; a script run from one's shell leaves that shell's group alone.
if [ "$NICE" != 0 ] && [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && [ -w "/proc/$$/autogroup" ]; then
    echo "$NICE" > "/proc/$$/autogroup" && echo "[repro] this session's scheduling group at nice $NICE" >&2
fi
# wandb off: the CSV files are the record; stall_timeout_s 300: a wedged job costs 5 minutes, not 15.
COMMON="results_dir=$RESULTS wandb.mode=disabled stall_timeout_s=300"

# The stages and their commands are declared once, in campaign/repro/stages.py.
STAGES=$($PY -m campaign.repro.stages list --campaign "$CAMPAIGN") || exit 2

sweep() {  # sweep ARGS...: run one launch.py -m command until it exits 0 (at most TRIES times)
    local try code
    for try in $(seq 1 "$TRIES"); do
        echo "[repro] $(date -u +%FT%TZ) try $try/$TRIES: launch.py -m $*"
        # shellcheck disable=SC2086
        nice -n "$NICE" $PY launch.py -m "$@"
        code=$?
        echo "[repro] $(date -u +%FT%TZ) exit $code"
        case $code in
            0) return 0 ;;
            2) echo "[repro] bad configuration: not retried"; return 2 ;;
            75) echo "[repro] a job stalled (its supervisor killed it), or left runs to another process that trains them: relaunching, it resumes from its checkpoint" ;;
            *) echo "[repro] exit $code: relaunching (complete seeds are skipped, partial ones resume)" ;;
        esac
    done
    echo "[repro] gave up after $TRIES tries: $*"
    return 1
}

run_stage() {  # every sweep of one stage, in order; stops at the first that does not complete
    local commands line args
    # COMMON and EXTRA after the stage's own words; a search path in EXTRA joins the campaign's
    commands=$($PY -m campaign.repro.stages commands "$1" --extra "$COMMON $EXTRA") || return 2
    while IFS= read -r line; do
        # one argument per word (the arguments hold no spaces), never a glob: the search path's
        # brackets (hydra.searchpath=[file://campaign/conf]) stay as written
        read -ra args <<< "$line"
        sweep "${args[@]}" || return $?
    done <<< "$commands"
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
    echo "$STAGES"
    exit 0
fi

# Named stages are checked before anything runs: a typo must not cost the stages before it.
for s in "$@"; do
    case " $(echo $STAGES) " in
        *" $s "*) ;;
        *) echo "[repro] unknown stage '$s' of campaign $CAMPAIGN; valid: $(echo $STAGES)" >&2; exit 2 ;;
    esac
done
# Two lanes by default for the whole campaign; named stages run one after another unless LANES=2.
if [ $# -gt 0 ]; then LANES=${LANES:-1}; STAGES="$*"; fi

# Committed runs are put back into RESULTS first (as complete runs), so every sweep below skips
# the cells the published data already holds and runs only what is missing.
if [ -z "${NO_RESTORE:-}" ] && [ -f "$DATA/runs.json.gz" ]; then
    $PY -m campaign.repro restore --results "$RESULTS" --data "$DATA" || exit $?
fi

# Two lanes of one core each (placed processes ran faster than two unpinned ones sharing both
# cores, docs/scale-out.md), each taking the next stage of STAGES that no lane has taken yet.
if [ "${LANES:-2}" = 2 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    claims=$(mktemp -d "${TMPDIR:-/tmp}/repro-claims.XXXXXX")
    trap 'rm -rf "$claims"' EXIT
    echo "[repro] campaign $CAMPAIGN, two lanes (cores 0 and 1), each taking the next stage: $STAGES"
    ( taskset -c 0 bash -c "$(declare -f sweep run_stage stage lane); PY='$PY' COMMON='$COMMON' \
        EXTRA='$EXTRA' TRIES='$TRIES' NICE='$NICE' STAGES='$STAGES'; lane '$claims'" 2>&1 | sed -u 's/^/[lane A] /' ) &
    lane_a=$!
    sleep 5  # lane A claims the first stage first
    ( taskset -c 1 bash -c "$(declare -f sweep run_stage stage lane); PY='$PY' COMMON='$COMMON' \
        EXTRA='$EXTRA' TRIES='$TRIES' NICE='$NICE' STAGES='$STAGES'; lane '$claims'" 2>&1 | sed -u 's/^/[lane B] /' ) &
    lane_b=$!
    wait "$lane_a"; code_a=$?
    wait "$lane_b"; code_b=$?
    exit $(( code_a != 0 || code_b != 0 ))
fi

status=0
for s in $STAGES; do
    stage "$s" || status=1
done
exit $status
