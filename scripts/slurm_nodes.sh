#!/usr/bin/env bash
# A Slurm of several emulated nodes on this machine: each node a network namespace
# on a bridge, with its own address, its own /dev/shm (a private tmpfs in its own
# mount namespace) and its own slurmd; slurmctld and munged as in
# scripts/slurm_local.sh. So `srun -N2 -n4` places two tasks on each node: the
# ring goes over shared memory within a node and gRPC across, as on two machines.
# Node names resolve on the nodes through a hosts file bound over /etc/hosts in
# their mount namespaces (nsenter, not `ip netns exec`, whose fresh /sys lacks the
# cgroup file system slurmd needs). Needs root; everything it made (daemons, jobs,
# namespaces, links) is removed however it ends.
#
#   scripts/slurm_nodes.sh test [--train=PATH] [--sbatch=PATH] [--nodes=2]
#       srun -N2 -n4 training across the nodes (exit 0, one fingerprint, shm links
#       within a node and gRPC across), then the example batch script on both
#       nodes: scancel (SIGTERM, a backup, CANCELLED) and its resubmission resumes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# log, die, free_ports, job_field, wait_job, job_processes
source "$here/scripts/slurm_local.sh"

nodes=2
train=$here/bazel-bin/tools/train
sbatch_script=$here/deploy/slurm/train.sbatch
[[ "${1:-}" == test ]] || { echo "usage: $0 test [--train=PATH] [--sbatch=PATH] [--nodes=N]" >&2; exit 2; }
shift
for arg in "$@"; do
  case "$arg" in
    --train=*) train=$(realpath "${arg#*=}");;
    --sbatch=*) sbatch_script=$(realpath "${arg#*=}");;
    --nodes=*) nodes=${arg#*=};;
    *) die "unknown argument $arg";;
  esac
done
if [[ $(id -u) -ne 0 ]]; then
  log "SKIPPED: emulated Slurm nodes need root (network namespaces, slurmd, munged)"
  exit 0
fi
[[ -x "$train" ]] || die "no train binary at $train (bazel build //tools:train)"

tag=$(($$ % 200 + 20))
net=10.216.$tag
bridge=rwsb$tag
dir=$(mktemp -d /tmp/slurm_nodes.XXXXXX)  # Short: munge's socket path.
ns() { echo "rws$tag-n$1"; }

