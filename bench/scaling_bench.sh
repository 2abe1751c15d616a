#!/usr/bin/env bash
# How Ringwork scales with the workers of one many-core machine (the 16-core
# machine that is sometimes lent), in one sitting, each row's medians over --runs:
#
#   training   MLP 784-256-128-10 on Fashion-MNIST, Adam, 128 examples per worker
#              per step (weak scaling), 1 intra-op thread per worker: 1 worker, then
#              each count of --workers over shared memory, over gRPC alone, with the
#              defaults (threads chosen from the cores), and PyTorch DDP over gloo
#              (1 thread per process; the PyTorch of --python); efficiency =
#              samples/s / (N x one worker's samples/s)
#   all-reduce float32 sum, 4 B to 16 MiB, at each count: shared memory, gRPC
#              alone, gloo
#   emulated   as root, where `ip netns` works: 2 hosts x N/2 workers
#              (scripts/emulated_hosts.sh), all-reduce and training, flat ring
#              against hierarchical
#
#   bash bench/scaling_bench.sh [--workers=2,4,8] [--epochs=3] [--runs=2] \
#     [--bundle=DIR] [--python=/usr/bin/python3] [--out=DIR] [--time_limit_s=0]
#
# --bundle: an unpacked scripts/make_bundle.sh archive (binaries, their libraries,
# Fashion-MNIST) for a machine without Debian's packages; default: built here with
# Bazel. A stage that fails or outlives its time limit is reported and skipped.
# Prints the tables; --out keeps the raw results (JSON, CSV, logs).
# --time_limit_s: the whole run's budget, build included (0: none). A stage that
# would start with under 10 s of it left is skipped, and a running one is stopped
# (SIGTERM, then SIGKILL 10 s later) when it runs out, so the tables of what ran are
# still printed (on a lent machine, give the device's limit less ~40 s). --out must
# be a new or empty folder, so no earlier run's results get into the tables.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
workers=2,4,8; epochs=3; runs=2; bundle=""; python=/usr/bin/python3; out=""; time_limit_s=0
parse_flags workers epochs runs bundle python out time_limit_s -- "$@"
workers_list=$workers
if [[ -n $bundle ]]; then bundle=$(realpath "$bundle"); fi
IFS=, read -r -a counts <<< "$workers_list"
if ! [[ $time_limit_s =~ ^[0-9]+$ ]]; then echo "--time_limit_s: expected seconds, got $time_limit_s" >&2; exit 2; fi
time_limit_s=$((10#$time_limit_s))
if [[ -n $out && -d $out && -n $(ls -A "$out") ]]; then
  echo "--out=$out is not empty: its earlier results would get into the tables" >&2; exit 2
fi
if [[ -n $out ]]; then mkdir -p "$out"; work=$(realpath "$out"); else
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
if [[ -n $bundle ]]; then
  bin=$bundle/bin data_dir=$bundle/fashion-mnist
  export LD_LIBRARY_PATH=$bundle/lib
else
  bazel build -c opt //tools:train //tools/launch:launch //tools:tfconfig //bench:kernel_bench \
    //bench:allreduce_bench >&2 || exit 1
  bin=$work/bin data_dir=/usr/share/datasets/fashion-mnist
  mkdir -p "$bin"
  for b in tools/train tools/launch/launch tools/tfconfig bench/kernel_bench bench/allreduce_bench; do
    ln -sf "$PWD/bazel-bin/$b" "$bin/"
  done
fi
seconds_for() {  # seconds_for NAME SECONDS: the seconds NAME may run; fails (skipped) when under 10 are left
  local left=$((time_limit_s - SECONDS))  # SECONDS: since the script started
  if ((time_limit_s == 0 || left >= $2)); then echo "$2"; return 0; fi
  if ((left < 10)); then echo "  $1 skipped: --time_limit_s=$time_limit_s spent" >&2; return 1; fi
  echo "$left"
}
stage() {  # stage NAME SECONDS COMMAND...: runs it with a time limit; a failure is reported, not fatal
  local name=$1 limit
  limit=$(seconds_for "$1" "$2") || return 0
  local cut=""
  (( limit < $2 )) && cut=" (stopped at --time_limit_s=$time_limit_s)"
  shift 2
  echo "[$(date +%T)] $name" >&2
  # Stopped at its limit, it gets SIGTERM (launch passes it to its workers,
  # emulated_hosts.sh removes its namespaces), then SIGKILL 10 s later.
  timeout -s TERM -k 10 "$limit" "$@" > "$work/$name.log" 2>&1 ||
    echo "  $name failed (exit $?)$cut: $(tail -n 3 "$work/$name.log" | tr '\n' ' ')" >&2
}
free_port() { "$bin/tfconfig" localhost --num_workers=1 | sed 's/.*127.0.0.1:\([0-9]*\).*/\1/'; }
train() {  # train NAME WORKERS FLAGS...
  local name=$1 n=$2; shift 2
  stage "$name" 300 "$bin/launch" --num_workers="$n" -- "$bin/train" --data_dir="$data_dir" \
    --epochs="$epochs" --global_batch_size=$((128 * n)) --verbose=0 --metrics_json="$work/$name.json" "$@"
}
torch_train() {  # torch_train NAME WORKERS: DDP over gloo, rank 0's JSON kept
  local name=$1 n=$2 port r limit
  limit=$(seconds_for "$1" 300) || return 0
  port=$(free_port)
  for ((r = n - 1; r >= 0; --r)); do
    env -u LD_LIBRARY_PATH RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 FASHION_MNIST_DIR="$data_dir" CUDA_VISIBLE_DEVICES= \
      timeout -s TERM -k 10 "$limit" "$python" bench/peers/torch_ddp_train.py --epochs="$epochs" \
      --global_batch_size=$((128 * n)) --threads=1 > "$work/$name.out.$r" 2>&1 &
  done
  wait
  if "$python" -c 'import json,sys; json.loads(open(sys.argv[1]).read().splitlines()[-1])' "$work/$name.out.0" 2>/dev/null; then
    tail -n 1 "$work/$name.out.0" > "$work/$name.json"
  else
    echo "  $name failed: $(tail -n 3 "$work/$name.out.0" | tr '\n' ' ')" >&2
  fi
}
allreduce() {  # allreduce LABEL WORKERS FLAGS...: rank 0's CSV rows appended
  local label=$1 n=$2; shift 2
  stage "allreduce-$label-$n" 180 "$bin/launch" --num_workers="$n" -- "$bin/allreduce_bench" \
    --min_bytes=4 --max_bytes=16M --factor=16 --runs=3 --csv --label="$label" "$@"
  [[ -f $work/allreduce-$label-$n.log ]] &&
    sed -n 's/^\[worker:0\] //p' "$work/allreduce-$label-$n.log" | grep "^$label," >> "$work/allreduce.csv"
}
gloo_allreduce() {
  local n=$1 port r limit
  limit=$(seconds_for "gloo-$n" 180) || return 0
  port=$(free_port)
  for ((r = n - 1; r >= 0; --r)); do
    env -u LD_LIBRARY_PATH RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo \
      OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES= timeout -s TERM -k 10 "$limit" "$python" bench/peers/gloo_allreduce_bench.py \
      gloo 4 $((16 << 20)) 16 3 > "$work/gloo-$n.$r" 2>&1 &
  done
  wait
  grep '^gloo,' "$work/gloo-$n.0" >> "$work/allreduce.csv" || echo "  gloo at $n failed" >&2
}

{ echo "date: $(date -u '+%F %T') UTC"; nproc; lscpu | grep -E '^(Model name|Socket|Core|Thread|NUMA node\(s\))'
  "$python" -c 'import torch; print("torch", torch.__version__, torch.__config__.parallel_info().splitlines()[-1])' 2>&1 | tail -1
} > "$work/machine.txt"
cat "$work/machine.txt" >&2
stage kernel_bench 120 "$bin/kernel_bench" --precision=float32 --threads=1 --runs=3
: > "$work/allreduce.csv"
emulate=0
half_cores=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))  # Each emulated host's cores.
if [[ $(id -u) == 0 ]] && ip netns add rwprobe$$ 2> /dev/null; then ip netns del rwprobe$$; emulate=1; fi
for ((run = 1; run <= runs; ++run)); do
  train "one.$run" 1 --intra_op_threads=1
  for n in "${counts[@]}"; do
    train "shm-$n.$run" "$n" --intra_op_threads=1
    train "grpc-$n.$run" "$n" --intra_op_threads=1 --transport=grpc
    train "defaults-$n.$run" "$n"
    torch_train "ddp-$n.$run" "$n"
    if ((emulate && n >= 4)); then
      for algorithm in ring hierarchical; do
        stage "emulated-$algorithm-$n.$run" 300 scripts/emulated_hosts.sh --hosts=2 --workers_per_host=$((n / 2)) \
          --cores_per_host="$half_cores" --timeout_s=280 -- "$bin/train" --data_dir="$data_dir" --epochs="$epochs" \
          --global_batch_size=$((128 * n)) --verbose=0 --intra_op_threads=1 \
          --allreduce_algorithm="$algorithm" --metrics_json="$work/emulated-$algorithm-$n.$run.json"
      done
    fi
  done
  torch_train "ddp-1.$run" 1
