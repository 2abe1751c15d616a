#!/usr/bin/env bash
# Trains each built-in model briefly on 2 local workers with a fixed seed and prints
# its weights fingerprint: a refactoring that should change no number leaves every
# line the same. Run it before and after, and compare the outputs.
#
#   bash scripts/model_fingerprints.sh [--bin=DIR]   # DIR holds train and launch
#                                                    # (default: bazel-bin's)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=""
for arg in "$@"; do
  case "$arg" in
    --bin=*) bin=${arg#--bin=} ;;
    *) echo "model_fingerprints: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin" ]]; then
  bazel build //tools:train //tools/launch:launch >&2
  train=bazel-bin/tools/train launch=bazel-bin/tools/launch/launch
else
  train=$bin/train launch=$bin/launch
fi
common=(--seed=7 --intra_op_threads=1 --inter_op_threads=1 --global_batch_size=128
        --verbose=0)
run() {  # NAME FLAGS...
  local name=$1; shift
  local out
  out=$("$launch" --num_workers=2 -- "$train" "${common[@]}" "$@" 2>&1) || {
    echo "$out" | tail -20 >&2; echo "model_fingerprints: $name failed" >&2; exit 1; }
  local all fp
  all=$(grep -o 'weights fingerprint [0-9a-f]*' <<<"$out" || true)
  fp=$(sort -u <<<"$all")
  [[ $(grep -c . <<<"$all") -eq 2 && $(wc -l <<<"$fp") -eq 1 ]] || { echo "model_fingerprints: $name: replicas differ: $fp" >&2; exit 1; }
  printf '%-10s %s\n' "$name" "${fp#weights fingerprint }"
}
run mlp --model=mlp --epochs=2 --validate_each_epoch
run mlp_steps --model=mlp --epochs=2 --steps_per_epoch=60 --early_stopping_patience=1
run cnn --model=cnn --epochs=1 --steps_per_epoch=30
run resnet --model=resnet --epochs=1 --steps_per_epoch=6
run resnet_sbn --model=resnet --sync_batch_norm --epochs=1 --steps_per_epoch=4
run wide_deep --model=wide_deep --dataset=synthetic_clicks --clicks_examples=20000 --epochs=2
