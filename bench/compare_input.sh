#!/usr/bin/env bash
# Input pipelines, measured: Ringwork's against PyTorch 1.13's DataLoader, and what
# streaming files costs training against data held in memory. Prints three tables:
#
#   1. images/s of an image folder pipeline without training: Fashion-MNIST as
#      60000 PNG files (bench/data/fashion_mnist_png.py, Pillow), decoded, resized
#      (the "64x64" row: to 64x64 RGB), mirrored at random and batched by 256:
#      bench/input_bench (the worker's cores as decoding threads) against
#      bench/peers/torch_image_loader.py (DataLoader, num_workers = cores, PIL);
#      the median over --passes after the first; ratio > 1: Ringwork is faster.
#   2. train, --num_workers workers, the same model on Fashion-MNIST from memory
#      (--dataset=fashion_mnist), from TFRecord files
#      (bench/data/fashion_mnist_tfrecord.py, 8 shards) and from the PNG folders:
#      median samples/s over --runs, the median share of each step spent waiting
#      for data, test accuracy; --models=mlp,cnn.
#
#   bash bench/compare_input.sh [--num_workers=2] [--runs=3] [--passes=5]
#       [--models=mlp,cnn] [--mlp_epochs=3] [--cnn_epochs=1]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
num_workers=2; runs=3; passes=5; models=mlp,cnn; mlp_epochs=3; cnn_epochs=1
parse_flags num_workers runs passes models mlp_epochs cnn_epochs -- "$@"
scripts/setup.sh --suite --peers
bazel build -c opt //tools:train //tools/launch:launch //bench:input_bench >&2
make_work_dir
echo "writing Fashion-MNIST as PNG folders and TFRecord shards in $work..." >&2
/usr/bin/python3 bench/data/fashion_mnist_png.py "$work/png" >&2
/usr/bin/python3 bench/data/fashion_mnist_tfrecord.py "$work/tfrecord" >&2

median_line() { sed -n 's/^# median elements\/s.*: \([0-9]*\)$/\1/p' "$1"; }

echo "# 1. An image folder pipeline (decode, resize, random flip, batch 256), no training;"
echo "#    $(nproc) cores; images/s, median of passes 2-$passes"
printf "| %-22s | %14s | %14s | %7s |\n" images ringwork "torch loader" ratio
printf "|%s|%s|%s|%s|\n" ------------------------ ---------------- ---------------- ---------
for case in "28x28 gray:0" "64x64 RGB:64"; do
  name=${case%%:*} size=${case##*:}
  bazel-bin/bench/input_bench --images="$work/png/train" --size="$size" --passes="$passes" \
    > "$work/ringwork_images.txt"
  /usr/bin/python3 bench/peers/torch_image_loader.py "$work/png/train" --size="$size" \
    --passes="$passes" > "$work/torch_images.txt"
  cat "$work/ringwork_images.txt" "$work/torch_images.txt" >&2
  mine=$(median_line "$work/ringwork_images.txt") theirs=$(median_line "$work/torch_images.txt")
  printf "| %-22s | %14s | %14s | %7s |\n" "$name" "$mine" "$theirs" \
    "$(awk -v a="$mine" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
done
echo

# train_runs NAME FLAGS...: --runs runs of train on --num_workers workers, their JSON.
train_runs() {
  local name=$1 run
  shift
  for ((run = 0; run < runs; ++run)); do
    bazel-bin/tools/launch/launch --num_workers="$num_workers" -- bazel-bin/tools/train \
      --verbose=0 "$@" --metrics_json="$work/$name.$run.json" >&2
  done
}

echo "# 2. Training on $num_workers workers from memory and from files; median of $runs runs"
printf "| %-6s | %-9s | %10s | %7s | %9s | %8s |\n" model data samples/s "vs mem" "data wait" accuracy
printf "|%s|%s|%s|%s|%s|%s|\n" -------- ----------- ------------ --------- ----------- ----------
IFS=, read -ra model_list <<< "$models"
for model in "${model_list[@]}"; do
  case "$model" in
    mlp) epochs=$mlp_epochs;;
    cnn) epochs=$cnn_epochs;;
    *) echo "--models: $model: expected mlp or cnn" >&2; exit 2;;
  esac
  common=(--model="$model" --epochs="$epochs")
  train_runs "$model.memory" "${common[@]}"
  train_runs "$model.tfrecord" "${common[@]}" --train_data="tfrecord:$work/tfrecord/train-*" \
    --test_data="tfrecord:$work/tfrecord/test-*" --targets=label --features=image:28x28x1 \
    --num_classes=10
  train_runs "$model.png" "${common[@]}" --train_data="images:$work/png/train" \
    --test_data="images:$work/png/test"
  /usr/bin/python3 - "$work" "$model" "$runs" <<'PY'
import json, statistics, sys
work, model, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(data):
    return [json.load(open(f"{work}/{model}.{data}.{r}.json")) for r in range(runs)]
memory = statistics.median(j["train_samples_per_second"] for j in load("memory"))
for data in ("memory", "tfrecord", "png"):
    js = load(data)
    rate = statistics.median(j["train_samples_per_second"] for j in js)
    wait = statistics.median(j["step_breakdown"]["data_wait"] for j in js)
    acc = statistics.median(j["test_accuracy"] for j in js)
    print(f"| {model:<6} | {data:<9} | {rate:>10.0f} | {rate / memory:>6.2f}x | "
          f"{wait * 100:>8.1f}% | {acc:>8.4f} |")
PY
done
