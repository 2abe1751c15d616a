#!/usr/bin/env bash
# Kernel throughput next to the machine's peak (tools/kernel_bench), and the MLP
# training step in PyTorch 1.13 (OpenBLAS, one thread) for comparison.
#
#   bash tools/compare_kernels.sh [--threads=1]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --peers
bazel build -c opt //tools:kernel_bench >&2
bazel-bin/tools/kernel_bench "$@"
OMP_NUM_THREADS=1 /usr/bin/python3 tools/peers/torch_mlp_step.py
