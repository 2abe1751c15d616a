#!/usr/bin/env bash
# A single-node Slurm on this machine, from Debian's packages (slurm-wlm and munge):
# its own configuration, ports, state and log files in a directory, munge for
# authentication (munged as root with a key and socket of its own: it runs fine
# here, so auth/none is not needed). For the test suite and for trying Ringwork
# under a real scheduler before a real cluster.
#
#   scripts/slurm_local.sh start DIR    # then: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm_local.sh stop DIR     # stops what start started in DIR
#   scripts/slurm_local.sh test [--train=PATH] [--sbatch=PATH]
#       starts Slurm in a temporary directory, runs srun -N1 -n2 training with the
#       cluster from Slurm, the example batch script to completion, a scancel of a
#       running job (SIGTERM, backup, CANCELLED) and its resubmission (resumes), and
#       stops Slurm even when a check fails, leaving no Slurm process behind.
#
# The node is named "localhost" (slurmd -N), so that the ring's addresses, taken
# from SLURM_STEP_NODELIST, resolve on any machine. Needs root (slurmd runs tasks
# as the submitting user, and munged needs its own key). Debian's slurm-wlm is also
# built for several slurmd on one machine, but two node names of one machine would
# give two workers the same address and port in Ringwork's ring: one node here.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "slurm_local: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }

free_ports() {  # free_ports N: the first of N consecutive TCP ports nothing listens on
  local n=$1 port i busy   # Below the kernel's ephemeral range (32768 and up).
  for ((port = 20000 + ($$ * 7) % 12000; port + n < 32768; port += n)); do
    busy=0
    for ((i = 0; i < n; ++i)); do
      if ss -Htln "sport = :$((port + i))" | grep -q .; then busy=1; break; fi
    done
    ((busy)) || { echo "$port"; return; }
  done
  die "no $n free ports below 32768"
}

