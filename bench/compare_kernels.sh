#!/usr/bin/env bash
# Kernel throughput next to the machine's peak (bench/kernel_bench), and the MLP
# training step in PyTorch 1.13 (OpenBLAS, one thread) for comparison.
#
#   bash bench/compare_kernels.sh [--threads=1]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --peers
bazel build -c opt //bench:kernel_bench >&2
bazel-bin/bench/kernel_bench "$@"
OMP_NUM_THREADS=1 /usr/bin/python3 bench/peers/torch_mlp_step.py
