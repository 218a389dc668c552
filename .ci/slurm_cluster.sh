#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the tests marked `slurm`.
#
# Installs slurm-wlm and munge with apt when sbatch is missing, writes a munge key and a
# one-node slurm.conf (this host, its real CPU count and memory, a short MinJobAge so finished
# jobs leave `squeue` quickly, JobRequeue=1 and a short requeue delay for the preemption
# tests), starts munged, slurmctld and slurmd when they are not running (restarts them when the
# config changed), and waits until `sinfo` shows the node idle.
# Idempotent: a second call finds everything up and returns at once. Needs root.
# Exit status 0 when `sbatch` works, non-zero (with one line saying why) otherwise.
set -euo pipefail

fail() { echo "slurm_cluster: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (apt-get and the SLURM daemons)"

if ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
        || fail "apt-get install slurm-wlm munge failed"
fi

HOST="$(hostname)"
CPUS="$(nproc --all)"
MEM_MB="$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)"

mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
    head -c 1024 /dev/urandom >/etc/munge/munge.key
fi
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- munged --force

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
CONF="$(cat <<CONF
# Written by .ci/slurm_cluster.sh: a one-node test cluster.
ClusterName=local
SlurmctldHost=${HOST}
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
JobRequeue=1
# A requeued job waits cred_expire seconds before it may start again (default 120).
AuthInfo=cred_expire=15
MinJobAge=10
KillWait=30
SchedulerParameters=defer_batch=0
NodeName=${HOST} CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=debug Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
)"
changed=0
if [ ! -f /etc/slurm/slurm.conf ] || [ "$(cat /etc/slurm/slurm.conf)" != "$CONF" ]; then
    printf '%s\n' "$CONF" >/etc/slurm/slurm.conf
    changed=1
fi

if [ "$changed" = 1 ]; then
    # A new config: restart whatever runs with the old one.
    for daemon in slurmd slurmctld; do
        if pid="$(pgrep -x "$daemon")"; then kill "$pid"; fi
    done
    for _ in $(seq 50); do
        pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
        sleep 0.2
    done
fi
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 120); do
    state="$(sinfo -h -n "$HOST" -o '%t' 2>/dev/null || true)"
    case "$state" in
        idle|mix|alloc) exit 0 ;;
        down*|drain*) scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
fail "node ${HOST} not idle after 60 s (sinfo: '${state:-no answer}'); see /var/log/slurm/"
