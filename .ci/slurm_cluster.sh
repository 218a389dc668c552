#!/usr/bin/env bash
# A SLURM cluster on this machine, for the tests marked `slurm`: this host as one node (partition
# `debug`, the default), and two more nodes, `node1` and `node2` (partition `two`), each a
# network namespace of its own with its own address and host name, for multi-node jobs.
#
# Installs slurm-wlm, munge, slurmdbd and MariaDB with apt when missing, writes a munge key and
# slurm.conf
# (a short MinJobAge so finished jobs leave `squeue` quickly, JobRequeue=1 and a short requeue
# delay for the preemption tests, a short SlurmdTimeout so a dead node is noticed in seconds),
# wires the namespaces to a bridge on this host (the controller listens there), starts munged,
# slurmctld and one slurmd per node when they are not running (restarts them when the config
# changed), and waits until `sinfo` shows every node idle. Job accounting (slurmdbd on MariaDB)
# is on as on any real cluster: submitit learns from `sacct` that a job ended without a result
# (a node died under it), and without it would wait for that result for ever.
#
# Debian's slurmd takes its node name from the host name, so each namespaced slurmd runs in a
# UTS namespace named after its node; its jobs see that name and that address. The namespaces
# share this machine's files (munge's socket, the job folders, /etc/hosts, which maps the node
# names to their addresses).
# Idempotent: a second call finds everything up and returns at once; it also brings back a node
# whose processes were killed (a test kills one). Needs root.
# Exit status 0 when `sbatch` works on both partitions, non-zero (one line saying why) otherwise.
set -euo pipefail

fail() { echo "slurm_cluster: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (apt-get, network namespaces and the SLURM daemons)"

if ! command -v sbatch >/dev/null || ! command -v munged >/dev/null \
    || ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd mariadb-server munge \
        iproute2 >/dev/null || fail "apt-get install slurm-wlm slurmdbd mariadb-server munge failed"
fi

HOST="$(hostname)"
CPUS="$(nproc --all)"
MEM_MB="$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)"
NODE_MEM_MB=$((MEM_MB / 4))
NET=10.203.0
BRIDGE=slurmbr0
NODES=(node1 node2)

node_addr() { echo "${NET}.$((10 + ${1#node}))"; }

# --- the network: a bridge on this host, a namespace per node -------------------------------
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "${NET}.1/24" dev "$BRIDGE"
fi
ip link set "$BRIDGE" up
for node in "${NODES[@]}"; do
    ns="slurm-$node"
    addr="$(node_addr "$node")"
    if ! ip netns list | grep -qw "$ns"; then
        ip netns add "$ns"
    fi
    if ! ip link show "veth-$node" >/dev/null 2>&1; then
        ip link add "veth-$node" type veth peer name eth0 netns "$ns"
        ip link set "veth-$node" master "$BRIDGE"
        ip -n "$ns" addr add "${addr}/24" dev eth0
    fi
    ip link set "veth-$node" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route replace default via "${NET}.1"
done
# The node names resolve to their namespace addresses everywhere (one marked block).
hosts="$(grep -v '# slurm_cluster$' /etc/hosts || true)"
{
    printf '%s\n' "$hosts"
    for node in "${NODES[@]}"; do printf '%s %s # slurm_cluster\n' "$(node_addr "$node")" "$node"; done
} >/etc/hosts.slurm_cluster
cat /etc/hosts.slurm_cluster >/etc/hosts  # in place: /etc/hosts may be a bind mount
rm -f /etc/hosts.slurm_cluster

# --- munge --------------------------------------------------------------------------------------
mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
    head -c 1024 /dev/urandom >/etc/munge/munge.key
fi
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- munged --force

# --- accounting: MariaDB on loopback, slurmdbd ---------------------------------------------------
if ! mysqladmin ping >/dev/null 2>&1; then
    service mariadb start >/dev/null || fail "MariaDB did not start; see /var/log/mysql/"
fi
mysql -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm-test';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || fail "could not create slurm_acct_db"
DBD_CONF="$(cat <<DBD
# Written by .ci/slurm_cluster.sh: job accounting of the test cluster.
AuthType=auth/munge
DbdHost=${HOST}
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=/run/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurm-test
StorageLoc=slurm_acct_db
DBD
)"
if [ ! -f /etc/slurm/slurmdbd.conf ] || [ "$(cat /etc/slurm/slurmdbd.conf)" != "$DBD_CONF" ]; then
    pkill -x slurmdbd || true
    printf '%s\n' "$DBD_CONF" >/etc/slurm/slurmdbd.conf
    chmod 600 /etc/slurm/slurmdbd.conf
