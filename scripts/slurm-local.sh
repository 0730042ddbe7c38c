#!/usr/bin/env bash
# A one-node Slurm on this machine for tests/slurm.rs: slurmctld and slurmd (Debian's slurm-wlm,
# no GPUs, AuthType=auth/none, so no munge), their configuration, state and logs in one folder.
#
#   scripts/slurm-local.sh install  installs Debian's slurmctld, slurmd and slurm-client with
#                                   apt-get (sudo when not root), unless they are there
#   scripts/slurm-local.sh start    writes slurm.conf, starts both daemons, waits for the node
#                                   to be idle (a no-op when it already is); prints the line
#                                   `export SLURM_CONF=...` for the shell
#   scripts/slurm-local.sh stop     stops both daemons
#   scripts/slurm-local.sh status   sinfo's line for the node; exit 1 when the cluster is not up
#
# WMFIX_SLURM_DIR (default /tmp/wmfix-slurm) is the folder; tests/slurm.rs looks there when
# SLURM_CONF is unset. WMFIX_SLURM_PORT (default 16817) and the port after it are slurmctld's
# and slurmd's, away from a real cluster's 6817/6818.
set -euo pipefail

dir="${WMFIX_SLURM_DIR:-/tmp/wmfix-slurm}"
port="${WMFIX_SLURM_PORT:-16817}"
node="$(hostname -s)"
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

die() {
    echo "slurm-local: $*" >&2
    exit 1
}

write_conf() {
    local user cpus
    user="$(id -un)"
    # 16 CPUs whatever the machine has, so that several one-task steps and jobs run at once
    # (config_overrides: slurmd takes the configured size over the one it detects).
    cpus=16
    mkdir -p "$dir/ctld" "$dir/d"
    cat >"$conf.new" <<EOF
ClusterName=wmfix-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/none
CredType=cred/none
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
KillWait=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$conf.new" "$conf"
}

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sinfo >/dev/null; then
        return
    fi
    local sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client >/dev/null
}

# Whether the process in pid file $1 runs.
running() {
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

# The node's state as sinfo says it (idle, mix, alloc, down*, ...), empty when none answers.
node_state() {
    { timeout 10 sinfo --noheader --nodes="$node" --format=%t 2>/dev/null || true; } | head -n 1
}

start() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sinfo >/dev/null ||
        die "slurmctld, slurmd or sinfo not found: run $0 install"
    if running "$dir/slurmctld.pid" && running "$dir/slurmd.pid" && [[ "$(node_state)" == idle ]]; then
        echo "export SLURM_CONF=$conf"
        return
    fi
    stop >/dev/null
    write_conf
    # -c: no jobs from an earlier start. Both daemonize and write their pid files.
    slurmctld -c -f "$conf" || die "slurmctld did not start: $(tail -n 5 "$dir/slurmctld.log" 2>/dev/null)"
    slurmd -c -f "$conf" || die "slurmd did not start: $(tail -n 5 "$dir/slurmd.log" 2>/dev/null)"
    local t0=$SECONDS state=
    while ((SECONDS - t0 < 60)); do
        state="$(node_state)"
        [[ "$state" == idle ]] && {
            echo "export SLURM_CONF=$conf"
            return
        }
        sleep 0.2
    done
    die "node $node is '${state:-not listed}' after 60 s, not idle; logs: $dir/slurmctld.log, $dir/slurmd.log"
}

# Stops the daemon of pid file $1, waiting up to 10 s before SIGKILL.
stop_one() {
    running "$1" || return 0
    local pid
    pid="$(cat "$1")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    stop_one "$dir/slurmd.pid"
    stop_one "$dir/slurmctld.pid"
    rm -f "$dir/slurmd.pid" "$dir/slurmctld.pid"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status)
    state="$(node_state)"
    echo "node $node: ${state:-not up}"
    [[ "$state" == idle || "$state" == mix || "$state" == alloc ]]
    ;;
*) die "usage: $0 install|start|stop|status" ;;
esac
