#!/usr/bin/env bash
# The same training job (MLP 784-256-128-10 on Fashion-MNIST, Adam, global batch
# 256) with Ringwork's train and with PyTorch 1.13, on this machine, repeated
# --runs times; prints the median samples/s and test accuracy of each, and ratios:
#
#   ringwork           N workers x 1 thread (shared memory between them), defaults
#   ringwork, overlap  the same with --inter_op_threads=2 (the all-reduce on a second
#                      thread during the backward pass; the default only with 2 cores
#                      per worker)
#   ringwork, 1 worker 1 worker x 1 thread, global batch 256 / N (the same batch per
#                      worker: N x this is perfect scaling)
#   ringwork, gRPC     N workers x 1 thread with --transport=grpc (how workers on
#                      different hosts talk), on loopback
#   ringwork, 2x2      2 emulated hosts x 2 workers (scripts/emulated_hosts.sh: network
#                      namespaces, a private /dev/shm per host; shared memory within a
#                      host, gRPC across, the hierarchical all-reduce): 4 workers on
#                      this machine's cores. Only as root; skipped otherwise.
#   ringwork, 2x1      2 emulated hosts x 1 worker x 1 thread: every byte over gRPC
#                      through a link with a NIC's MTU (1500), where the gRPC row
#                      above goes through loopback (65536). Only as root.
#   (both emulated rows: each emulated host gets half of the cores and each of its
#   workers its share of them, --cores_per_host, so that workers choose their
#   threads for the cores they would have on such a host)
#   DDP, OpenBLAS      N processes x 1 thread, DDP over gloo, OpenBLAS
#   DDP, ref. BLAS     the same with Debian's reference BLAS (PyTorch's fallback)
#   1 process          one PyTorch process with N threads, OpenBLAS, no DDP
#
#   bash bench/compare_training.sh [--num_workers=2] [--epochs=5] [--runs=3]
#
# --model=resnet, wide_deep, lstm or transformer (the models beside the MLP; wide_deep on
# the synthetic click log, lstm and transformer on synthetic_sequences, PyTorch on data of
# the same shape) runs the rows ringwork, ringwork 1 worker
# and DDP OpenBLAS only (resnet also ringwork with --precision=bfloat16);
# --steps_per_epoch=K shortens their epochs on both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
num_workers=2; epochs=5; runs=3; model=mlp; steps_per_epoch=0
parse_flags num_workers epochs runs model steps_per_epoch -- "$@"
case "$model" in
  mlp|resnet) model_flags=(--model="$model");;
  wide_deep) model_flags=(--model=wide_deep --dataset=synthetic_clicks);;
  lstm|transformer) model_flags=(--model="$model" --dataset=synthetic_sequences);;
  *) echo "--model=$model: expected mlp, resnet, wide_deep, lstm or transformer" >&2; exit 2;;
esac
if [[ $steps_per_epoch != 0 ]]; then model_flags+=(--steps_per_epoch="$steps_per_epoch"); fi
scripts/setup.sh --peers
bazel build -c opt //tools:train //tools/launch:launch //tools:tfconfig //bench:kernel_bench >&2
make_work_dir
cores_per_host=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))  # The emulated rows'.
libs=/usr/lib/x86_64-linux-gnu
openblas=$libs/openblas-pthread reference_blas=$libs/blas

# torch_run OUT BLAS_DIR WORLD THREADS: one PyTorch job; rank 0's JSON goes to OUT.
# A rank that fails (or times out) fails the comparison, naming it.
torch_run() {
  local out=$1 blas=$2 world=$3 threads=$4 port r
  local -a pids=()
  port=$(bazel-bin/tools/tfconfig localhost --num_workers=1 | sed 's/.*127.0.0.1:\([0-9]*\).*/\1/')
  for ((r = world - 1; r >= 0; --r)); do
    LD_LIBRARY_PATH=$blas RANK=$r WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=$threads timeout 900 /usr/bin/python3 \
      bench/peers/torch_ddp_train.py --model="$model" --epochs="$epochs" --global_batch_size=256 \
      --steps_per_epoch="$steps_per_epoch" --threads="$threads" > "$out.$r" 2> "$out.$r.err" &
    pids[r]=$!
  done
  local failed=0
  for ((r = 0; r < world; ++r)); do
    if ! wait "${pids[r]}"; then
      echo "PyTorch rank $r of $world (BLAS $blas) failed; its output:" >&2
      cat "$out.$r" "$out.$r.err" >&2
      failed=1
    fi
  done
  if ((failed)); then exit 1; fi
  mv "$out.0" "$out"
}

