#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs a real 2-worker job on
# localhost. With TF_CONFIG set, validates it and prints the role table instead.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel build //tools:tfconfig //tools/launch:launch //tools:allreduce_bench
if [[ -n "${TF_CONFIG:-}" ]]; then
  exec bazel-bin/tools/tfconfig validate
fi
echo "== The cluster launch generates (one TF_CONFIG per task):"
bazel-bin/tools/tfconfig localhost --num_workers=2 | while read -r tf_config; do
  TF_CONFIG="$tf_config" bazel-bin/tools/tfconfig validate
  echo
done
echo "== A 2-worker all-reduce over shared memory and over gRPC, every element checked:"
for transport in auto grpc; do
  bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/tools/allreduce_bench \
    --transport="$transport" --min_bytes=4 --max_bytes=16M --factor=16 --runs=3
done