done
for n in "${counts[@]}"; do
  allreduce ringwork-shm "$n"
  allreduce ringwork-grpc "$n" --transport=grpc
  gloo_allreduce "$n"
  if ((emulate && n >= 4)); then
    for algorithm in ring hierarchical; do
      stage "allreduce-emulated-$algorithm-$n" 180 scripts/emulated_hosts.sh --hosts=2 \
        --workers_per_host=$((n / 2)) --cores_per_host="$half_cores" --timeout_s=170 -- "$bin/allreduce_bench" --min_bytes=4 \
        --max_bytes=16M --factor=16 --runs=3 --csv --allreduce_algorithm="$algorithm" \
        --label="ringwork-2x$((n / 2))-$algorithm"
      [[ -f $work/allreduce-emulated-$algorithm-$n.log ]] &&
        sed -n 's/^\[worker:0\] //p' "$work/allreduce-emulated-$algorithm-$n.log" | grep '^ringwork' \
          >> "$work/allreduce.csv"
    done
  fi
done
((emulate)) || echo "(no emulated hosts: needs root and ip netns)" >&2

"$python" - "$work" "$workers_list" "$epochs" "$runs" <<'PY'
import csv, glob, json, os, re, statistics, sys
work, counts, epochs, runs = sys.argv[1], [int(c) for c in sys.argv[2].split(",")], sys.argv[3], sys.argv[4]
print(open(f"{work}/machine.txt").read().strip())
def median(key, field="train_samples_per_second"):
    values = [json.load(open(f))[field] for f in glob.glob(f"{work}/{key}.*.json")]
    return statistics.median(values) if values else None
