#!/usr/bin/env bash
# The hierarchical all-reduce across emulated hosts (scripts/emulated_hosts.sh:
# network namespaces on a bridge, each with a private /dev/shm that only its own
# workers share, so workers on one host talk shared memory and across hosts gRPC):
#  - 2 hosts x 2 workers, forced: every element of every size is right on every rank
#    (integer-valued data: the result equals the flat ring's exactly), and the links
#    are shm within a host and gRPC across;
#  - 3 hosts x 2 workers, automatic choice: large sizes pick it, and are right;
#  - 3 hosts x 2 workers, all-gather: every size goes across hosts first and is right;
#  - training on 2 hosts x 2 workers ends with the same weights on every worker
#    (an MLP with the hierarchical all-reduce; Wide & Deep, whose sparse gradients
#    travel by the hierarchical all-gather).
# Needs root; says so and passes without running when not root (CI runs as root).
#
#   tests/hierarchical_netns_test.sh EMULATED_HOSTS ALLREDUCE_BENCH TRAIN
set -uo pipefail
hosts_sh=$1 bench=$2 train=$3
if [[ $(id -u) != 0 ]]; then
  echo "skipped: emulating hosts needs root (run the suite as root)"
  exit 0
fi
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# 1. 2 x 2, forced.
if ! "$hosts_sh" --hosts=2 --workers_per_host=2 --timeout_s=240 -- "$bench" --runs=1 \
    --min_bytes=4 --max_bytes=4M --factor=16 --allreduce_algorithm=hierarchical > "$out" 2>&1; then
  fail "2x2 forced hierarchical: a worker failed"; tail -n 20 "$out"
fi
rows=$(grep -cE '^\[worker:0\] +[0-9]+ +[0-9]+ +hierarchical ' "$out")
[[ $rows == 6 ]] || fail "2x2: expected 6 sizes run hierarchically, got $rows"
if grep -E '^\[worker:0\] +[0-9]+ ' "$out" | awk '{ if ($NF != 0) bad = 1 } END { exit bad }'; then :; else
  fail "2x2: wrong elements"; grep -E '^\[worker:0\] +[0-9]+ ' "$out"
fi
grep -q 'joined the ring: rank 0 of 4; links: worker:1 ([0-9.]*:2223) shm, worker:2 ([0-9.]*:2222) grpc, worker:3 ([0-9.]*:2223) grpc; 2 hosts x 2 workers' "$out" ||
  fail "2x2: worker:0 should reach worker:1 by shared memory and the other host by gRPC"

# 2. 3 x 2, automatic: small sizes by recursive doubling, large ones hierarchical.
if ! "$hosts_sh" --hosts=3 --workers_per_host=2 --timeout_s=240 -- "$bench" --runs=1 \
    --min_bytes=1K --max_bytes=4M --factor=64 > "$out" 2>&1; then
  fail "3x2 automatic: a worker failed"; tail -n 20 "$out"
fi
grep -qE '^\[worker:0\] +1024 +[0-9]+ +recursive_doubling ' "$out" || fail "3x2: 1 KiB should use recursive doubling"
grep -qE '^\[worker:0\] +4194304 +[0-9]+ +hierarchical ' "$out" || fail "3x2: 4 MiB should be hierarchical"
if grep -E '^\[worker:0\] +[0-9]+ ' "$out" | awk '{ if ($NF != 0) bad = 1 } END { exit bad }'; then :; else
  fail "3x2: wrong elements"; grep -E '^\[worker:0\] +[0-9]+ ' "$out"
fi
grep -q '3 hosts x 2 workers' "$out" || fail "3x2: the topology was not recognised"

# 3. Training on 2 x 2, hierarchical: the same weights everywhere.
if ! "$hosts_sh" --hosts=2 --workers_per_host=2 --timeout_s=300 -- "$train" --dataset=synthetic \
    --epochs=1 --steps_per_epoch=30 --global_batch_size=128 --allreduce_algorithm=hierarchical \
    --verbose=0 > "$out" 2>&1; then
  fail "2x2 training: a worker failed"; tail -n 20 "$out"
fi
prints=$(grep -o 'weights fingerprint [0-9a-f]*' "$out" | sort | uniq -c)
count=$(grep -c 'weights fingerprint' "$out")
distinct=$(grep -o 'weights fingerprint [0-9a-f]*' "$out" | sort -u | wc -l)
[[ $count == 4 && $distinct == 1 ]] || fail "2x2 training: expected one fingerprint on 4 workers: $prints"
[[ $(grep -c '2 hosts x 2 workers' "$out") == 4 ]] || fail "2x2 training: the topology was not recognised"
! grep -q 'hierarchical.*use the ring\|degenerates' "$out" || fail "2x2 training: the hierarchical all-reduce did not run"

# 4. All-gather on 3 x 2, automatic: hierarchical at every size, every element right.
if ! "$hosts_sh" --hosts=3 --workers_per_host=2 --timeout_s=240 -- "$bench" --runs=1 \
    --collective=allgather --min_bytes=64 --max_bytes=4M --factor=16 > "$out" 2>&1; then
  fail "3x2 all-gather: a worker failed"; tail -n 20 "$out"
fi
rows=$(grep -cE '^\[worker:0\] +[0-9]+ +[0-9]+ +hierarchical ' "$out")
[[ $rows == 5 ]] || fail "3x2 all-gather: expected 5 sizes gathered hierarchically, got $rows"
if grep -E '^\[worker:0\] +[0-9]+ ' "$out" | awk '{ if ($NF != 0) bad = 1 } END { exit bad }'; then :; else
  fail "3x2 all-gather: wrong elements"; grep -E '^\[worker:0\] +[0-9]+ ' "$out"
fi

# 5. Wide & Deep on 2 x 2: sparse gradients by the hierarchical all-gather.
if ! "$hosts_sh" --hosts=2 --workers_per_host=2 --timeout_s=300 -- "$train" --model=wide_deep \
    --dataset=synthetic_clicks --clicks_examples=20000 --epochs=1 --steps_per_epoch=30 \
    --verbose=0 > "$out" 2>&1; then
  fail "2x2 Wide & Deep: a worker failed"; tail -n 20 "$out"
fi
count=$(grep -c 'weights fingerprint' "$out")
distinct=$(grep -o 'weights fingerprint [0-9a-f]*' "$out" | sort -u | wc -l)
[[ $count == 4 && $distinct == 1 ]] || fail "2x2 Wide & Deep: expected one fingerprint on 4 workers"

if [[ $failures == 0 ]]; then echo "all hierarchical checks passed"; fi
exit $((failures > 0))
