#!/usr/bin/env bash
# launch --hosts over real ssh, on emulated hosts: three network namespaces on a
# bridge, each with its own address, its own /dev/shm (a private tmpfs in a mount
# namespace) and Debian's sshd listening there with a host key this script makes;
# launch reaches them with Debian's ssh client (BatchMode, a client key this
# script authorizes, the hosts' keys in a known_hosts file it writes). Needs
# root and openssh-server; everything it made is removed however it ends.
#
#   scripts/ssh_hosts.sh test [--train=PATH] [--launch=PATH]
#     1. 3 workers on 3 hosts train (gRPC between hosts, each task's output
#        prefixed) and end with one weights fingerprint; launch exits 0;
#     2. one remote worker is killed (SIGKILL on its host): launch reports 137
#        through ssh, the other two stop with exit 3, as on one machine, launch
#        exits 137; nothing is left running on any host;
#     3. SIGINT to launch (Ctrl-C) ends every remote task; launch exits 130;
#     4. a host without sshd: ssh fails at once (exit 255, BatchMode: no
#        prompt), launch says so and stops the task on the other host.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
train=$here/bazel-bin/tools/train
launch=$here/bazel-bin/tools/launch/launch
[[ "${1:-}" == test ]] || { echo "usage: $0 test [--train=PATH] [--launch=PATH]" >&2; exit 2; }
shift
for arg in "$@"; do
  case "$arg" in
    --train=*) train=$(realpath "${arg#*=}") ;;
    --launch=*) launch=$(realpath "${arg#*=}") ;;
    *) echo "unknown argument $arg" >&2; exit 2 ;;
  esac
