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
  libonnx-dev          # export/: ONNX graphs (onnx_proto + checker, ONNX 1.12)
  openssl              # tests: a self-signed certificate for the services' TLS
  libopenmpi-dev openmpi-bin  # dist/: multi-host allreduce under mpirun
  clang libclang-rt-14-dev libomp-14-dev llvm  # libFuzzer targets (clang needs its OpenMP runtime)
  gnuplot-nox          # ctrain report: PNG charts (docs/launch.md#report)
  python3 python3-pip  # tests: TensorBoard's reader (pip line at the end)
  ccache               # compiler cache: the CI trees and the Python wheel's build tree share it
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: installed ${missing[*]}"
fi
# Python packages (PyPI; pip skips what is installed). PYTHON: the interpreter the package is for.
# Debian's own python3 marks its site-packages externally managed; this script installs into it anyway.
# INSTALL_DEPS_NO_PIP=1 skips them (the Dockerfile: an image that only trains needs none of them).
PYTHON=${PYTHON:-python3}
pip_install() { $SUDO env PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q "$@"; }
if [ "${INSTALL_DEPS_NO_PIP:-0}" != 1 ]; then
  pip_install nanobind scikit-build-core  # build the package: pip install . (pyproject.toml)
  pip_install numpy pytest                # tests/python
  pip_install torch                       # tests/python: .as_torch() and the PyTorch DeepFM peer
  pip_install onnxruntime                 # tests/export: runs the exported ONNX graph
  pip_install tensorboard                 # tests/monitor, tests/launch: EventAccumulator reads the event files
  # tests/python/test_sagemaker_hyperparameters.py: hyperparameters.json as the SageMaker Python SDK (v2)
  # encodes it, read back by the SageMaker training toolkit (test-only; the image needs neither)
  pip_install 'sagemaker<3' sagemaker-training
fi
