#!/usr/bin/env bash
# Growing onto new hosts, on emulated hosts: each host a network namespace on a
# bridge with its own address and its own /dev/shm (a private tmpfs in a mount
# namespace that the host's tasks share). `launch --elastic --host_discovery`
# reads a hosts file this script rewrites while the job trains, and starts each
# task on its host through a remote shell that enters the host's namespaces (as
# ssh would reach a machine). Needs root; the namespaces and links it made are
# removed however it ends.
#
#   scripts/elastic_hosts.sh test [--train=PATH] [--launch=PATH]
#     1. three hosts listed: three workers train (gRPC between hosts);
#     2. two more hosts listed, --max_workers=4: one worker starts on the first
#        and joins (4 go on), the other host waits;
#     3. the second host is no longer listed: its worker is killed as failed, the
#        others go on (3), and the waiting host gets a worker, which joins (4);
#     4. the job finishes: launch exits 0, the four workers that finished report
#        one weights fingerprint, the failed host's worker exited 137;
#     5. a second job grows from 3 to 5 hosts, then loses two of its first three:
#        added workers do not vote, so the three left (one first worker, two added)
#        stop with exit 3 ("lost the quorum"), and so does launch.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
train=$here/bazel-bin/tools/train
launch=$here/bazel-bin/tools/launch/launch
[[ "${1:-}" == test ]] || { echo "usage: $0 test [--train=PATH] [--launch=PATH]" >&2; exit 2; }
shift
for arg in "$@"; do
  case "$arg" in
    --train=*) train=$(realpath "${arg#*=}");;
    --launch=*) launch=$(realpath "${arg#*=}");;
    *) echo "unknown argument $arg" >&2; exit 2;;
  esac