# The kernels alone: one MLP training step (batch 128, 1 thread), for the "of
# kernels" column: a layout's samples/s over workers x 128 / that step.
echo "kernel_bench (the MLP step alone)..." >&2
bazel-bin/bench/kernel_bench --precision=float32 --threads=1 > "$work/kernel_bench.txt"
if ! grep -q '^MLP training step .*float32' "$work/kernel_bench.txt"; then
  echo "kernel_bench printed no MLP training step row:" >&2
  cat "$work/kernel_bench.txt" >&2
  exit 1
fi
for ((run = 1; run <= runs; ++run)); do
  echo "run $run of $runs" >&2
  if [[ $model != mlp ]]; then
    bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train "${model_flags[@]}" \
      --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --verbose=0 \
      --metrics_json="$work/ringwork.$run.json" >&2
    bazel-bin/tools/launch/launch --num_workers=1 -- bazel-bin/tools/train "${model_flags[@]}" \
      --epochs="$epochs" --global_batch_size=$((256 / num_workers)) --intra_op_threads=1 --verbose=0 \
      --metrics_json="$work/ringwork_one.$run.json" >&2
    if [[ $model == resnet ]]; then
      bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train "${model_flags[@]}" \
        --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --precision=bfloat16 --verbose=0 \
        --metrics_json="$work/ringwork_bf16.$run.json" >&2
    fi
    torch_run "$work/ddp_openblas.$run.json" "$openblas" "$num_workers" 1
    continue
  fi
  bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train \
    --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --verbose=0 \
    --metrics_json="$work/ringwork.$run.json" >&2
  bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train \
    --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --inter_op_threads=2 --verbose=0 \
    --metrics_json="$work/ringwork_overlap.$run.json" >&2
  bazel-bin/tools/launch/launch --num_workers=1 -- bazel-bin/tools/train \
    --epochs="$epochs" --global_batch_size=$((256 / num_workers)) --intra_op_threads=1 --verbose=0 \
    --metrics_json="$work/ringwork_one.$run.json" >&2
  bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train \
    --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --transport=grpc --verbose=0 \
    --metrics_json="$work/ringwork_grpc.$run.json" >&2
  if [[ $(id -u) == 0 ]]; then
    scripts/emulated_hosts.sh --hosts=2 --workers_per_host=2 --cores_per_host="$cores_per_host" --timeout_s=900 -- \
      bazel-bin/tools/train --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 \
      --verbose=0 --metrics_json="$work/ringwork_2x2.$run.json" >&2
    scripts/emulated_hosts.sh --hosts=2 --workers_per_host=1 --cores_per_host="$cores_per_host" --timeout_s=900 -- \
      bazel-bin/tools/train --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 \
      --verbose=0 --metrics_json="$work/ringwork_2x1.$run.json" >&2
  fi
  torch_run "$work/ddp_openblas.$run.json" "$openblas" "$num_workers" 1
  torch_run "$work/ddp_refblas.$run.json" "$reference_blas" "$num_workers" 1
  torch_run "$work/single.$run.json" "$openblas" 1 "$num_workers"
done

