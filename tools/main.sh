#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains the MLP on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with two workers on localhost,
# MultiWorkerMirroredStrategy over the real runtime, then prints the test accuracy.
# Extra flags go to every worker, e.g.  bash tools/main.sh --model=cnn --epochs=2
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel build //tools:train //tools/launch:launch //tools:tfconfig
exec bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/tools/train \
  --model=mlp --epochs=5 --global_batch_size=256 --metrics_json=/tmp/ringwork_metrics.json "$@"
