#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains the MLP on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with two workers on localhost,
# MultiWorkerMirroredStrategy over the real runtime, then prints the test accuracy.
# Beside them a sidecar evaluator scores each epoch's checkpoint; a backup lets a
# failed run restart (once, here) or a rerun resume where it stopped. Last, it
# writes the job's report page (tools/report) and prints its path.
# Extra flags go to every task, e.g.  bash scripts/main.sh --model=cnn --epochs=2
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
bazel build //tools:train //tools/launch:launch //tools:tfconfig //tools/report:report
work=/tmp/ringwork_main
rm -rf "$work/checkpoints"  # The evaluator stops at a final checkpoint: start afresh.
rm -rf "$work/tensorboard" /tmp/ringwork_metrics.json
mkdir -p "$work"
status=0
bazel-bin/tools/launch/launch --num_workers=2 --evaluator --max_restarts=1 \
  --timeline="$work/timeline.json" -- \
  bazel-bin/tools/train --model=mlp --epochs=5 --global_batch_size=256 \
  --metrics_json=/tmp/ringwork_metrics.json --checkpoint_dir="$work/checkpoints" \
  --backup_dir="$work/backup" --tensorboard_dir="$work/tensorboard" "$@" || status=$?
# The job's page (curves, throughput, step breakdown, all-reduce and cluster
# tables), also for a failed job: whatever its files hold.
bazel-bin/tools/report/report --metrics_json=/tmp/ringwork_metrics.json \
  --tensorboard_dir="$work/tensorboard" --timeline="$work/timeline.json" \
  --output="$work/report.html" --title="Ringwork: MLP on Fashion-MNIST, 2 workers" || true
exit "$status"
