#!/usr/bin/env bash
# The same training job (MLP on Fashion-MNIST, Adam, global batch 256) with
# Ringwork's train and with PyTorch 1.13 DDP over gloo, N workers on this machine,
# one thread each; prints samples/s and test accuracy side by side.
#
#   bash tools/compare_training.sh [--num_workers=2] [--epochs=5]
set -euo pipefail
cd "$(dirname "$0")/.."
num_workers=2; epochs=5
for arg in "$@"; do
  case "$arg" in
    --num_workers=*) num_workers=${arg#*=};;
    --epochs=*) epochs=${arg#*=};;
    *) echo "unknown argument $arg" >&2; exit 2;;
  esac
done
tools/setup.sh --peers
bazel build -c opt //tools:train //tools/launch:launch //tools:tfconfig >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train \
  --epochs="$epochs" --global_batch_size=256 --intra_op_threads=1 --verbose=0 \
  --metrics_json="$work/ringwork.json" >&2
port=$(bazel-bin/tools/tfconfig localhost --num_workers=1 | sed 's/.*127.0.0.1:\([0-9]*\).*/\1/')
for ((r = num_workers - 1; r >= 0; --r)); do
  RANK=$r WORLD_SIZE=$num_workers MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo \
    OMP_NUM_THREADS=1 /usr/bin/python3 tools/peers/torch_ddp_train.py --epochs="$epochs" \
    --global_batch_size=256 > "$work/torch$r.json" &
done
wait
/usr/bin/python3 - "$work/ringwork.json" "$work/torch0.json" <<'PY'
import json, sys
ringwork, torch = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"# MLP 784-256-128-10 on Fashion-MNIST, Adam, global batch 256, "
      f"{ringwork['num_workers']} workers x 1 thread, {ringwork['epochs']} epochs")
print(f"{'':28} {'train samples/s':>16} {'test accuracy':>14}")
print(f"{'ringwork':28} {ringwork['train_samples_per_second']:>16.0f} {ringwork['test_accuracy']:>14.4f}")
print(f"{torch['framework']:28} {torch['train_samples_per_second']:>16.0f} {torch['test_accuracy']:>14.4f}")
print(f"ringwork / pytorch: {ringwork['train_samples_per_second'] / torch['train_samples_per_second']:.2f}x samples/s")
PY
