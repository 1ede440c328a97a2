#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the SLURM launcher's integration tests
# (tests/test_slurm.py) and for trying `hydra/launcher=slurm` without a real cluster.
#
#   scripts/slurm-local.sh up       # install slurm-wlm + munge (once), start munged, slurmctld, slurmd
#   scripts/slurm-local.sh status   # one line; exit 0 when the node is usable, 3 when not
#   scripts/slurm-local.sh down     # stop the daemons this script started (packages stay installed)
#
# Needs root and a Debian/Ubuntu apt (the distro's `slurm-wlm` and `munge` packages). The
# cluster: one node (this host, all its CPUs), partition `debug` (default) and partition
# `urgent`, whose jobs preempt `debug` jobs by requeueing them (to test preemption).
# Requeue is on (JobRequeue=1), and a preempted job first gets its --signal (submitit's
# USR2, `signal_delay_s`) so that it can checkpoint. Daemon state, spool and logs live in
# $RFIG_SLURM_DIR (default /tmp/rfig-slurm); the config is /etc/slurm/slurm.conf, which the
# SLURM commands read by default. An existing slurm.conf that this script did not write is
# never touched.
set -euo pipefail

DIR=${RFIG_SLURM_DIR:-/tmp/rfig-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by rfig-exp scripts/slurm-local.sh"
NODE=$(hostname -s)

die() { echo "slurm-local: error: $*" >&2; exit 1; }
say() { echo "slurm-local: $*"; }

require_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (it installs packages and starts the SLURM daemons); try: sudo $0 $1"
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sinfo >/dev/null; then
        return
    fi
    command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get; install them with your package manager"
    mkdir -p "$DIR/log"
    say "installing slurm-wlm and munge (apt-get, about 15 s)"
    # Daemons are started by this script, not by the packages' init scripts (there may be no init).
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurm-wlm munge; } >"$DIR/log/apt.log" 2>&1; then
        tail -n 20 "$DIR/log/apt.log" >&2
        die "apt-get failed (full log: $DIR/log/apt.log)"
    fi
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    munge_ok && return
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1 || true
        fi
        [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 0400 /etc/munge/munge.key
    chmod 0755 /run/munge
    runuser -u munge -- munged || die "munged did not start (see /var/log/munge/munged.log)"
    for _ in $(seq 50); do munge_ok && return; sleep 0.1; done
    die "munged started but munge/unmunge fails (see /var/log/munge/munged.log)"
}

write_conf() {
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script; not touching a real SLURM configuration"
    fi
    local cpus mem
    cpus=$(nproc)
    # Memory is not a consumable resource here (CR_CPU), but --mem requests are checked against it.
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    mkdir -p /etc/slurm "$DIR/state" "$DIR/spool" "$DIR/log"
    cat >"$CONF.tmp" <<EOF
$MARK
# A single-node test cluster; \`scripts/slurm-local.sh down\` stops it.
ClusterName=rfiglocal
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job waits cred_expire seconds before it may start again (default 120).
AuthInfo=cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No cgroups in containers: track processes by parent id, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Schedule single logical CPUs, so that jobs of 1 CPU run side by side.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# Scheduling passes every 5 s (defaults 60 s main, 30 s backfill): requeued jobs restart and
# preemption candidates are found within seconds.
SchedulerParameters=bf_interval=5,sched_interval=5
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
# No accounting database: sacct has nothing to read (submitit then warns and reads its own result files).
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# Jobs may be requeued (scontrol requeue, preemption); finished jobs stay visible for 10 minutes.
JobRequeue=1
MinJobAge=600
# Seconds between SIGTERM and SIGKILL when a job is cancelled, requeued or times out.
KillWait=10
# Jobs in partition urgent preempt jobs in debug by requeueing them; the preempted job gets its
# --signal (submitit's USR2) at once and GraceTime seconds before it is killed, so it can checkpoint.
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmctldParameters=preempt_send_user_signal
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime=30
PartitionName=urgent Nodes=$NODE Default=NO MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF
EOF
    if [ -e "$CONF" ] && cmp -s "$CONF" "$CONF.tmp"; then
        rm -f "$CONF.tmp"
        return 1  # unchanged
    fi
    mv "$CONF.tmp" "$CONF"
    return 0
}

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n 1 || true; }

usable() {
    case "$(node_state)" in
        idle | mixed | allocated | completing) return 0 ;;
        *) return 1 ;;
    esac
}

up() {
    require_root up
    install_packages
    start_munge
    local changed=0
    write_conf && changed=1
    if pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid"; then
        if [ "$changed" -eq 1 ]; then
            scontrol reconfigure >/dev/null
        elif usable; then
            say "already up: node $NODE $(node_state), $(nproc) CPUs, partitions debug (default) and urgent"
            return
        fi
    else
        pid_alive "$DIR/slurmctld.pid" || slurmctld || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
        pid_alive "$DIR/slurmd.pid" || slurmd || die "slurmd did not start (see $DIR/log/slurmd.log)"
    fi
    # The node shows unk* for a few seconds after start; a node left down by an unclean stop is resumed.
    local state
    for i in $(seq 120); do
        usable && break
        state=$(node_state)
        if [ "$i" -gt 10 ] && { [[ "$state" == down* ]] || [[ "$state" == drain* ]]; }; then
            scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
        fi
        sleep 0.5
    done
    usable || die "the node did not become idle within 60 s (sinfo: '$(node_state)'; logs in $DIR/log)"
    say "up: node $NODE $(node_state), $(nproc) CPUs, partitions debug (default) and urgent; logs in $DIR/log"
}

down() {
    require_root down
    local stopped=0
    if pid_alive "$DIR/slurmctld.pid" || pid_alive "$DIR/slurmd.pid"; then
        scancel --quiet --user=root >/dev/null 2>&1 || true
        scontrol shutdown >/dev/null 2>&1 || true
        for pidfile in "$DIR/slurmctld.pid" "$DIR/slurmd.pid"; do
            for _ in $(seq 100); do pid_alive "$pidfile" || break; sleep 0.1; done
            pid_alive "$pidfile" && kill "$(cat "$pidfile")" 2>/dev/null || true
        done
        stopped=1
    fi
    # munged is stopped only when this cluster's config says we started it here.
    if [ -e "$CONF" ] && grep -qF "$MARK" "$CONF" && pid_alive /run/munge/munged.pid; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
        stopped=1
    fi
    if [ "$stopped" -eq 1 ]; then say "down"; else say "already down"; fi
}

status() {
    if command -v sinfo >/dev/null && pid_alive "$DIR/slurmctld.pid" && usable; then
        say "up: node $NODE $(node_state); $(squeue -h 2>/dev/null | wc -l) jobs queued or running"
        return 0
    fi
    say "down"
    return 3
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
