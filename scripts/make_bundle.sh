#!/usr/bin/env bash
# Packs Ringwork's benchmark binaries with the shared libraries they load from
# Debian's packages (gRPC, protobuf, oneDNN, Abseil, OpenSSL; not the C library),
# Fashion-MNIST and, where installed, iproute2's `ip` with its libraries, into one
# .tar.xz: what bench/scaling_bench.sh needs on a machine that has none of these
# packages (the 16-core machine that is sometimes lent). Unpack it anywhere and
# run bench/scaling_bench.sh --bundle=DIR.
#
#   bash scripts/make_bundle.sh OUT.tar.xz
#
# Layout: bin/ (train, launch, tfconfig, kernel_bench, allreduce_bench, stripped),
# lib/ (their libraries), fashion-mnist/, ip/ (ip and its libraries, optional).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ne 1 ]]; then echo "usage: make_bundle.sh OUT.tar.xz" >&2; exit 2; fi
out=$(realpath -m "$1")
bazel build -c opt //tools:train //tools/launch:launch //tools:tfconfig //bench:kernel_bench \
  //bench:allreduce_bench >&2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/ip"
# The C library and the loader stay the target machine's (a newer glibc runs
# programs built against an older one; a copied one would not match its loader).
system_only='/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64)\.so'
copy_libraries() {  # copy_libraries BINARY DEST: its non-system libraries into DEST
  ldd "$1" | awk '$3 ~ /^\// {print $3}' | grep -Ev "$system_only" | xargs -r cp -L -t "$2"
}
for binary in tools/train tools/launch/launch tools/tfconfig bench/kernel_bench bench/allreduce_bench; do
  cp "bazel-bin/$binary" "$stage/bin/"
  chmod u+w "$stage/bin/$(basename "$binary")"
  strip "$stage/bin/$(basename "$binary")"
  copy_libraries "bazel-bin/$binary" "$stage/lib"
done
cp -r /usr/share/datasets/fashion-mnist "$stage/fashion-mnist"
if command -v ip > /dev/null; then
  cp "$(command -v ip)" "$stage/ip/"
  copy_libraries "$(command -v ip)" "$stage/ip"
fi
tar -C "$stage" -cJf "$out" .
echo "$out: $(du -h "$out" | cut -f1)" >&2
