#!/usr/bin/env bash
# Training throughput with gradients on the wire as float32 and as bfloat16
# (--allreduce_compression), across two emulated hosts joined by links of a given
# rate: two network namespaces, each with its own mount namespace and a private
# /dev/shm (so the workers talk gRPC, as on two machines), what each sends shaped
# with tc's token bucket. Needs root. Prints a table.
#
#   bash bench/compare_compression.sh [--rates=1gbit,10gbit,none] [--runs=3] [--epochs=2]
#     [--model=mlp]
#
# The hosts are scripts/emulated_hosts.sh's (a bridge; --rate shapes what each host
# sends; the links' MTU is $MTU, default 1500). "none" leaves the links unshaped.
# Each emulated host is pinned to half of this machine's cores (--cores_per_host), so
# each worker's automatic choices (threads per kernel, the overlap thread, prefetch)
# follow the cores it really has: a worker alone on its "host" would otherwise take
# all of them, and the two would fight over the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rates="1gbit,10gbit,none"; runs=3; epochs=2; model=mlp
parse_flags rates runs epochs model -- "$@"
if [[ $(id -u) != 0 ]]; then echo "needs root (network namespaces, tc)" >&2; exit 2; fi
bazel build -c opt //tools:train >&2
make_work_dir
cores_per_host=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))

# One training run over scripts/emulated_hosts.sh: 2 hosts x 1 worker, each host on
# its half of the cores.
run_once() {  # compression rate -> "samples/s test_accuracy" in $work/result; fails the script
  local compression=$1 rate=$2 shaping=()
  if [[ $rate != none ]]; then shaping=(--rate="$rate"); fi
  rm -f "$work/metrics.json"
  local code=0
  scripts/emulated_hosts.sh --hosts=2 --workers_per_host=1 --cores_per_host="$cores_per_host" \
    --mtu="${MTU:-1500}" "${shaping[@]}" --timeout_s=7200 -- \
    bazel-bin/tools/train --model="$model" --epochs="$epochs" --verbose=0 \
    --allreduce_compression="$compression" --metrics_json="$work/metrics.json" > "$work/workers.log" 2>&1 ||
    code=$?
  if ((code != 0)); then
    echo "the run ($compression, link $rate) failed with exit code $code; each worker's last lines:" >&2
    for i in 0 1; do grep "^\[worker:$i\]" "$work/workers.log" | tail -n 5 >&2; done
    exit 1
  fi
  /usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["train_samples_per_second"], m["test_accuracy"])' \
    "$work/metrics.json" > "$work/result"
}

results="$work/results.txt"
IFS=, read -ra rate_list <<< "$rates"
for rate in "${rate_list[@]}"; do
  for ((r = 0; r < runs; ++r)); do
    for compression in none bf16; do
      echo "link $rate, $compression, run $((r + 1))/$runs..." >&2
      run_once "$compression" "$rate"  # Not in $(...): its exit must end the script.
      echo "$rate $compression $(cat "$work/result")" >> "$results"
    done
  done
done
/usr/bin/python3 - "$results" "$model" "$epochs" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("# %s, 2 workers on two emulated hosts (gRPC over links shaped by tc), %s epoch(s);"
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