done
log() { echo "[ssh_hosts] $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
if [[ $(id -u) -ne 0 ]]; then
  log "SKIPPED: emulated hosts need root (network namespaces)"
  exit 0
fi
[[ -x /usr/sbin/sshd ]] || die "needs Debian's openssh-server (scripts/setup.sh --suite)"
[[ -x "$train" && -x "$launch" ]] || die "build //tools:train and //tools/launch:launch first"

source "$here/scripts/netns_hosts.sh"
hosts_count=3
tag=$(($$ % 200 + 20))
netns_hosts_init "rws$tag" "10.219.$tag" "$hosts_count"
dir=$(mktemp -d /tmp/ssh_hosts.XXXXXX)
ns() { netns_host "$1"; }
address() { netns_address "$1"; }

cleanup() {
  local status=$?
  [[ -n "${launch_pid:-}" ]] && kill -KILL "$launch_pid" 2> /dev/null || true
  netns_hosts_down
  [[ -z "${made_run_sshd:-}" ]] || rmdir /run/sshd 2> /dev/null || true
  if ((status != 0)) && [[ -f "$dir/out" ]]; then tail -n 60 "$dir/out" >&2 || true; fi
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT

# Keys: one host key for every host, one client key; nothing of the machine's.
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
cp "$dir/client_key.pub" "$dir/authorized_keys"
cat > "$dir/sshd_config" << CONFIG
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel ERROR
CONFIG
: > "$dir/known_hosts"
for ((i = 1; i <= hosts_count + 1; ++i)); do
  echo "$(address $i) $(cut -d' ' -f1,2 "$dir/host_key.pub")" >> "$dir/known_hosts"
done
cat > "$dir/ssh_config" << CONFIG
Host *
  User root
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
CONFIG
# sshd's privilege separation directory (Debian's service makes it at start).
[[ -d /run/sshd ]] || { install -d -m 0755 /run/sshd && made_run_sshd=1; }

netns_hosts_up
for ((i = 1; i <= hosts_count; ++i)); do
  # The host: its own /dev/shm, and sshd on its address; the sessions sshd
  # starts share both.
  ip netns exec "$(ns $i)" unshare -m --propagation private sh -c \
    "mount -t tmpfs tmpfs /dev/shm && exec /usr/sbin/sshd -D -e -f '$dir/sshd_config' \
       -o ListenAddress=$(address $i)" 2>> "$dir/sshd.log" &
  disown
done
remote_shell="ssh -F $dir/ssh_config"
for ((i = 1; i <= hosts_count; ++i)); do
  for _ in $(seq 50); do
    $remote_shell "$(address $i)" true 2> /dev/null && break
    sleep 0.2
  done
  $remote_shell "$(address $i)" true || die "sshd on host $i ($(address $i)) does not answer"
done
hosts=$(address 1),$(address 2),$(address 3)
log "3 hosts answer ssh: $hosts"

# Train processes still running on the emulated hosts.
remote_trains() {
  local i pids
  for ((i = 1; i <= hosts_count; ++i)); do
    pids=$(ip netns pids "$(ns $i)" | paste -sd,)
    [[ -z "$pids" ]] || ps -o comm= -p "$pids" || true
  done | grep -c '^train$' || true
}
# Waits until `pattern` appears `count` times in launch's output (or it ended).
wait_for() {
  local pattern=$1 count=$2 what=$3 deadline=$((SECONDS + 90))
  until (($(grep -cE "$pattern" "$dir/out" || true) >= count)); do
    kill -0 "$launch_pid" 2> /dev/null || die "launch ended before: $what"
    ((SECONDS < deadline)) || die "no $what within 90 s"
    sleep 0.2
  done
  log "$what"
}
start_job() {  # EPOCHS PORT: a 3-worker job in the background
  "$launch" --hosts="$hosts" --port="$2" --remote_shell="$remote_shell" --grace_s=10 -- \
    "$train" --dataset=synthetic --synthetic_examples=4096 --global_batch_size=120 \
    --epochs="$1" --verbose=0 --intra_op_threads=1 --inter_op_threads=1 > "$dir/out" 2>&1 &
  launch_pid=$!
}
finish_job() {  # sets status: the job's exit code
  status=0
  wait "$launch_pid" || status=$?
  launch_pid=
}
cd "$dir"

# 1. Three hosts, one fingerprint.
start_job 3 23456
finish_job
((status == 0)) || die "launch exited $status"
# Each host's first task on --port (as tfconfig hosts).
grep -E "^\[worker:0\].*joined the ring" "$dir/out" | grep -q "worker:1 ($(address 2):23456) grpc" ||
  die "worker:0's link to worker:1 on another host is not gRPC"
fingerprints=$(grep -oE "^\[worker:[012]\].*weights fingerprint [0-9a-f]+" "$dir/out" |
  awk '{print $NF}' | sort | uniq -c)
[[ $(echo "$fingerprints" | wc -l) -eq 1 && $(echo "$fingerprints" | awk '{print $1}') -eq 3 ]] ||
  die "the 3 workers do not report one weights fingerprint: $fingerprints"
log "3 workers on 3 hosts over ssh: one fingerprint ($(echo "$fingerprints" | awk '{print $2}'))"

# 2. A remote worker killed.
mv "$dir/out" "$dir/out.1"
start_job 400 23556
wait_for "joined the ring: rank . of 3" 3 "second job: 3 workers on 3 hosts"
sleep 2
victim=$(ps -o pid=,comm= -p "$(ip netns pids "$(ns 2)" | paste -sd,)" | awk '$2 == "train" {print $1}')
[[ -n "$victim" ]] || die "no train process on host 2"
kill -KILL $victim
finish_job
((status != 0)) || die "launch exited 0 after a worker was killed"
grep -q "worker:1 exited with code 137 (killed by signal 9)" "$dir/out" ||
  die "launch did not report worker:1's SIGKILL through ssh (137)"
for task in worker:0 worker:2; do
  grep -qE "$task exited with code 3( |$)" "$dir/out" || die "$task did not stop with exit 3"
done
((status == 137)) || die "launch exited $status, not worker:1's 137"
(($(remote_trains) == 0)) || die "train processes are left on the hosts"
log "worker:1 killed on its host: the others exited 3, launch $status, nothing left running"

# 3. Ctrl-C.
mv "$dir/out" "$dir/out.2"
start_job 400 23656
wait_for "joined the ring: rank . of 3" 3 "third job: 3 workers on 3 hosts"
kill -INT "$launch_pid"
finish_job
grep -q "got signal 2; passing it to every task" "$dir/out" || die "launch did not pass SIGINT on"
((status == 130)) || die "launch exited $status after SIGINT, not 130"
for _ in $(seq 50); do (($(remote_trains) == 0)) && break; sleep 0.2; done
(($(remote_trains) == 0)) || die "train processes outlive launch's SIGINT"
log "SIGINT to launch: it exited $status and no task is left on any host"

# 4. A host nobody answers on: ssh fails without a prompt.
mv "$dir/out" "$dir/out.3"
hosts=$(address 1),$(address 4)
start_job 400 23756
finish_job
((status == 255)) || die "launch exited $status with an unreachable host, not 255"
grep -q "worker:1 exited with code 255 (the remote shell failed: the host unreachable" "$dir/out" ||
  die "launch did not say worker:1's host is unreachable"
grep -q "stopping worker:0 with SIGTERM" "$dir/out" || die "worker:0 was not stopped"
(($(remote_trains) == 0)) || die "worker:0 is left running on host 1"
log "PASSED: launch --hosts over ssh trains, stops and reports as locally"