kernel = open(f"{work}/kernel_bench.log").read() if os.path.exists(f"{work}/kernel_bench.log") else ""
step = re.search(r"^MLP training step .*?float32\s+([0-9.]+)", kernel, re.M)
if step:
    print(f"kernel_bench: MLP training step (batch 128, 1 thread) {float(step.group(1)):.0f} us = "
          f"{128 / (float(step.group(1)) * 1e-6):.0f} samples/s")
one, ddp_one = median("one"), median("ddp-1")
print(f"\n# training, MLP on Fashion-MNIST, 128 examples per worker per step, {epochs} epochs, "
      f"median of {runs} runs: samples/s (efficiency = rate / (N x ringwork's 1 worker, {one or 0:.0f}))")
rows = [("shm", "ringwork shm, 1 thread"), ("grpc", "ringwork gRPC, 1 thread"),
        ("defaults", "ringwork shm, defaults"), ("emulated-ring", "ringwork 2 hosts, ring"),
        ("emulated-hierarchical", "ringwork 2 hosts, hierarch."), ("ddp", "PyTorch DDP gloo, 1 thread")]
print(f"{'workers':>7} " + " ".join(f"{name:>28}" for _, name in rows) + f" {'test acc shm':>12}")
for n in [1] + counts:
    cells = []
    for key, _ in rows:
        rate = (one if key == "shm" else ddp_one if key == "ddp" else None) if n == 1 else median(f"{key}-{n}")
        cells.append(f"{rate:>15.0f} ({rate / (n * one):>5.0%})     " if rate and one else f"{'-':>28}")
    acc = median("one" if n == 1 else f"shm-{n}", "test_accuracy")
    print(f"{n:>7} " + " ".join(cells) + f" {acc if acc is not None else float('nan'):>12.4f}")
print("\n# ringwork / PyTorch DDP (shm rows, same per-worker batch)")
for n in [1] + counts:
    r, d = (one, ddp_one) if n == 1 else (median(f"shm-{n}"), median(f"ddp-{n}"))
    print(f"{n:>7} {r / d:>8.2f}x" if r and d else f"{n:>7} {'-':>9}")
rows = [r for r in csv.reader(open(f"{work}/allreduce.csv")) if r and r[0] != "label"]
by = {}
for r in rows:
    by.setdefault((int(r[1]), r[0]), {})[int(r[2])] = r
for n in counts:
    labels = [l for (k, l) in by if k == n]
    if not labels:
        continue
    sizes = sorted({s for l in labels for s in by[(n, l)]})
    print(f"\n# all-reduce, float32 sum, {n} ranks: median us (busbw GB/s)")
    print(f"{'bytes':>9} " + " ".join(f"{l:>30}" for l in labels))
    for s in sizes:
        cells = [f"{float(by[(n, l)][s][6]):>18.1f} ({float(by[(n, l)][s][10]):>7.2f})  " if s in by[(n, l)]
                 else f"{'-':>30}" for l in labels]
        print(f"{s:>9} " + " ".join(cells))
PY
