#!/bin/bash
# Elastic training's cost: the same job uninterrupted and with one of its
# workers SIGKILLed mid-training, and with that worker restarted (launch
# --max_restarts=1: it joins the running job back), run by run, as a table.
#
#   bash bench/compare_elastic.sh [--runs=2] [--workers=4] [--epochs=10] [--kill_after_s=5] \
#     [--elastic_batch=global]
#
# Each run: launch --num_workers=W --elastic -- train --model=mlp --epochs=E
# --min_workers=2 --elastic_batch=B (Fashion-MNIST). Needs bazel-bin/tools/{train,launch/launch} built.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=2 workers=4 epochs=10 kill_after_s=5 elastic_batch=global
parse_flags runs workers epochs kill_after_s elastic_batch -- "$@"
launch=bazel-bin/tools/launch/launch train=bazel-bin/tools/train
for binary in "$launch" "$train"; do
  [[ -x "$binary" ]] || { echo "compare_elastic.sh: build $binary first (bazel build //tools/...)" >&2; exit 2; }
done
make_work_dir

# One job; with a victim, SIGKILLs the second of its train processes after the delay.
run_job() {  # $1: kill (yes/no/restart); prints "exit wall accuracy workers generations steps_lost"
  local start end code restarts=0
  [[ "$1" == restart ]] && restarts=1
  start=$(date +%s.%N)
  "$launch" --num_workers="$workers" --elastic --max_restarts="$restarts" -- "$train" --model=mlp --epochs="$epochs" \
    --min_workers=2 --elastic_batch="$elastic_batch" --verbose=0 --metrics_json="$work/m.json" > "$work/log" 2>&1 &
  local job=$!
  if [[ "$1" != no ]]; then
    sleep "$kill_after_s"
    local victim
    victim=$(pgrep -f -- "$train --model=mlp" | sed -n 2p || true)
    [[ -n "$victim" ]] && kill -9 "$victim"
  fi
  code=0; wait "$job" || code=$?
  end=$(date +%s.%N)
  python3 - "$work/m.json" "$code" "$(echo "$end - $start" | bc)" "$(grep -c 'generation 1:' "$work/log" || true)" <<'PY'
import json, sys
path, code, wall, lines = sys.argv[1:]
try:
    j = json.load(open(path))
    print(f"{code} | {float(wall):.1f} s | {j['test_accuracy']:.4f} | {j['num_workers']} | "
          f"{j['generations']} | {j['steps_lost']} | {lines}")
except (OSError, ValueError, KeyError) as e:
    print(f"{code} | {float(wall):.1f} s | (no metrics: {e}) | | | | {lines}")
PY
}

echo "| run | exit | wall | test accuracy | workers at the end | generations | steps_lost | generation lines |"
echo "|---|---|---|---|---|---|---|---|"
for ((r = 1; r <= runs; ++r)); do
  echo "| uninterrupted, $r | $(run_job no) |"
  echo "| one killed after ${kill_after_s} s, $r | $(run_job yes) |"
  echo "| one killed after ${kill_after_s} s and restarted (--max_restarts=1), $r | $(run_job restart) |"
done
