#!/usr/bin/env bash
# The README's main-job command: installs what the ctrain binary needs (scripts/install-deps.sh --run:
# Debian packages only, no tests' dependencies, no pip), builds only build/ctrain, and trains DeepFM
# on the embedded synthetic Criteo-shaped default (no external data needed).
# Extra arguments go to `ctrain train` (e.g. --epochs 2 --metrics-json m.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --run
# A fresh build/ is configured without tests and benchmarks (GoogleTest is not installed by --run) and as a
# unity build (CTRAIN_UNITY: each layer compiled in one batch, about half the cold compile time; CMakeLists.txt);
# an existing one (scripts/test.sh's) keeps its settings: only the ctrain target is built either way.
args=()
[ -f build/CMakeCache.txt ] || args=(-DCTRAIN_BUILD_TESTS=OFF -DCTRAIN_BUILD_BENCH=OFF -DCTRAIN_UNITY=ON)
TARGETS=ctrain bash scripts/build.sh "${args[@]}"
exec ./build/ctrain train "$@"