cleanup() {
  local status=$?
  cd /
  if [[ -s "$dir/slurmctld.pid" ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    local jobs
    jobs=$(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z "$jobs" ]] || SLURM_CONF=$dir/slurm.conf scancel --full -s KILL $jobs 2>/dev/null || true
  fi
  for pid in $(job_processes "$dir"); do kill -KILL "$pid" 2>/dev/null || true; done
  for file in "$dir"/slurmd.*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -s "$file" ]] && kill -TERM "$(cat "$file")" 2>/dev/null || true
  done
  sleep 1
  for file in "$dir"/slurmd.*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -s "$file" ]] && kill -KILL "$(cat "$file")" 2>/dev/null || true
  done
  for ((i = 1; i <= nodes; ++i)); do
    ip netns pids "$(ns $i)" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip link del "rwsv$tag-$i" 2>/dev/null || true
    ip netns del "$(ns $i)" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  ((status == 0)) || tail -n 30 "$dir"/log/*.log >&2 || true
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT

# The network: a bridge with the controller's address, a namespace per node.
ip link add "$bridge" type bridge
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
hosts="127.0.0.1 localhost"$'\n'"$net.1 rws-ctl"
for ((i = 1; i <= nodes; ++i)); do hosts+=$'\n'"$net.$((i + 1)) rws-n$i"; done
for ((i = 1; i <= nodes; ++i)); do
  ip netns add "$(ns $i)"
  ip link add "rwsv$tag-$i" type veth peer name eth0 netns "$(ns $i)"
  ip link set "rwsv$tag-$i" master "$bridge" up
  ip -n "$(ns $i)" addr add "$net.$((i + 1))/24" dev eth0
  ip -n "$(ns $i)" link set eth0 up
  ip -n "$(ns $i)" link set lo up
done

# munged and the configuration, as slurm_local.sh's; a slurmd per node.
mkdir -p "$dir"/{state,spool,log,munge}
echo "$hosts" > "$dir/hosts"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
/usr/sbin/munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
ctld_port=$(free_ports 2)
slurmd_port=$((ctld_port + 1))
{
  cat <<CONF
ClusterName=ringwork
SlurmctldHost=localhost($net.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
KillWait=60
MinJobAge=600
CONF
  for ((i = 1; i <= nodes; ++i)); do
    echo "NodeName=rws-n$i NodeAddr=$net.$((i + 1)) NodeHostname=rws-n$i CPUs=2 RealMemory=1000 State=UNKNOWN"
  done
  echo "PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} > "$dir/slurm.conf"
export SLURM_CONF=$dir/slurm.conf
/usr/sbin/slurmctld -f "$dir/slurm.conf"
for ((i = 1; i <= nodes; ++i)); do
  mkdir -p "$dir/spool/rws-n$i"
  # Its own /dev/shm (what its tasks share, and no other node sees) and hosts.
  nsenter --net="/run/netns/$(ns $i)" unshare -m --propagation private sh -c \
    "mount -t tmpfs tmpfs /dev/shm && mount --bind '$dir/hosts' /etc/hosts &&
     exec /usr/sbin/slurmd -f '$dir/slurm.conf' -N rws-n$i"
done
deadline=$((SECONDS + 40))
until [[ $(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$') -eq $nodes ]]; do
  ((SECONDS < deadline)) || { sinfo -N >&2 || true; die "the $nodes Slurm nodes did not come up in 40 s"; }
  sleep 0.3
done
log "Slurm is up with $nodes emulated nodes ($net.2 ...)"
on_node1() { nsenter --net="/run/netns/$(ns 1)" "$@"; }  # Where jobs are submitted from.

work=$dir/work
mkdir -p "$work"
cd "$work"
port=$(free_ports 2)
flags=(--dataset=synthetic --synthetic_examples=2048 --global_batch_size=128
       --intra_op_threads=1 --verbose=0)
tasks=$((2 * nodes))

log "(a) srun -N$nodes -n$tasks train across the nodes"
code=0
timeout 240 nsenter --net="/run/netns/$(ns 1)" srun -N"$nodes" -n"$tasks" --kill-on-bad-exit=1 "$train" \
  --cluster_from=slurm --slurm_base_port="$port" --epochs=2 "${flags[@]}" > srun.out 2>&1 || code=$?
((code == 0)) || { cat srun.out >&2; die "srun training exited $code"; }
[[ $(grep -c "weights fingerprint" srun.out) -eq $tasks ]] || { cat srun.out >&2; die "not $tasks workers"; }
[[ $(grep -o "weights fingerprint [0-9a-f]*" srun.out | sort -u | wc -l) -eq 1 ]] ||
  die "the workers ended with different weights"
# Rank 0 (node 1, local 0): rank 1 on its node over shared memory, rank 2 on node 2 over gRPC.
grep -q "joined the ring: rank 0 of $tasks; links: worker:1 (rws-n1:$((port + 1))) shm, worker:2 (rws-n2:$port) grpc" srun.out ||
  { grep "joined the ring" srun.out >&2; die "the links are not shm within a node and gRPC across"; }

grep "joined the ring: rank 0 " srun.out | sed 's/^/  /' >&2
log "(b) sbatch on $nodes nodes: scancel (a backup, CANCELLED), resubmitted it resumes"
submit() {
  on_node1 env RINGWORK_TRAIN="$train" RINGWORK_JOB_DIR="$work/job" RINGWORK_SLURM_BASE_PORT="$port" \
    SLURM_CONF="$SLURM_CONF" sbatch --parsable --job-name=rw-nodes --nodes="$nodes" \
    --ntasks-per-node=2 "$sbatch_script" --epochs=100000 "${flags[@]}"
}
job=$(submit)
deadline=$((SECONDS + 120))
until grep -qs "joined the ring: rank 0" "ringwork-train-$job.out"; do
  ((SECONDS < deadline)) || { cat "ringwork-train-$job.out" >&2; die "job $job did not start training"; }
  sleep 0.5
done
sleep 3
scancel "$job"
wait_job "$job" 90
[[ $(job_field "$job" JobState) == CANCELLED ]] || die "job $job is $(job_field "$job" JobState), not CANCELLED"
[[ $(grep -c "received SIGTERM" "ringwork-train-$job.out") -eq $tasks ]] ||
  { cat "ringwork-train-$job.out" >&2; die "job $job's workers did not all stop on SIGTERM"; }
ls "$work/job/backup/latest" > /dev/null || die "job $job left no backup"
job=$(submit)
deadline=$((SECONDS + 120))
until grep -qs "resuming from the backup" "ringwork-train-$job.out"; do
  ((SECONDS < deadline)) || { cat "ringwork-train-$job.out" >&2; die "job $job did not resume"; }
  sleep 0.5
done
scancel "$job"
wait_job "$job" 90
log "PASSED: srun and sbatch across $nodes emulated Slurm nodes, scancel and resubmission"
