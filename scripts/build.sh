#!/usr/bin/env bash
# Configures and builds ctrain into build/ (or $BUILD_DIR). Extra args go to cmake configure.
#   scripts/build.sh                      # Release, tests + benches
#   BUILD_DIR=build-asan scripts/build.sh -DCTRAIN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
# A compiler cache when the machine has one (rebuilds of the three CI trees share it).
command -v ccache >/dev/null && GEN+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$JOBS"
