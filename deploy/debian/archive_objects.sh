#!/usr/bin/env bash
# Archives objects into a static library, each member named after its path
# (keras/_objs/keras/losses.o -> keras_losses.o), so that objects of one name in
# different packages stay apart (ar x would overwrite one with the other).
# Used by library.bzl.
#
#   archive_objects.sh OUT.a OBJECT...
set -euo pipefail
out=$1
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
members=()
for object in "$@"; do
  # bazel-out/k8-opt/bin/PACKAGE/_objs/TARGET/NAME.pic.o -> PACKAGE_NAME.o
  package=${object#*/bin/}
  package=${package%%/_objs/*}
  name=$(basename "$object")
  name=${name%.pic.o}
  name=${name%.o}
  member="${package//\//_}_$name.o"
  [[ -e "$stage/$member" ]] && member="${package//\//_}_$(basename "$(dirname "$object")")_$name.o"
  cp "$object" "$stage/$member"
  members+=("$member")
done
rm -f "$out"
(cd "$stage" && ar qcsD archive.a "${members[@]}")
mv "$stage/archive.a" "$out"
