#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the unit tests
# (CTest/GoogleTest) and the Python package's (pytest), then the memory-focused tests under ASan+UBSan
# (CTest label asan) and the threaded pipeline and journal under TSan. Prints each stage's wall time at the end.
#   SKIP_SANITIZERS=1 scripts/test.sh   # only the Release suite (and the Python package)
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
TIMES=()
# stage NAME COMMAND...: runs COMMAND and records its wall time (printed on exit, failed runs too).
stage() {
  local name=$1 t=$SECONDS
  shift
  echo "== $name =="
  "$@"
  TIMES+=("$(printf '%-44s %3dm%02ds' "$name" $(((SECONDS - t) / 60)) $(((SECONDS - t) % 60)))")
}
print_times() {
  local rc=$?
  echo "== stage times (wall) =="
  printf '  %s\n' "${TIMES[@]}"
  printf '  %-44s %3dm%02ds%s\n' "total" $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60)) \
    "$([ "$rc" -eq 0 ] || echo " (failed: exit $rc)")"
}
trap print_times EXIT

stage "dependencies (install-deps.sh)" bash scripts/install-deps.sh
# Tests and benches ON and the unity build OFF explicitly: build/ may have been configured by scripts/run.sh
# without them and batched (CTRAIN_UNITY); the tests' tree compiles one object per file (the thread-safety
# check below reads each file's command from compile_commands.json).
stage "Release build (build/, every target)" bash scripts/build.sh -DCTRAIN_BUILD_TESTS=ON -DCTRAIN_BUILD_BENCH=ON -DCTRAIN_UNITY=OFF
# The lock rules (Clang thread-safety annotations, src/ctrain/base/mutex.h) checked by clang -Wthread-safety.
stage "thread-safety analysis (clang -Wthread-safety)" bash scripts/thread_safety.sh build
release_ctest() { (cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900); }
stage "Release CTest (every test, slow included)" release_ctest
# The wheel's CMake tree persists in build-py/ (pyproject.toml), so a rerun is incremental.
PYTHON=${PYTHON:-python3}
# The wheel is compiled by build/'s compilers (scikit-build-core would take the interpreter's sysconfig CXX,
# g++ or x86_64-linux-gnu-g++, where build/ has c++): same commands, so its compiles hit build/'s ccache entries.
python_package() {
  CC=${CC:-$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' build/CMakeCache.txt)} \
  CXX=${CXX:-$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)} \
  PIP_BREAK_SYSTEM_PACKAGES=1 "$PYTHON" -m pip install -q --no-build-isolation .
  (cd tests/python && "$PYTHON" -m pytest -q -m "slow or not slow" .)
}
stage "Python package (pip install ., pytest)" python_package
if [ "${SKIP_SANITIZERS:-0}" != "1" ]; then
  # Only the tests labelled asan (CMakeLists.txt: CTRAIN_ASAN_LAYERS / CTRAIN_ASAN_TESTS) and the ctrain
  # binary they run are built and run here; every test runs once, unsanitized, in the Release stage.
  stage "ASan+UBSan build (build-asan/, asan_tests)" env BUILD_DIR=build-asan TARGETS=asan_tests bash scripts/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTRAIN_SANITIZE=ON -DCTRAIN_BUILD_BENCH=OFF
  asan_ctest() {
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure -j "$(nproc)" --timeout 900 -L asan)
  }
  stage "ASan+UBSan CTest (-L asan)" asan_ctest
  # (The trainer's kernels use OpenMP and the services use Debian's gRPC; neither
  # libgomp nor libgrpc is TSan-instrumented, so only our std::thread code runs
  # under TSan: the input pipeline, the journal's concurrent appends and the keyed table's concurrent
  # translation.)
  tsan() {
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCTRAIN_TSAN=ON -DCTRAIN_BUILD_BENCH=OFF >/dev/null
    cmake --build build-tsan -j "$(nproc)" --target data_pipeline_test service_journal_test train_key_index_test
    TSAN_OPTIONS=halt_on_error=1 ./build-tsan/data_pipeline_test
    TSAN_OPTIONS=halt_on_error=1 ./build-tsan/service_journal_test
    TSAN_OPTIONS=halt_on_error=1 ./build-tsan/train_key_index_test
  }
  stage "ThreadSanitizer (pipeline, journal, keyed table)" tsan
fi
