#!/usr/bin/env bash
# How close MLP training over gRPC alone can come to training over shared memory on
# this machine, if its all-reduces were as fast as Open MPI's over TCP.
#
#   bash bench/grpc_training_ceiling.sh [--rounds=5] [--epochs=3] [--num_workers=2]
#
# Each round, one after the other in one sitting:
#   1. `train` over shared memory and over gRPC alone, each with a timeline; from
#      each, the median step, the median gradient all-reduce and the median
#      per-step metrics all-reduce, over both workers;
#   2. the same two all-reduces (their sizes read from the timeline) on their own
#      with allreduce_bench over shared memory and gRPC, and with Open MPI's
#      MPI_Allreduce over TCP loopback (bench/peers/mpi_allreduce_bench.c).
# The ceiling swaps the shared-memory all-reduces of a shared-memory step for MPI's
# TCP ones: shm step + (MPI TCP - Ringwork shm) for both sizes. The prediction does
# the same with Ringwork's own gRPC times, to show how well the sum models a step.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=5; epochs=3; num_workers=2
parse_flags rounds epochs num_workers -- "$@"
scripts/setup.sh --peers
bazel build -c opt //tools:train //bench:allreduce_bench //tools/launch:launch >&2
make_work_dir
mpicc -O2 -o "$work/mpi_allreduce_bench" bench/peers/mpi_allreduce_bench.c

# Prints "step_us gradient_us metrics_us gradient_bytes metrics_bytes" of one run.
train_row() {
  bazel-bin/tools/launch/launch --num_workers="$num_workers" --timeline="$work/timeline.json" -- \
    bazel-bin/tools/train --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 \
    --timeline_steps=100: --verbose=0 "$@" > "$work/train.log" 2>&1 ||
    { tail -n 5 "$work/train.log" >&2; exit 1; }
  python3 - "$work/timeline.json" <<'EOF'
import json, statistics, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
def median(keep):
    return statistics.median([e["dur"] for e in events if keep(e)])
gradients = [e for e in events if e["name"] == "gradients, all packs in one"]
metrics = [e for e in events if e["name"] == "metrics all-reduce"]
if not gradients or not metrics:
    sys.exit("the timeline has no gradient or metrics all-reduce")
gradient_bytes = gradients[0]["args"]["bytes"]
# The metrics all-reduce is the collective inside a "metrics all-reduce" span.
m = metrics[0]
inner = [e for e in events if e.get("cat") == "collective" and e["pid"] == m["pid"]
         and m["ts"] <= e["ts"] <= m["ts"] + m["dur"]]
if not inner:
    sys.exit("the timeline has no collective inside the first metrics all-reduce span")
print(median(lambda e: e.get("cat") == "step"),
      median(lambda e: e["name"] == "gradients, all packs in one"),
      median(lambda e: e["name"] == "metrics all-reduce"),
      gradient_bytes, inner[0]["args"]["bytes"])
EOF
}
ringwork_bench() {  # bytes, extra flags: the median time (us)
  bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/bench/allreduce_bench \
    --min_bytes="$1" --max_bytes="$1" --runs=5 --csv "${@:2}" 2>/dev/null |
    sed -n 's/^\[worker:0\] //p' | grep -v '^label' | cut -d, -f7
}
mpi_bench() {  # bytes: the median time (us)
  mpirun --allow-run-as-root --oversubscribe -np "$num_workers" --mca pml ob1 --mca btl self,tcp \
    --mca btl_tcp_if_include lo "$work/mpi_allreduce_bench" mpi-tcp "$1" "$1" 2 5 | tail -n 1 | cut -d, -f7
}

results="$work/results.txt"
for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds..." >&2
  # Not in $(...): a failed training run must end the script.
  train_row > "$work/shm.row"
  train_row --transport=grpc > "$work/grpc.row"
  read -r shm_step shm_grad shm_metrics grad_bytes metrics_bytes < "$work/shm.row"
  read -r grpc_step grpc_grad grpc_metrics _ _ < "$work/grpc.row"
  row="$round $shm_step $shm_grad $shm_metrics $grpc_step $grpc_grad $grpc_metrics"
  row+=" $(ringwork_bench "$grad_bytes") $(ringwork_bench "$grad_bytes" --transport=grpc)"
  row+=" $(mpi_bench "$grad_bytes") $(ringwork_bench "$metrics_bytes")"
  row+=" $(ringwork_bench "$metrics_bytes" --transport=grpc) $(mpi_bench "$metrics_bytes")"
  row+=" $grad_bytes $metrics_bytes"
  # A benchmark that printed nothing leaves a field out.
  if [[ $(wc -w <<< "$row") != 15 ]]; then
    echo "round $round: a measurement is missing (round, 6 from training, 6 benchmarks, 2 sizes): $row" >&2
    exit 1
  fi
  echo "$row" >> "$results"
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
grad_bytes, metrics_bytes = int(rows[0][-2]), int(rows[0][-1])
print(f"MLP, {grad_bytes} B of gradients and a {metrics_bytes} B metrics all-reduce a step; us")
print("In training (medians of the steps): step and its gradient / metrics all-reduce.")
print("On their own (allreduce_bench, MPI): the same two sizes.")
print()
print("| round | shm step | gRPC step | gRPC / shm | shm grad. | gRPC grad. | shm metr. | gRPC metr. "
      "| alone: shm grad. | gRPC grad. | MPI TCP grad. | shm metr. | gRPC metr. | MPI TCP metr. "
      "| ceiling step | ceiling / shm | predicted gRPC step |")
print("|" + "---|" * 17)
ratios, ceilings = [], []
for r in rows:
    (n, ss, sg, sm, gs, gg, gm, bs, bg, bm, ms, mg, mm) = r[:13]
    ceiling = ss + (bm - bs) + (mm - ms)
    predicted = ss + (bg - bs) + (mg - ms)
    ratios.append(ss / gs)
    ceilings.append(ss / ceiling)
    print(f"| {int(n)} | {ss:.0f} | {gs:.0f} | {ss / gs:.1%} | {sg:.0f} | {gg:.0f} | {sm:.0f} | {gm:.0f} "
          f"| {bs:.1f} | {bg:.1f} | {bm:.1f} | {ms:.1f} | {mg:.1f} | {mm:.1f} "
          f"| {ceiling:.0f} | {ss / ceiling:.1%} | {predicted:.0f} |")
print()
print(f"gRPC / shared memory: median {statistics.median(ratios):.1%} "
      f"({min(ratios):.1%}..{max(ratios):.1%}); with Open MPI's TCP all-reduces at most "
      f"{statistics.median(ceilings):.1%} ({min(ceilings):.1%}..{max(ceilings):.1%})")
EOF
