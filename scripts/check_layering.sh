#!/usr/bin/env bash
# The layers hold by themselves (docs/ARCHITECTURE.md): a dependency that points
# up fails to build with a visibility error. Checked by the test suite with two
# probes, each a throwaway package in the lower layer's folder: kernels on keras,
# runtime on strategy. Bazel only analyses them (--nobuild).
#
#   bash scripts/check_layering.sh     prints its result line; exit 0 when both fail
set -uo pipefail
cd "$(dirname "$0")/.."
ok=0
probe() {  # probe FOLDER DEPENDENCY: a library in FOLDER/layering_probe on DEPENDENCY
  local dir=$1/layering_probe dep=$2 out
  if [[ -e $dir ]]; then echo "  $dir exists already: not touching it" >&2; ok=1; return; fi
  mkdir -p "$dir"
  printf 'cc_library(\n    name = "probe",\n    deps = ["%s"],\n)\n' "$dep" > "$dir/BUILD"
  out=$(bazel build --nobuild "//$dir:probe" 2>&1)
  rm -rf "$dir"
  if grep -q "is not visible from target '//$dir:probe'" <<<"$out"; then
    echo "  //$dir:probe -> $dep: refused (visibility)"
  else
    echo "  //$dir:probe -> $dep: NOT refused:"; tail -n 5 <<<"$out" | sed 's/^/    /'; ok=1
  fi
}
probe kernels //keras
probe runtime //strategy
if [[ $ok == 0 ]]; then echo "//scripts:check_layering PASSED"; else
  echo "//scripts:check_layering FAILED"; fi
exit $ok
