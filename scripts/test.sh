#!/usr/bin/env bash
# The full test suite: installs what is missing (what the suite needs besides
# building), builds, runs every test and the source checks, and ends with the
# line "N passed, N failed". Exit status 0 only when all passed.
#
#   sudo scripts/test.sh [extra bazel flags, e.g. --config=asan]
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --suite || exit $?
output=$(mktemp)
trap 'rm -f "$output"' EXIT
bazel test --keep_going --test_summary=short "$@" //... 2>&1 | tee "$output"

# Embedding: an app in another Bazel workspace that depends on @ringwork builds and
# runs. Counted as one more test target.
embed_status=PASSED
if ! (cd examples/external_workspace && bazel build //:app && ./bazel-bin/app &&
      bazel shutdown); then
  embed_status=FAILED
fi
echo "//examples/external_workspace:app $embed_status" >> "$output"
# The rules that hold by themselves: formatting, sizes, the layers' direction.
scripts/check_sources.sh all | tee -a "$output"
scripts/check_layering.sh | tee -a "$output"
scripts/count_test_results.sh "$output"
