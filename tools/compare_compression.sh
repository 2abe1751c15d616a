#!/usr/bin/env bash
# Training throughput with gradients on the wire as float32 and as bfloat16
# (--allreduce_compression), across two emulated hosts joined by a link of a given
# rate: two network namespaces on a veth pair, each with its own mount namespace
# and a private /dev/shm (so the workers talk gRPC, as on two machines), the link
# shaped with tc's token bucket on both ends. Needs root. Prints a table.
#
#   bash tools/compare_compression.sh [--rates=1gbit,10gbit,none] [--runs=3] [--epochs=2]
#     [--model=mlp]
#
# "none" leaves the link unshaped (a veth pair: about 5 Gb/s for 1 MiB round trips
# here, a quarter of loopback's). The emulated hosts share this machine's cores: each
# worker gets cores / 2 kernel threads (a worker alone on its "host" would take them
# all and the two would fight over the cores). Namespaces and the veth pair are
# removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
rates="1gbit,10gbit,none"; runs=3; epochs=2; model=mlp
for arg in "$@"; do
  case "$arg" in
    --rates=*) rates=${arg#*=};;
    --runs=*) runs=${arg#*=};;
    --epochs=*) epochs=${arg#*=};;
    --model=*) model=${arg#*=};;
    *) echo "unknown argument $arg" >&2; exit 2;;
  esac
done
if [[ $(id -u) != 0 ]]; then echo "needs root (network namespaces, tc)" >&2; exit 2; fi
bazel build -c opt //tools:train //tools:tfconfig >&2
work=$(mktemp -d)
ns=(rwc$$a rwc$$b)
addr=(10.213.0.1 10.213.0.2)
pids=()  # The workers of the run in progress.
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  if [[ -n ${KEEP_WORK:-} ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
ip netns add "${ns[0]}"
ip netns add "${ns[1]}"
ip link add eth0 netns "${ns[0]}" type veth peer name eth0 netns "${ns[1]}"
for i in 0 1; do
  ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev eth0
  ip -n "${ns[$i]}" link set eth0 mtu "${MTU:-1500}" up
  ip -n "${ns[$i]}" link set lo up
done
threads=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
port=$(bazel-bin/tools/tfconfig localhost --num_workers=1 | sed 's/.*127.0.0.1:\([0-9]*\).*/\1/')
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token")

# One training run: both workers, each in its namespace with a private /dev/shm.
run_once() {  # compression -> "samples/s test_accuracy" in $work/result; fails the script
  local compression=$1 i
  pids=()
  for i in 1 0; do
    local tf_config="{\"cluster\":{\"worker\":[\"${addr[0]}:$port\",\"${addr[1]}:$port\"]},\"task\":{\"type\":\"worker\",\"index\":$i}}"
    TF_CONFIG=$tf_config RINGWORK_CLUSTER_TOKEN_FILE=$work/token \
      ip netns exec "${ns[$i]}" unshare -m sh -c 'mount -t tmpfs tmpfs /dev/shm && exec "$@"' sh \
      bazel-bin/tools/train --model="$model" --epochs="$epochs" --verbose=0 --intra_op_threads="$threads" \
      --allreduce_compression="$compression" --metrics_json="$work/m$i.json" \
      > "$work/w$i.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    if ! wait "$pid"; then
      echo "a worker failed ($compression):" >&2
      tail -n 5 "$work"/w*.log >&2
      exit 1  # The EXIT trap stops the other worker.
    fi
  done
  pids=()
  /usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["train_samples_per_second"], m["test_accuracy"])' \
    "$work/m0.json" > "$work/result"
}

results="$work/results.txt"
IFS=, read -ra rate_list <<< "$rates"
for rate in "${rate_list[@]}"; do
  for i in 0 1; do
    ip netns exec "${ns[$i]}" tc qdisc del dev eth0 root 2>/dev/null || true
    if [[ $rate != none ]]; then
      ip netns exec "${ns[$i]}" tc qdisc add dev eth0 root tbf rate "$rate" burst 512kb latency 100ms
    fi
  done
  for ((r = 0; r < runs; ++r)); do
    for compression in none bf16; do
      echo "link $rate, $compression, run $((r + 1))/$runs..." >&2
      run_once "$compression"  # Not in $(...): its exit must end the script.
      echo "$rate $compression $(cat "$work/result")" >> "$results"
    done
  done
done
/usr/bin/python3 - "$results" "$model" "$epochs" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("# %s, 2 workers on two emulated hosts (gRPC over a veth pair shaped by tc), %s epoch(s);"
      " median of the runs" % (sys.argv[2], sys.argv[3]))
print("%-8s %-12s %14s %14s %10s" % ("link", "compression", "samples/s", "test accuracy", "vs none"))
for rate in dict.fromkeys(r[0] for r in rows):
    base = None
    for compression in ("none", "bf16"):
        mine = [r for r in rows if r[0] == rate and r[1] == compression]
        speed = statistics.median(float(r[2]) for r in mine)
        accuracy = statistics.median(float(r[3]) for r in mine)
        base = base or speed
        print("%-8s %-12s %14.0f %14.4f %9.2fx" % (rate, compression, speed, accuracy, speed / base))
EOF
