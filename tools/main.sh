#!/usr/bin/env bash
# The main job: installs what is missing, builds, and checks a cluster
# configuration. With TF_CONFIG set, validates it; otherwise generates a 2-worker
# localhost cluster and validates each task's TF_CONFIG.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel build //tools:tfconfig
tfconfig=bazel-bin/tools/tfconfig
if [[ -n "${TF_CONFIG:-}" ]]; then
  exec "$tfconfig" validate
fi
"$tfconfig" localhost --num_workers=2 | while read -r tf_config; do
  TF_CONFIG="$tf_config" "$tfconfig" validate
  echo
done
