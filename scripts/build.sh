#!/usr/bin/env bash
# Configures and builds ctrain into build/ (or $BUILD_DIR). Extra args go to cmake configure.
#   scripts/build.sh                      # Release, tests + benches
#   BUILD_DIR=build-asan scripts/build.sh -DCTRAIN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   TARGETS="ctrain" scripts/build.sh     # only those targets (default: all)
# The compiler cache (ccache, when installed) is set up by CMakeLists.txt for every tree: one cache,
# paths relative to the source tree (CCACHE_BASEDIR), so other trees and other clones hit it too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
# shellcheck disable=SC2086  # TARGETS is a space-separated list
cmake --build "$BUILD_DIR" -j "$JOBS" ${TARGETS:+--target $TARGETS}
