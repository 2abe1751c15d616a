#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (ASan + UBSan) and runs each for
# a bounded time from its seed corpus. Exit status 0 only if none crashed, leaked,
# hit undefined behaviour or refused an input without saying why.
#
#   tests/fuzz/run_fuzzers.sh [--seconds=20] [--out=DIR]
# Inside `bazel test` it runs from the runfiles tree, whose sources it compiles.
set -uo pipefail
seconds=20
out="${TEST_TMPDIR:-/tmp}/ringwork-fuzz"
for arg in "$@"; do
  case "$arg" in
    --seconds=*) seconds="${arg#*=}" ;;
    --out=*) out="${arg#*=}" ;;
    *) echo "run_fuzzers: unknown argument $arg" >&2; exit 2 ;;
  esac
done
root=$(pwd)
[[ -f "$root/tests/fuzz/tf_config_fuzzer.cc" ]] || root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
mkdir -p "$out"
clang=$(command -v clang++ || true)
if [[ -z "$clang" ]]; then
  echo "run_fuzzers: clang++ is missing; scripts/setup.sh installs clang and libclang-rt-14-dev" >&2
  exit 2
fi
absl="-labsl_statusor -labsl_status -labsl_cord -labsl_cordz_info -labsl_cord_internal
  -labsl_cordz_functions -labsl_cordz_handle -labsl_exponential_biased -labsl_str_format_internal
  -labsl_strerror -labsl_synchronization -labsl_graphcycles_internal -labsl_stacktrace
  -labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal -labsl_malloc_internal
  -labsl_time -labsl_civil_time -labsl_time_zone -labsl_strings -labsl_strings_internal
  -labsl_int128 -labsl_bad_optional_access -labsl_bad_variant_access -labsl_throw_delegate
  -labsl_base -labsl_spinlock_wait -labsl_raw_logging_internal -labsl_log_severity -lpthread"
flags="-std=c++17 -O1 -g -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"

declare -A sources=(
  [tf_config]="runtime/config/tf_config.cc runtime/config/cluster_config.cc runtime/config/host_port.cc base/logging.cc"
  [frame_header]="runtime/transport/frame.cc tensor/dtype.cc tensor/reduce.cc base/logging.cc"
  [checkpoint_reader]="checkpoint/checkpoint_file.cc base/crc32c.cc base/crash_points.cc base/exit_code.cc base/logging.cc tensor/dtype.cc"
  [event_file]="observability/event_file.cc io/proto_wire.cc io/record_file.cc base/crc32c.cc"
)
failed=0
for name in tf_config frame_header checkpoint_reader event_file; do
  binary="$out/${name}_fuzzer"
  # shellcheck disable=SC2086
  if ! "$clang" $flags "tests/fuzz/${name}_fuzzer.cc" ${sources[$name]} -o "$binary" $absl \
       2> "$out/$name.build.log"; then
    echo "FUZZ $name: build failed"; cat "$out/$name.build.log"; failed=1; continue
  fi
  corpus="$out/$name.corpus"
  rm -rf "$corpus"; mkdir -p "$corpus"
  # New inputs go to a scratch corpus; the seeds in the repository stay as they are.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/$name-" "$corpus" "tests/fuzz/corpus/$name" \
    > "$out/$name.log" 2>&1
  status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$name.log" | grep -o '[0-9]*$')
  if [[ $status -ne 0 ]]; then
    echo "FUZZ $name: FAILED after ${runs:-?} runs (exit $status)"; tail -40 "$out/$name.log"; failed=1
  else
    echo "FUZZ $name: ${runs:-?} runs in ${seconds} s, no failure"
  fi
done
exit $failed
