#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the unit tests
# (CTest/GoogleTest) and the Python package's (pytest), then the C++ suite under ASan+UBSan.
#   SKIP_SANITIZERS=1 scripts/test.sh   # only the Release suite
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
echo "== Python package: pip install . and pytest tests/python (slow ones too) =="
# The wheel's CMake tree persists in build-py/ (pyproject.toml), so a rerun is incremental.
PYTHON=${PYTHON:-python3}
PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --no-build-isolation .
(cd tests/python && "$PYTHON" -m pytest -q -m "slow or not slow" .)
if [ "${SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== ASan+UBSan build =="
  BUILD_DIR=build-asan bash scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTRAIN_SANITIZE=ON -DCTRAIN_BUILD_BENCH=OFF
  # Long training acceptance tests are labelled 'slow' and run only in the Release suite.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE slow)
  echo "== ThreadSanitizer: the threaded input pipeline and the dispatcher journal =="
  # (The trainer's kernels use OpenMP and the services use Debian's gRPC; neither
  # libgomp nor libgrpc is TSan-instrumented, so only our std::thread code runs
  # under TSan: the input pipeline and the journal's concurrent appends.)
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTRAIN_TSAN=ON -DCTRAIN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-tsan -j "$(nproc)" --target data_pipeline_test service_journal_test
  TSAN_OPTIONS=halt_on_error=1 ./build-tsan/data_pipeline_test
  TSAN_OPTIONS=halt_on_error=1 ./build-tsan/service_journal_test
fi
