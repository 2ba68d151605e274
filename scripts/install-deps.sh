#!/usr/bin/env bash
# Installs ctrain's dependencies from Debian's packages (and, for the tests, PyPI).
#   scripts/install-deps.sh         everything: build, tests, benchmarks, fuzzing, the Python package (scripts/test.sh)
#   scripts/install-deps.sh --run   only what building and running build/ctrain needs, no pip (scripts/run.sh)
# Idempotent (apt-get update and install only when a package is missing); run as root (or via sudo).
# Safe to call on every CI run.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --run) MODE=run ;;
  *) echo "usage: $0 [--run]" >&2; exit 2 ;;
esac
# The ctrain binary: its compiler, CMake's find_package/pkg_check_modules calls and the libraries it links.
RUN_PKGS=(
  build-essential cmake ninja-build pkg-config
  zlib1g-dev           # GZIP/ZLIB TFRecord compression
  libdnnl-dev          # oneDNN: fully connected GEMMs (the seed's MKL-DNN)
  libcli11-dev         # command line
  nlohmann-json3-dev   # --json output, JSON config files, metrics
  libtomlplusplus-dev  # TOML config files
  libprotobuf-dev protobuf-compiler  # service/ messages (protoc)
  libgrpc++-dev protobuf-compiler-grpc  # service/: data service and parameter servers (gRPC C++)
  libzstd-dev          # per-batch zstd on the data-service stream
  libonnx-dev          # export/: ONNX graphs (onnx_proto + checker, ONNX 1.12)
  libzip-dev           # export/npz_writer: numpy .npz archives (convert --output-format npz)
  libopenmpi-dev openmpi-bin  # dist/: multi-host allreduce under mpirun (linked into build/ctrain when found)
)
# Only the tests, benchmarks, fuzzing, the Python package and `ctrain report` (run time) need these.
TEST_PKGS=(
  git
  libgtest-dev libgmock-dev  # unit tests (via CTest)
  libbenchmark-dev     # bench/ micro benchmarks
  openssl              # tests: a self-signed certificate for the services' TLS
  clang libclang-rt-14-dev libomp-14-dev llvm  # libFuzzer targets (clang needs its OpenMP runtime)
  gnuplot-nox          # ctrain report: PNG charts (docs/launch.md#report)
  python3 python3-pip  # tests: TensorBoard's reader (pip line at the end)
  ccache               # compiler cache: the CI trees and the Python wheel's build tree share it
  openssh-server openssh-client  # tests: multi-host mpirun through a real sshd (ctrain launch --sshd)
)
PKGS=("${RUN_PKGS[@]}")
if [ "$MODE" = run ]; then
  INSTALL_DEPS_NO_PIP=1  # build/ctrain needs no Python package
else
  PKGS+=("${TEST_PKGS[@]}")
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps ($MODE): all ${#PKGS[@]} packages present"
else
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps ($MODE): installed ${missing[*]}"
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
  pip_install tensorflow-cpu              # tests/python: .as_tf() (ragged multi-hot entries) with TensorFlow itself
  pip_install onnxruntime                 # tests/export: runs the exported ONNX graph
  pip_install tensorboard                 # tests/monitor, tests/launch: EventAccumulator reads the event files
  # tests/python/test_sagemaker_hyperparameters.py: hyperparameters.json as the SageMaker Python SDK (v2)
  # encodes it, read back by the SageMaker training toolkit (test-only; the image needs neither)
  pip_install 'sagemaker<3' sagemaker-training
fi
