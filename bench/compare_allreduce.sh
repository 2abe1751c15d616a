#!/usr/bin/env bash
# Runs, in one go on this machine, the same all-reduce sweep with Ringwork (shared
# memory, gRPC alone, and gRPC alone with --grpc_bdp_probe), OpenMPI's
# MPI_Allreduce (shared memory, and TCP loopback) and PyTorch 1.13's gloo, and
# prints the times and the ratios (also Ringwork's gRPC paths against MPI over TCP,
# the cross-host comparison). As root it also runs Ringwork on 2 emulated hosts x 2
# workers (scripts/emulated_hosts.sh: shared memory within a host, gRPC across), flat
# ring against hierarchical.
# Every implementation is measured the same way (see bench/allreduce_bench.cc).
#
#   bash bench/compare_allreduce.sh [--num_workers=2] [--max_bytes=67108864] [--runs=5]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
num_workers=2; min_bytes=4; max_bytes=$((64 << 20)); factor=4; runs=5
parse_flags num_workers min_bytes max_bytes factor runs -- "$@"
scripts/setup.sh --peers
bazel build -c opt //bench:allreduce_bench //tools/launch:launch >&2
make_work_dir
mpicc -O2 -o "$work/mpi_allreduce_bench" bench/peers/mpi_allreduce_bench.c
csv="$work/results.csv"
bench_args=(--min_bytes="$min_bytes" --max_bytes="$max_bytes" --factor="$factor" --runs="$runs" --csv)

# One local Ringwork row: its label, then allreduce_bench's extra flags.
ringwork_row() {
  local label=$1; shift
  bazel-bin/tools/launch/launch --num_workers="$num_workers" -- \
    bazel-bin/bench/allreduce_bench "${bench_args[@]}" "$@" --label="$label" 2>/dev/null |
    sed -n 's/^\[worker:0\] //p' | grep -v '^label' >> "$csv"
}
echo "ringwork (shared memory)..." >&2
ringwork_row ringwork-shm
echo "ringwork (gRPC only)..." >&2
ringwork_row ringwork-grpc --transport=grpc
echo "ringwork (gRPC only, bandwidth-delay probe on)..." >&2
ringwork_row ringwork-grpc-probe --transport=grpc --grpc_bdp_probe
if [[ $(id -u) == 0 ]]; then
  for algorithm in ring hierarchical; do
    echo "ringwork (2 emulated hosts x 2 workers, $algorithm)..." >&2
    # A failed emulated run is reported and leaves the other rows to run.
    scripts/emulated_hosts.sh --hosts=2 --workers_per_host=2 --timeout_s=1800 -- \
      bazel-bin/bench/allreduce_bench "${bench_args[@]}" --allreduce_algorithm="$algorithm" \
      --label="ringwork-2x2-$algorithm" 2>/dev/null > "$work/emulated.txt" ||
      echo "the emulated-hosts run ($algorithm) failed: $(tail -n 3 "$work/emulated.txt")" >&2
    sed -n 's/^\[worker:0\] //p' "$work/emulated.txt" | grep '^ringwork' >> "$csv" || true
  done
else
  echo "(not root: no emulated hosts)" >&2
fi
mpi=(mpirun --allow-run-as-root --oversubscribe -np "$num_workers" --mca pml ob1)
echo "MPI (shared memory)..." >&2
"${mpi[@]}" --mca btl self,vader "$work/mpi_allreduce_bench" mpi-shm \
  "$min_bytes" "$max_bytes" "$factor" "$runs" >> "$csv"
echo "MPI (TCP loopback)..." >&2
"${mpi[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo "$work/mpi_allreduce_bench" \
  mpi-tcp "$min_bytes" "$max_bytes" "$factor" "$runs" >> "$csv"
echo "gloo (PyTorch)..." >&2
port=$(bazel-bin/tools/tfconfig localhost --num_workers=1 | sed 's/.*127.0.0.1:\([0-9]*\).*/\1/')
for ((r = num_workers - 1; r >= 0; --r)); do
  RANK=$r WORLD_SIZE=$num_workers MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo \
    OMP_NUM_THREADS=1 /usr/bin/python3 bench/peers/gloo_allreduce_bench.py gloo \
    "$min_bytes" "$max_bytes" "$factor" "$runs" >> "$csv" 2>"$work/gloo$r.log" &
done
wait
/usr/bin/python3 bench/peers/compare_table.py "$csv"