done
log() { echo "[elastic_hosts] $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
if [[ $(id -u) -ne 0 ]]; then
  log "SKIPPED: emulated hosts need root (network namespaces)"
  exit 0
fi
[[ -x "$train" && -x "$launch" ]] || die "build //tools:train and //tools/launch:launch first"

source "$here/scripts/netns_hosts.sh"
hosts_count=5
tag=$(($$ % 200 + 20))
netns_hosts_init "rwe$tag" "10.217.$tag" "$hosts_count"
dir=$(mktemp -d /tmp/elastic_hosts.XXXXXX)
ns() { netns_host "$1"; }
address() { netns_address "$1"; }

cleanup() {
  local status=$?
  [[ -n "${launch_pid:-}" ]] && kill -KILL "$launch_pid" 2>/dev/null || true
  netns_hosts_down
  if ((status != 0)) && [[ -f "$dir/out" ]]; then tail -n 60 "$dir/out" >&2 || true; fi
  [[ -z "${ELASTIC_HOSTS_KEEP:-}" ]] || cp "$dir/out" "$ELASTIC_HOSTS_KEEP" 2>/dev/null || true
  rm -rf "$dir"
  exit "$status"
}
trap cleanup EXIT

netns_hosts_up
for ((i = 1; i <= hosts_count; ++i)); do
  # The host's mount namespace: its own /dev/shm, held by a process that waits.
  nsenter --net="/run/netns/$(ns $i)" unshare -m --propagation private sh -c \
    "mount -t tmpfs tmpfs /dev/shm && echo \$\$ > '$dir/holder.$(address $i)' && exec sleep infinity" &
  disown
done
for ((i = 1; i <= hosts_count; ++i)); do
  for _ in $(seq 50); do [[ -s "$dir/holder.$(address $i)" ]] && break; sleep 0.1; done
  [[ -s "$dir/holder.$(address $i)" ]] || die "host $i did not come up"
done

# The remote shell: `on_host HOST LINE` runs LINE on HOST, as `ssh HOST LINE`
# does: in a session of its own, so that signalling the local process (as launch
# does ssh's) reaches nothing there; launch stops a task through the remote shell.
cat > "$dir/on_host" <<SH
#!/bin/sh
holder=\$(cat "$dir/holder.\$1") || { echo "on_host: no host \$1" >&2; exit 255; }
exec setsid -w nsenter --net=/proc/\$holder/ns/net --mount=/proc/\$holder/ns/mnt sh -c "\$2"
SH
chmod +x "$dir/on_host"
list_hosts() { : > "$dir/hosts.new"; for i in "$@"; do address "$i" >> "$dir/hosts.new"; done; mv "$dir/hosts.new" "$dir/hosts"; }
# Waits until `pattern` appears `count` times in launch's output (or it ended).
wait_for() {
  local pattern=$1 count=$2 what=$3 deadline=$((SECONDS + 90))
  until (( $(grep -cE "$pattern" "$dir/out" || true) >= count )); do
    kill -0 "$launch_pid" 2>/dev/null || die "launch ended before: $what"
    ((SECONDS < deadline)) || die "no $what within 90 s"
    sleep 0.2
  done
  log "$what"
}

list_hosts 1 2 3
cd "$dir"
"$launch" --elastic --host_discovery="cat $dir/hosts" --discovery_interval_s=1 --max_workers=4 \
  --remote_shell="$dir/on_host" --port=23456 -- \
  "$train" --dataset=synthetic --synthetic_examples=4096 --global_batch_size=120 --epochs=150 \
  --verbose=0 --intra_op_threads=1 --inter_op_threads=1 --min_workers=2 > "$dir/out" 2>&1 &
launch_pid=$!
wait_for "joined the ring: rank . of 3" 3 "3 workers on 3 hosts formed the ring"
grep -E "^\[worker:0\].*joined the ring" "$dir/out" | grep -q "worker:1 ($(address 2):23457) grpc" ||
  die "worker:0's link to worker:1 on another host is not gRPC"
list_hosts 1 2 3 4 5
wait_for "worker:3 \($(address 4):23459\) joined; 4 workers go on" 4 "worker:3 on a 4th host joined: 4 go on"
grep -q "4 ring tasks run (--max_workers); host $(address 5) gets workers when some leave" "$dir/out" ||
  die "the 5th host was not kept waiting at --max_workers=4"
list_hosts 1 3 4 5
wait_for "host $(address 2) is no longer listed" 1 "launch saw host 2 go"
wait_for "worker:1 \($(address 2):23457\) left" 3 "the 3 others survived host 2's loss"
wait_for "worker:4 \($(address 5):23460\) joined; 4 workers go on" 4 "worker:4 on the 5th host joined: 4 go on"
status=0
wait "$launch_pid" || status=$?
launch_pid=
((status == 0)) || die "launch exited $status"
grep -q "worker:1 exited with code 137" "$dir/out" || die "worker:1 did not end killed (137)"
fingerprints=$(grep -oE "^\[worker:[0234]\].*weights fingerprint [0-9a-f]+" "$dir/out" | awk '{print $NF}' | sort | uniq -c)
[[ $(echo "$fingerprints" | wc -l) -eq 1 && $(echo "$fingerprints" | awk '{print $1}') -eq 4 ]] ||
  die "the 4 workers that finished do not report one weights fingerprint: $fingerprints"
log "grew from 3 to 4 hosts, lost one, grew again at --max_workers=4; one fingerprint ($(echo "$fingerprints" | awk '{print $2}'))"

# 5. Only TF_CONFIG's first workers vote.
mv "$dir/out" "$dir/out.1"
list_hosts 1 2 3
"$launch" --elastic --host_discovery="cat $dir/hosts" --discovery_interval_s=1 \
  --remote_shell="$dir/on_host" --port=23556 -- \
  "$train" --dataset=synthetic --synthetic_examples=4096 --global_batch_size=120 --epochs=400 \
  --verbose=0 --intra_op_threads=1 --inter_op_threads=1 --min_workers=2 > "$dir/out" 2>&1 &
launch_pid=$!
wait_for "joined the ring: rank . of 3" 3 "second job: 3 workers on 3 hosts"
list_hosts 1 2 3 4 5
wait_for "5 workers go on" 5 "second job: 5 workers (2 added)"
list_hosts 3 4 5
status=0
wait "$launch_pid" || status=$?
launch_pid=
((status != 0)) || die "launch exited 0 after 2 of the 3 first workers' hosts went"
for task in worker:2 worker:3 worker:4; do
  grep -qE "^\[$task\].*lost the quorum" "$dir/out" && grep -q "$task exited with code 3 " "$dir/out" ||
    die "$task did not stop with exit 3 for the lost quorum"
done
log "PASSED: grew, lost a host, grew again at --max_workers; added workers train but do not vote"