fi
if ! pgrep -x slurmdbd >/dev/null; then
    slurmdbd
    for _ in $(seq 60); do
        sacctmgr -n list cluster >/dev/null 2>&1 && break
        sleep 0.5
    done
fi

# --- slurm.conf ---------------------------------------------------------------------------------
mkdir -p /etc/slurm /var/spool/slurmctld /var/log/slurm
NODE_LINES="NodeName=${HOST} CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN"
for node in "${NODES[@]}"; do
    NODE_LINES+=$'\n'"NodeName=${node} NodeAddr=$(node_addr "$node") CPUs=${CPUS} RealMemory=${NODE_MEM_MB} State=UNKNOWN"
done
CONF="$(cat <<CONF
# Written by .ci/slurm_cluster.sh: a test cluster of this host and two namespaced nodes.
ClusterName=local
SlurmctldHost=${HOST}(${NET}.1)
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
JobRequeue=1
# A requeued job waits cred_expire seconds before it may start again (default 120).
AuthInfo=cred_expire=15
MinJobAge=10
KillWait=30
# A node whose slurmd stops answering is down after this many seconds (default 300).
SlurmdTimeout=15
SchedulerParameters=defer_batch=0
${NODE_LINES}
PartitionName=debug Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
PartitionName=two Nodes=$(IFS=,; echo "${NODES[*]}") MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
)"

slurmd_pid() {  # the running slurmd of node $1, or nothing
    local pid
    pid="$(cat "/run/slurmd-$1.pid" 2>/dev/null || true)"
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = slurmd ] && echo "$pid"
    return 0
}

if [ ! -f /etc/slurm/slurm.conf ] || [ "$(cat /etc/slurm/slurm.conf)" != "$CONF" ]; then
    # A new config: stop whatever runs with the old one.
    pkill -x slurmd || true
    pkill -x slurmctld || true
    for _ in $(seq 50); do
        pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
        sleep 0.2
    done
    printf '%s\n' "$CONF" >/etc/slurm/slurm.conf
fi

sacctmgr -n list cluster format=cluster | grep -qw local \
    || sacctmgr -i add cluster local >/dev/null || fail "sacctmgr could not add cluster local"
pgrep -x slurmctld >/dev/null || slurmctld
mkdir -p "/var/spool/slurmd/${HOST}"
[ -n "$(slurmd_pid "$HOST")" ] || slurmd
for node in "${NODES[@]}"; do
    mkdir -p "/var/spool/slurmd/$node"
    if [ -z "$(slurmd_pid "$node")" ]; then
        # nsenter, not `ip netns exec`: that one mounts a sysfs of its own, hiding the cgroup
        # file system slurmd needs.
        nsenter --net="/run/netns/slurm-$node" unshare --uts -- sh -c "hostname $node && exec slurmd"
    fi
done

# --- wait until every node takes jobs -----------------------------------------------------------
for _ in $(seq 120); do
    states="$(sinfo -h -N -o '%N %t' 2>/dev/null || true)"
    waiting=0
    for node in "$HOST" "${NODES[@]}"; do
        state="$(awk -v n="$node" '$1 == n {print $2}' <<<"$states" | head -1)"
        case "$state" in
            idle|mix|alloc) ;;
            down*|drain*) scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
                          waiting=1 ;;
            *) waiting=1 ;;
        esac
    done
    [ "$waiting" = 0 ] && exit 0
    sleep 0.5
done
fail "not every node is idle after 60 s (sinfo: '${states:-no answer}'); see /var/log/slurm/"
