#!/usr/bin/env bash
# Turns one `bazel test --test_summary=short` run into the line
# "N passed, N failed", counted from the real results: a Catch2 test binary
# contributes its test cases (from the summary line in its test.log); any other
# test target counts as one. A target that failed to build, timed out or crashed
# after its last test case counts as one more failure.
#
#   usage: scripts/count_test_results.sh BAZEL_OUTPUT_FILE
set -uo pipefail
summary_file=$1
testlogs=$(bazel info bazel-testlogs 2>/dev/null)
passed=0
failed=0
while read -r target status; do
  log="$testlogs/${target#//}"
  log="${log/://}/test.log"
  cases_passed=""
  cases_failed=""
  if [[ -f "$log" ]]; then
    if line=$(grep -E '^All tests passed \(' "$log" | tail -1) && [[ -n "$line" ]]; then
      cases_passed=$(sed -E 's/.* in ([0-9]+) test cases?\)/\1/' <<<"$line")
      cases_failed=0
    elif line=$(grep -E '^test cases: ' "$log" | tail -1) && [[ -n "$line" ]]; then
      cases_passed=$(sed -nE 's/.*\| *([0-9]+) passed.*/\1/p' <<<"$line")
      cases_failed=$(sed -nE 's/.*\| *([0-9]+) failed.*/\1/p' <<<"$line")
      cases_passed=${cases_passed:-0}
      cases_failed=${cases_failed:-0}
    fi
  fi
  if [[ "$status" == PASSED ]]; then
    if [[ -n "$cases_passed" ]]; then
      passed=$((passed + cases_passed))
      failed=$((failed + cases_failed))
    else
      passed=$((passed + 1))
    fi
  else
    if [[ -n "$cases_passed" ]]; then
      passed=$((passed + cases_passed))
      failed=$((failed + cases_failed))
      [[ "$cases_failed" -eq 0 ]] && failed=$((failed + 1))
    else
      failed=$((failed + 1))
    fi
    echo "failed: $target ($status)" >&2
  fi
done < <(sed -nE 's#^(//[^ ]+) +(\(cached\) )?(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE).*#\1 \3#p' "$summary_file" |
         sed -E 's/ FAILED TO BUILD$/ NOT_BUILT/; s/ NO STATUS$/ NOT_RUN/')

echo "$passed passed, $failed failed"
[[ $failed -eq 0 && $passed -gt 0 ]]
