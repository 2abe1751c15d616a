#!/usr/bin/env bash
# Installs the Debian packages Ringwork needs, when missing. Idempotent and quiet
# when everything is present. Run as root (or with sudo) on Debian 12.
#
#   scripts/setup.sh           what building and running need: compilers, Bazel,
#                              gRPC, oneDNN, Fashion-MNIST, ...
#   scripts/setup.sh --suite   also what only the test suite needs: a real Slurm
#                              (slurm-wlm, munge), Chromium (the report page),
#                              clang's sanitizers (the fuzzers), iproute2 (emulated
#                              hosts), GoogleTest, PyYAML, protobuf and crcmod
#                              (an independent TFRecord writer), Pillow and
#                              NumPy (independent PNG/JPEG and .npz writers),
#                              clang-format and
#                              universal-ctags (the source checks), python3-onnx
#                              (onnx.checker), python3-h5py (an independent
#                              .weights.h5 reader), python3-torch (PyTorch's LSTM
#                              and GRU, an independent reference), cmake (an app
#                              built against the installed .deb), openssh-server
#                              (sshd on emulated hosts for launch --hosts; not
#                              started as a service), and from npm in
#                              /opt/ringwork-npm
#                              @tensorflow/tfjs 4.22 (Keras' semantics) and
#                              onnxruntime-node (ONNX Runtime's CPU library), run
#                              by the machine's node
#   scripts/setup.sh --peers   also the peers the benchmarks compare against
#                              (Open MPI, PyTorch 1.13 with gloo); bench/ asks for it
set -euo pipefail

packages=(
  build-essential pkg-config
  bazel-bootstrap bazel-platforms bazel-rules-java
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libdnnl-dev catch2 libabsl-dev zlib1g-dev libpng-dev libjpeg-dev libzip-dev
  libhdf5-dev
  dataset-fashion-mnist
  openssl libssl-dev
)
suite=0
for arg in "$@"; do
  case "$arg" in
    --suite)
      suite=1
      packages+=(slurm-wlm munge chromium clang libclang-rt-14-dev iproute2 libgtest-dev
                 python3-yaml python3-protobuf python3-crcmod python3-pil python3-numpy clang-format
                 universal-ctags python3-onnx python3-h5py python3-torch cmake openssh-server) ;;
    --peers)
      # libopenblas0-pthread: without it PyTorch falls back to the reference BLAS
      # (about 5x slower here), which would flatter Ringwork.
      # python3-pil: the image pipeline's peer (PyTorch DataLoader decoding with PIL).
      packages+=(openmpi-bin libopenmpi-dev python3-torch libgloo-dev libopenblas0-pthread
                 python3-pil) ;;
    *) echo "setup: unknown argument $arg (expected --suite or --peers)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}" >&2
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: these Debian packages are missing and installing them needs root:" >&2
    echo "       sudo $0 $*" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # No service starts on install (sshd, munge, slurmd: the tests start their own,
  # on addresses they make): policy-rc.d's 101 tells invoke-rc.d not to, unless
  # the machine has a policy of its own.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    trap 'rm -f "$policy"' EXIT
    trap 'exit 130' INT TERM
    printf '#!/bin/sh\n# scripts/setup.sh: no service starts while it installs.\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  # Nor at the next boot: sshd serves only the emulated hosts the suite makes.
  if [[ " ${missing[*]} " == *" openssh-server "* ]] && command -v systemctl > /dev/null; then
    systemctl disable ssh.service > /dev/null 2>&1 || true
  fi
  echo "setup: done" >&2
fi

# The reference for Keras' semantics (keras/keras_reference_test) and ONNX Runtime
# (keras/onnx_export_test), without install scripts: they would download binaries
# (onnxruntime-node's CPU library ships inside the package).
npm_dir=/opt/ringwork-npm
if [[ $suite -eq 1 && ( ! -f $npm_dir/node_modules/@tensorflow/tfjs/package.json ||
                        ! -f $npm_dir/node_modules/onnxruntime-node/package.json ) ]]; then
  if ! command -v npm >/dev/null; then
    echo "setup: the suite needs the machine's node and npm (tfjs, onnxruntime-node)" >&2
    exit 2
  fi
  echo "setup: installing @tensorflow/tfjs 4.22 and onnxruntime-node 1.31 in $npm_dir" >&2
  mkdir -p "$npm_dir"
  (cd "$npm_dir" && npm install --ignore-scripts --no-audit --no-fund --silent \
    @tensorflow/tfjs@4.22.0 onnxruntime-node@1.31.1 >/dev/null)
fi
