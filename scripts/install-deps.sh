#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of ctrain from Debian's packages.
# Idempotent; run as root (or via sudo). Safe to call on every CI run.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  zlib1g-dev           # GZIP/ZLIB TFRecord compression
  libdnnl-dev          # oneDNN: fully connected GEMMs (the seed's MKL-DNN)
  libcli11-dev         # command line
  nlohmann-json3-dev   # --json output, JSON config files, metrics
  libtomlplusplus-dev  # TOML config files
  libgtest-dev libgmock-dev  # unit tests (via CTest)
  libbenchmark-dev     # bench/ micro benchmarks
  libprotobuf-dev protobuf-compiler  # service/ messages; interop tests check our tf.train.Example bytes with it
  libgrpc++-dev protobuf-compiler-grpc  # service/: data service and parameter servers (gRPC C++)
  libzstd-dev          # per-batch zstd on the data-service stream
  openssl              # tests: a self-signed certificate for the services' TLS
  libopenmpi-dev openmpi-bin  # dist/: multi-host allreduce under mpirun
  clang libclang-rt-14-dev libomp-14-dev llvm  # libFuzzer targets (clang needs its OpenMP runtime)
  ccache               # compiler cache: the CI trees and the Python wheel's build tree share it
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: installed ${missing[*]}"
fi

# Python (PyPI; pip skips what is installed). PYTHON: the interpreter the package is for.
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -q nanobind scikit-build-core  # build the package: pip install . (pyproject.toml)
"$PYTHON" -m pip install -q numpy pytest                # tests/python
"$PYTHON" -m pip install -q torch                       # tests/python: .as_torch() and the PyTorch DeepFM peer