start() {
  local dir=$1
  mkdir -p "$dir"/{state,spool,log,munge}
  dir=$(cd "$dir" && pwd)
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  /usr/sbin/munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed"
  local ctld_port slurmd_port
  ctld_port=$(free_ports 2)
  slurmd_port=$((ctld_port + 1))
  cat > "$dir/slurm.conf" <<CONF
ClusterName=ringwork
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Time between scancel's SIGTERM and SIGKILL: the workers save a backup first.
KillWait=60
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  /usr/sbin/slurmctld -f "$dir/slurm.conf"
  /usr/sbin/slurmd -f "$dir/slurm.conf" -N localhost
  local deadline=$((SECONDS + 30))
  until SLURM_CONF=$dir/slurm.conf sinfo -h -o '%T' 2>/dev/null | grep -qx idle; do
    ((SECONDS < deadline)) || { tail -n 20 "$dir"/log/*.log >&2; die "Slurm did not come up in 30 s"; }
    sleep 0.2
  done
  log "Slurm is up: export SLURM_CONF=$dir/slurm.conf"
}

stop() {
  local dir=$1 pid pids=()
  # Jobs first: stopping slurmd leaves running steps (and their tasks) behind.
  if [[ -s "$dir/slurmctld.pid" ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    local jobs deadline=$((SECONDS + 20))
    jobs=$(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null || true)
    if [[ -n "$jobs" ]]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$dir/slurm.conf scancel --full -s KILL $jobs 2>/dev/null || true
      while [[ -n $(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null) ]] && ((SECONDS < deadline)); do
        sleep 0.2
      done
    fi
  fi
  # Whatever this Slurm's jobs started and is still running.
  for pid in $(job_processes "$dir"); do kill -KILL "$pid" 2>/dev/null || true; done
  for file in slurmd.pid slurmctld.pid munge/munged.pid; do
    [[ -s "$dir/$file" ]] || continue
    pid=$(cat "$dir/$file")
    if kill -TERM "$pid" 2>/dev/null; then pids+=("$pid"); fi
  done
  local deadline=$((SECONDS + 15))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# The processes of jobs of the Slurm in DIR: their environment names its slurm.conf
# and a job (this script's own shell has the first only).
job_processes() {
  local dir=$1 environ
  for environ in /proc/[0-9]*/environ; do
    if grep -qsz "^SLURM_CONF=$dir/slurm.conf$" "$environ" &&
       grep -qsz "^SLURM_JOB_ID=" "$environ"; then
      environ=${environ#/proc/}
      echo "${environ%/environ}"
    fi
  done
  return 0
}

# What of the Slurm in DIR is still alive: its daemons and its jobs' processes.
leftovers() {
  local dir=$1
  for file in slurmd.pid slurmctld.pid munge/munged.pid; do
    [[ -s "$dir/$file" ]] && kill -0 "$(cat "$dir/$file")" 2>/dev/null && echo "$file"
  done
  job_processes "$dir"
}

job_field() {  # job_field JOBID FIELD -> its value in scontrol show job
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

wait_job() {  # wait_job JOBID SECONDS: until it leaves the queue
  local deadline=$((SECONDS + $2))
  while [[ $(job_field "$1" JobState) =~ ^(PENDING|RUNNING|CONFIGURING|COMPLETING)$ ]]; do
    ((SECONDS < deadline)) || die "job $1 still $(job_field "$1" JobState) after $2 s"
    sleep 0.5
  done
}

run_test() {
  local train=$here/bazel-bin/tools/train sbatch_script=$here/deploy/slurm/train.sbatch
  for arg in "$@"; do
    case "$arg" in
      --train=*) train=$(realpath "${arg#*=}");;
      --sbatch=*) sbatch_script=$(realpath "${arg#*=}");;
      *) die "unknown argument $arg";;
    esac
  done
  if [[ $(id -u) -ne 0 ]]; then
    log "SKIPPED: a local Slurm needs root (slurmd, munged); run the suite as root"
    return 0
  fi
  [[ -x "$train" ]] || die "no train binary at $train (bazel build //tools:train)"
  local dir
  # Short: munge's socket path must fit in 108 bytes (Bazel's TEST_TMPDIR does not).
  dir=$(mktemp -d /tmp/slurm_local.XXXXXX)
  # Stopped however the test ends; the logs shown when it failed.
  trap "status=\$?; cd /; stop '$dir'; ((status == 0)) || tail -n 30 '$dir'/log/*.log >&2; rm -rf '$dir'" EXIT
  start "$dir"
  export SLURM_CONF=$dir/slurm.conf
  local work=$dir/work
  mkdir -p "$work"
  cd "$work"
  local port
  port=$(free_ports 2)
  local flags=(--dataset=synthetic --synthetic_examples=2048 --global_batch_size=128
               --intra_op_threads=1 --verbose=0)

  log "(a) srun -N1 -n2 train, the cluster from Slurm"
  local code=0
  timeout 180 srun -N1 -n2 --kill-on-bad-exit=1 "$train" --cluster_from=slurm \
    --slurm_base_port="$port" --epochs=2 "${flags[@]}" > srun.out 2>&1 || code=$?
  ((code == 0)) || { cat srun.out >&2; die "srun training exited $code"; }
  grep -q "joined the ring: rank 0 of 2; links: worker:1 (localhost:$((port + 1)))" srun.out &&
    grep -q "joined the ring: rank 1 of 2; links: worker:0 (localhost:$port)" srun.out ||
    { cat srun.out >&2; die "the ranks did not come from Slurm's environment"; }
  [[ $(grep -c "weights fingerprint" srun.out) -eq 2 ]] || { cat srun.out >&2; die "not two workers"; }
  [[ $(grep -o "weights fingerprint [0-9a-f]*" srun.out | sort -u | wc -l) -eq 1 ]] ||
    die "the two workers ended with different weights"

  log "(b) sbatch of deploy/slurm/train.sbatch, to completion"
  local job
  job=$(RINGWORK_TRAIN=$train RINGWORK_JOB_DIR=$work/job_b RINGWORK_SLURM_BASE_PORT=$port \
        sbatch --parsable --job-name=rw-b "$sbatch_script" --epochs=2 "${flags[@]}")
  wait_job "$job" 180
  [[ $(job_field "$job" JobState) == COMPLETED && $(job_field "$job" ExitCode) == 0:0 ]] ||
    { cat "ringwork-train-$job.out" >&2; die "batch job $job: $(job_field "$job" JobState) $(job_field "$job" ExitCode)"; }
  grep -q "Test accuracy: " "ringwork-train-$job.out" || die "batch job $job printed no result"
  grep -q "calls authenticated by the cluster token" "ringwork-train-$job.out" ||
    die "batch job $job ran without the cluster token"
  ls "$work/job_b/checkpoints/latest" > /dev/null || die "batch job $job wrote no checkpoint"

  log "(c) scancel of a running job: SIGTERM, a backup, CANCELLED; resubmitted, it resumes"
  job=$(RINGWORK_TRAIN=$train RINGWORK_JOB_DIR=$work/job_c RINGWORK_SLURM_BASE_PORT=$port \
        sbatch --parsable --job-name=rw-c "$sbatch_script" --epochs=100000 "${flags[@]}")
  local deadline=$((SECONDS + 120))
  until grep -qs "joined the ring: rank 0" "ringwork-train-$job.out"; do
    ((SECONDS < deadline)) || { cat "ringwork-train-$job.out" >&2; die "job $job did not start training"; }
    sleep 0.5
  done
  sleep 3  # A few epochs.
  scancel "$job"
  wait_job "$job" 90
  [[ $(job_field "$job" JobState) == CANCELLED ]] || die "job $job is $(job_field "$job" JobState), not CANCELLED"
  # Each worker got SIGTERM, saved the backup at the step they agreed on, and exited
  # 143 before Slurm's KillWait ended in SIGKILL.
  [[ $(grep -c "received SIGTERM" "ringwork-train-$job.out") -eq 2 ]] &&
    grep -q "tasks 0-1: Exited with exit code 143" "ringwork-train-$job.out" ||
    { cat "ringwork-train-$job.out" >&2; die "job $job's workers did not stop on SIGTERM with 143"; }
  ls "$work/job_c/backup/latest" > /dev/null || die "job $job left no backup"
  job=$(RINGWORK_TRAIN=$train RINGWORK_JOB_DIR=$work/job_c RINGWORK_SLURM_BASE_PORT=$port \
        sbatch --parsable --job-name=rw-c "$sbatch_script" --epochs=100000 "${flags[@]}")
  deadline=$((SECONDS + 120))
  until grep -qs "resuming from the backup" "ringwork-train-$job.out"; do
    ((SECONDS < deadline)) || { cat "ringwork-train-$job.out" >&2; die "job $job did not resume"; }
    sleep 0.5
  done
  scancel "$job"
  wait_job "$job" 90

  cd "$here"
  stop "$dir"
  local left
  left=$(leftovers "$dir")
  [[ -z "$left" ]] || die "processes of this Slurm are left: $left"
  log "PASSED: srun, sbatch, scancel and resubmission under a real Slurm"
}

# Sourced (scripts/slurm_nodes.sh): its functions only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    start) start "${2:?start DIR}";;
    stop) stop "${2:?stop DIR}";;
    test) shift; run_test "$@";;
    *) echo "usage: $0 start DIR | stop DIR | test [--train=PATH] [--sbatch=PATH]" >&2; exit 2;;
  esac
fi
