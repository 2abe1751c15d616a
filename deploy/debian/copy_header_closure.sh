#!/usr/bin/env bash
# Copies a header and every header it includes from the workspace (not the
# system's) into a directory, at their workspace paths; generated headers lose
# Bazel's output prefix. Used by library.bzl.
#
#   copy_header_closure.sh CXX ROOT_HEADER BIN_DIR OUT_DIR [compiler flags...]
set -euo pipefail
cxx=$1 root=$2 bin_dir=$3 out=$4
shift 4
dependencies=$(mktemp)
trap 'rm -f "$dependencies"' EXIT
"$cxx" -x c++ -MM -MF "$dependencies" "$@" "$root"
mkdir -p "$out"
# The make rule: "target: first second \" lines; drop the target, split on blanks.
sed -e 's/^[^:]*://' -e 's/\\$//' "$dependencies" | tr -s ' \t' '\n\n' | sed '/^$/d' |
  while read -r header; do
    header=${header#./}
    relative=${header#"$bin_dir"/}
    install -D -m 0644 "$header" "$out/$relative"
  done