/usr/bin/python3 - "$work" "$num_workers" "$epochs" "$runs" "$model" <<'PY'
import glob, json, re, statistics, subprocess, sys
work, n, epochs, runs, model = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = [("ringwork", "ringwork", f"{n} workers x 1 thread"),
        ("ringwork_overlap", "ringwork, overlap thread", f"{n} workers x 1 thread"),
        ("ringwork_one", f"ringwork, batch {256 // n}", "1 worker x 1 thread"),
        ("ringwork_bf16", "ringwork, bfloat16", f"{n} workers x 1 thread"),
        ("ringwork_grpc", "ringwork, gRPC only", f"{n} workers x 1 thread"),
        ("ringwork_2x2", "ringwork, emulated hosts", "2 hosts x 2 workers"),
        ("ringwork_2x1", "ringwork, emulated hosts", "2 hosts x 1 worker"),
        ("ddp_openblas", "pytorch DDP gloo, OpenBLAS", f"{n} processes x 1 thread"),
        ("ddp_refblas", "pytorch DDP gloo, ref. BLAS", f"{n} processes x 1 thread"),
        ("single", "pytorch, OpenBLAS", f"1 process x {n} threads")]
medians = {}
step_us = float(re.search(r"^MLP training step .*?float32\s+([0-9.]+)",
                          open(f"{work}/kernel_bench.txt").read(), re.M).group(1))
kernel_rate = 128 / (step_us * 1e-6)  # Samples/s of one worker's kernels, batch 128.
# Only where each worker's batch is kernel_bench's 128 (global 256 over 2 workers).
kernel_workers = {"ringwork": n, "ringwork_overlap": n, "ringwork_one": 1, "ringwork_grpc": n} if 256 // n == 128 else {}
kernel_workers["ringwork_2x1"] = 2  # Always 2 workers of batch 128.
# Workers of the emulated layouts, on this machine's cores like the others.
emulated_workers = {"ringwork_2x2": 4, "ringwork_2x1": 2}
if model != "resnet":  # The bfloat16 row runs for the resnet only.
    rows = [r for r in rows if r[0] != "ringwork_bf16"]
if model != "mlp":
    kernel_workers = {}  # kernel_bench times the MLP's step only.
    keep = ("ringwork", "ringwork_one", "ddp_openblas") + (("ringwork_bf16",) if model == "resnet" else ())
    rows = [r for r in rows if r[0] in keep]
described = {"mlp": "MLP 784-256-128-10 on Fashion-MNIST", "resnet": "SmallResNet on Fashion-MNIST",
             "wide_deep": "Wide & Deep on a synthetic click log (test accuracy: of clicks)",
             "lstm": "Embedding 32, LSTM 64 on synthetic_sequences (20 tokens, 4 classes)",
             "transformer": "Embedding 32 + positions, 2 encoder blocks on synthetic_sequences"}[model]
print(f"# {described}, Adam, global batch 256, {epochs} epochs, medians of {runs} runs")
print(f"# {subprocess.run(['date', '-u', '+%Y-%m-%d'], capture_output=True, text=True).stdout.strip()}, "
      f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores")
print(f"# of kernels: samples/s / (workers x {kernel_rate:.0f}), the MLP step alone "
      f"({step_us:.0f} us for 128 examples, kernel_bench --threads=1)")
print(f"{'':30} {'layout':24} {'samples/s':>10} {'test acc':>9} {'ringwork is':>12} {'of kernels':>11}")
for key, name, layout in rows:
    results = [json.load(open(f)) for f in sorted(glob.glob(f"{work}/{key}.*.json"))]
    if not results:  # Emulated hosts need root.
        why = "(skipped: needs root)" if key in emulated_workers else "(no result)"
        print(f"{name:30} {layout:24} {why:>33}")
        continue
    speed = statistics.median(r["train_samples_per_second"] for r in results)
    accuracy = statistics.median(r["test_accuracy"] for r in results)
    medians[key] = speed
    # An emulated layout with another number of workers than the ringwork row's
    # shares the same cores among them: no like-for-like ratio.
    like_for_like = emulated_workers.get(key, n) == n
    ratio = f"{medians['ringwork'] / speed:>11.2f}x" if like_for_like else f"{'-':>12}"
    share = f"{speed / (kernel_workers[key] * kernel_rate):.0%}" if key in kernel_workers else "-"
    print(f"{name:30} {layout:24} {speed:>10.0f} {accuracy:>9.4f} {ratio} {share:>11}")
PY
