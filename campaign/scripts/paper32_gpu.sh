#!/usr/bin/env bash
# The paper's cells at its 32 seeds on one GPU box, in one command that ends by itself before a
# deadline and hands back the compact data of the cells it finished (docs/reproduction.md: the paper at its own
# 32 seeds on one GPU).
#
#   COMMIT=<sha> campaign/scripts/paper32_gpu.sh OUT_DIR [HYDRA_OVERRIDE ...]     # the 40 non-Brax cells
#   COMMIT=<sha> SWEEP=paper32_brax campaign/scripts/paper32_gpu.sh OUT_DIR       # the 20 sparse Brax cells
#   ALLOW_CPU=1 DEADLINE_S=60 campaign/scripts/paper32_gpu.sh /tmp/dry 'hydra.sweeper.params.env=cartpole' ...  # a dry run
#   INSTALL_ONLY=1 SITE=DIR campaign/scripts/paper32_gpu.sh OUT_DIR   # step 1 alone: DIR then imports the project
#
# 1. Installs what the box lacks (and only that: its own jax, numpy... stay) from the wheels that
#    travel with the tree, without an index or dependencies, into SITE: WHEELS (`make gpu-wheels`),
#    and for a Brax sweep or BRAX_PROBE=1 also WHEELS/brax (`make gpu-wheels-brax`).
# 2. Checks that JAX sees a GPU (ALLOW_CPU=1: the CPU will do, for a dry run); with Brax, times a
#    tiny Brax rollout (campaign/scripts/gpu_tools.py brax-probe) and says whether Brax works there.
# 3. Restores the committed complete cells of DATA into RESULTS, so the sweep skips them.
# 4. Runs `launch.py -m hydra.searchpath=[file://campaign/conf] sweep=SWEEP` (SWEEP: a preset of the
#    campaign's campaign/conf/sweep/ or of conf/sweep/) on the local launcher, JOBS_PER_GPU jobs at once on each GPU
#    (placement.jobs_per_gpu), under campaign/scripts/run_until.py: no job starts after LAST_START_S, every
#    job still running at DEADLINE_S gets SIGTERM (it checkpoints and exits 143) and SIGKILL
#    GRACE_S later; both in seconds from this script's start.
# 5. Prints each job's times and every cell's state, and exports the cells whose every seed is
#    complete, each with its commit, machine and jax version, into OUT_DIR/data; a cell cut by
#    the deadline is left for the next time, never half-written into the data. Then, here:
#      python -m campaign.repro merge --from OUT_DIR/data --data docs/results/paper32/data
#
# OUT_DIR gets paper32_gpu.log (everything printed), jobs.csv and data/. COMMIT names the tree's
# commit for the runs' records where the tree has no .git (a GPU box gets a copy of the files).
# Exit status: 0 when the export is written (whether or not the deadline cut the sweep), 2 for a
# bad call, 3 without a GPU, 1 when a step failed.
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [HYDRA_OVERRIDE ...]" >&2; exit 2; }
OUT_DIR=$1; shift
PY=${PYTHON:-python3}
SWEEP=${SWEEP:-paper32}
SEARCHPATH='hydra.searchpath=[file://campaign/conf]'  # the campaign's presets (campaign/presets.py), from here
EXPERIMENT=${EXPERIMENT:-paper32}
RESULTS=${RESULTS:-results}
DATA=${DATA:-docs/results/paper32/data}
WHEELS=${WHEELS:-.gpu-wheels}
SITE=${SITE:-/tmp/rfig-site}
JOBS_PER_GPU=${JOBS_PER_GPU:-4}
DEADLINE_S=${DEADLINE_S:-480}   # of a 600 s command: leaves the grace and the export their time
LAST_START_S=${LAST_START_S:-$((DEADLINE_S * 4 / 5))}  # the last batch gets a fifth of the time
GRACE_S=${GRACE_S:-30}
ALLOW_CPU=${ALLOW_CPU:-0}
BRAX_PROBE_S=${BRAX_PROBE_S:-240}
case "$SWEEP" in *brax*) BRAX_PROBE=${BRAX_PROBE:-1} ;; *) BRAX_PROBE=${BRAX_PROBE:-0} ;; esac
export PYTHONPATH="$SITE:$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 WANDB_MODE=disabled
mkdir -p "$OUT_DIR" || exit 2
exec > >(tee "$OUT_DIR/paper32_gpu.log") 2>&1
say() { echo "[paper32-gpu] $SECONDS s: $*"; }
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)  # the jobs of this run ended after it; restored cells before

COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}
[ -n "$COMMIT" ] && export RFIG_GIT_COMMIT=$COMMIT
say "sweep=$SWEEP experiment=$EXPERIMENT commit ${COMMIT:-unknown (set COMMIT: the runs will name none)}," \
    "$JOBS_PER_GPU job(s) per GPU, no job starts after $LAST_START_S s, all stopped at $DEADLINE_S s (+$GRACE_S s)"

# 1. what the box lacks, from the wheels that travel with the tree
wheels=("$WHEELS"/*.whl)
[ "$BRAX_PROBE" = 1 ] && wheels+=("$WHEELS"/brax/*.whl)
mapfile -t lacking < <("$PY" campaign/scripts/gpu_tools.py missing "${wheels[@]}" | grep .)
if [ ${#lacking[@]} -gt 0 ]; then
    say "installing ${#lacking[@]} wheel(s) into $SITE: ${lacking[*]##*/}"
    "$PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "${lacking[@]}" \
        || { say "pip install failed"; exit 1; }
fi
"$PY" -c "import hydra, omegaconf, gymnax, submitit, hydra_plugins.hydra_submitit_launcher" \
    || { say "the project's dependencies do not import: run \`make gpu-wheels\` here and carry $WHEELS"; exit 1; }
[ "${INSTALL_ONLY:-0}" = 1 ] && { say "installed into $SITE"; exit 0; }

# 2. the device (and Brax)
"$PY" campaign/scripts/gpu_tools.py device $([ "$ALLOW_CPU" = 1 ] && echo --allow-cpu) || exit 3
if [ "$BRAX_PROBE" = 1 ]; then
    timeout "$BRAX_PROBE_S" "$PY" campaign/scripts/gpu_tools.py brax-probe
    case $? in
        0) say "brax works here" ;;
        124) say "the brax probe ran past $BRAX_PROBE_S s: whether brax works here is not known" ;;
        *) say "brax does NOT work here: the lines above say why" ;;
    esac
fi

# 3. the committed cells, so that the sweep skips them
if [ -f "$DATA/runs.json.gz" ]; then
    "$PY" -m campaign.repro restore --results "$RESULTS" --data "$DATA" || { say "restore failed"; exit 1; }
else
    say "no committed cells in $DATA yet: every cell of the sweep runs"
fi

# 4. the sweep, stopped in time
say "launch.py -m $SEARCHPATH sweep=$SWEEP hydra/launcher=local placement.jobs_per_gpu=$JOBS_PER_GPU $*"
left() { local s=$(($1 - SECONDS)); echo $((s > 0 ? s : 0)); }
"$PY" campaign/scripts/run_until.py --deadline "$(left "$DEADLINE_S")" --last-start "$(left "$LAST_START_S")" \
    --grace "$GRACE_S" -- "$PY" launch.py -m "$SEARCHPATH" "sweep=$SWEEP" hydra/launcher=local \
    "placement.jobs_per_gpu=$JOBS_PER_GPU" "experiment=$EXPERIMENT" "results_dir=$RESULTS" wandb.mode=disabled "$@"
say "sweep ended (exit $?; 124: stopped by the deadline)"

# 5. what ran, what is left, and the finished cells' data
"$PY" campaign/scripts/gpu_tools.py jobs --results "$RESULTS" --experiment "$EXPERIMENT" --since "$STARTED" \
    --csv "$OUT_DIR/jobs.csv"
"$PY" -m rfig_exp.results.status --results "$RESULTS" --experiment "$EXPERIMENT"
"$PY" -m campaign.repro export --results "$RESULTS" --data "$OUT_DIR/data" --experiment "$EXPERIMENT" \
    --complete-cells || { say "export failed"; exit 1; }
say "done: merge it here with  python -m campaign.repro merge --from <this folder>/data --data $DATA"
