#!/usr/bin/env bash
# The source rules that hold by themselves, checked by the test suite
# (scripts/test.sh); each prints its result line and the offenders:
#
#   bash scripts/check_sources.sh format     C, C++ files as clang-format writes them
#                                            (.clang-format; fix: clang-format -i FILE)
#   bash scripts/check_sources.sh size       no source file over 600 lines; no
#                                            function over 150 lines in keras/ and
#                                            strategy/ (Universal Ctags' end lines)
#   bash scripts/check_sources.sh history    no issue numbers or numbered sessions
#                                            in code and docs (the dated history in
#                                            docs/performance/history/ keeps them)
#   bash scripts/check_sources.sh all        all three
#
# Exit status 0 when every rule asked for holds.
set -uo pipefail
cd "$(dirname "$0")/.."
max_file_lines=600
max_function_lines=150

check_format() {
  local bad=()
  while IFS= read -r f; do
    clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
  done < <(git ls-files '*.cc' '*.h' '*.c' ':!third_party')
  for f in "${bad[@]}"; do echo "  not formatted: $f (clang-format -i $f)"; done
  [[ ${#bad[@]} -eq 0 ]]
}

check_size() {
  local ok=0
  while read -r lines f; do
    [[ $f == total ]] && continue
    if ((lines > max_file_lines)); then
      echo "  $f: $lines lines (at most $max_file_lines: split it by concept)"; ok=1
    fi
  done < <(git ls-files '*.cc' '*.h' '*.c' '*.sh' '*.py' '*.proto' | xargs wc -l)
  # Functions (and lambdas) with their first and last lines, as ctags sees them.
  while read -r file first last name; do
    if ((last - first + 1 > max_function_lines)); then
      echo "  $file:$first: $name is $((last - first + 1)) lines (at most $max_function_lines)"
      ok=1
    fi
  done < <(ctags -x --_xformat='%{input} %{line} %{end} %{scope}::%{name}' --kinds-c++=f \
             --languages=C++ --map-C++=+.h -R keras strategy)
  return $ok
}

check_history() {
  # "issue 12", "issue #12", "the ninth session", "work period 3": the history's words.
  local pattern='[Ii]ssue ?#?[0-9]+|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth) (session|work period)|\b(session|work period) [0-9]+'
  local found
  found=$(git grep -n -E "$pattern" -- ':!docs/performance/history' ':!scripts/check_sources.sh')
  [[ -z $found ]] || { sed 's/^/  /' <<<"$found"; return 1; }
}

run() {  # run NAME: one result line, counted by scripts/count_test_results.sh
  if "check_$1"; then echo "//scripts:check_sources_$1 PASSED"; else
    echo "//scripts:check_sources_$1 FAILED"; return 1; fi
}

case "${1:-all}" in
  format|size|history) run "$1" ;;
  all) status=0; for c in format size history; do run "$c" || status=1; done; exit $status ;;
  *) echo "check_sources.sh: expected format, size, history or all, got $1" >&2; exit 2 ;;
esac
