#!/usr/bin/env bash
# Writes the flag reference (docs/FLAGS.md) from the flag definitions themselves:
# each user binary's --helpmarkdown. The suite fails when the file is stale
# (//docs:flags_doc_test runs this with --check).
#
#   bash scripts/flag_reference.sh            # builds the binaries, rewrites docs/FLAGS.md
#   scripts/flag_reference.sh --check DOC TRAIN LAUNCH TFCONFIG REPORT MODEL
#                                             # compares DOC with what these binaries say
set -uo pipefail
generate() {  # generate TRAIN LAUNCH TFCONFIG REPORT MODEL
  cat <<'HEAD'
# Flags

Every flag of the binaries users run, with its default and environment variable.
A flag given on the command line overrides its environment variable; apps that embed
the strategy (`ringwork.h`) and parse no flags read the same variables, and a value
set in code (`MultiWorkerMirroredStrategy::Options`) overrides both.

Generated from the flag definitions by `bash scripts/flag_reference.sh`; the test
suite fails when this file is stale. Do not edit it by hand.

HEAD
  local names=(train launch tfconfig report model) i=0
  for binary in "$@"; do
    # A clean environment: no TF_CONFIG or RINGWORK_* of this shell in the defaults.
    env -i PATH=/usr/bin:/bin "$binary" --helpmarkdown || {
      echo "flag_reference: $binary --helpmarkdown failed" >&2; return 1; }
    ((++i < $#)) && echo
  done
  return 0
}
if [[ ${1:-} == --check ]]; then
  [[ $# -eq 7 ]] || { echo "usage: flag_reference.sh --check DOC TRAIN LAUNCH TFCONFIG REPORT MODEL" >&2; exit 2; }
  doc=$2; shift 2
  if ! diff -u "$doc" <(generate "$@"); then
    echo "docs/FLAGS.md is stale: run bash scripts/flag_reference.sh and commit it" >&2
    exit 1
  fi
  echo "docs/FLAGS.md matches the flag definitions"
  exit 0
fi
cd "$(dirname "$0")/.."
bazel build //tools:train //tools/launch:launch //tools:tfconfig //tools/report:report //tools:model >&2 || exit 1
generate bazel-bin/tools/train bazel-bin/tools/launch/launch bazel-bin/tools/tfconfig \
  bazel-bin/tools/report/report bazel-bin/tools/model > docs/FLAGS.md || exit 1
echo "wrote docs/FLAGS.md" >&2
