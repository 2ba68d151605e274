#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/*_fuzz.cc) with clang and runs each for SECONDS (default 60).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
bash scripts/install-deps.sh
BUILD_DIR=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTRAIN_FUZZ=ON \
  -DCTRAIN_BUILD_TESTS=OFF -DCTRAIN_BUILD_BENCH=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cc; do targets+=("$(basename "${f%.cc}")"); done
fi
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus="$BUILD_DIR/corpus/$t"
  mkdir -p "$corpus"
  echo "== $t for ${SECONDS_EACH}s"
  "$BUILD_DIR/fuzz/$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 "$corpus" 2>&1 | tail -n 3
done
