#!/usr/bin/env bash
# Batch prediction, Ringwork against ONNX Runtime on the same model: train's MLP
# and CNN on 28x28x1 images, exported by Ringwork (ExportOnnx) and run by ONNX
# Runtime (npm onnxruntime-node, CPU, graph optimizations on), the same intra-op
# threads, one process at a time. Prints a table of median microseconds per
# batch; ratio = ONNX Runtime's time / Ringwork's (> 1: Ringwork is faster).
#
#   bash bench/compare_inference.sh [--threads=1] [--repeats=50] [--batches=1,256]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=1 repeats=50 batches=1,256
for arg in "$@"; do
  case "$arg" in
    --threads=*) threads=${arg#*=} ;;
    --repeats=*) repeats=${arg#*=} ;;
    --batches=*) batches=${arg#*=} ;;
    *) echo "compare_inference: unknown flag $arg" >&2; exit 2 ;;
  esac
done
scripts/setup.sh --suite  # node's onnxruntime-node
bazel build -c opt //bench:predict_bench >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| model | batch | threads | ringwork us | onnxruntime us | ratio |"
echo "|-------|-------|---------|-------------|----------------|-------|"
for model in mlp cnn; do
  for batch in ${batches//,/ }; do
    ours=$(bazel-bin/bench/predict_bench --model="$model" --batch="$batch" --threads="$threads" \
      --repeats="$repeats" --onnx="$work/$model.onnx" 2>/dev/null | awk '{print $5}')
    theirs=$(NODE_PATH=/opt/ringwork-npm/node_modules node bench/peers/onnxruntime_predict.js \
      "$work/$model.onnx" "$batch" "$threads" "$repeats" | awk '{print $4}')
    ratio=$(awk -v a="$theirs" -v b="$ours" 'BEGIN {printf "%.2f", a / b}')
    printf "| %s | %s | %s | %s | %s | %s |\n" "$model" "$batch" "$threads" "$ours" "$theirs" "$ratio"
  done
done
