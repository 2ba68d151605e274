// Shared helpers of the mpirun tests: the launcher line (Open MPI as root on a
// 2-core box needs --allow-run-as-root and --oversubscribe), a skip when
// mpirun is absent, and reading numbers back from a run's output.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "cli/cli_harness.h"

namespace ctrain::testing {

inline bool HaveMpirun() { return Shell("command -v mpirun >/dev/null").exit_code == 0; }

// "mpirun ... -np N build/ctrain " (append the train arguments). Bounded by
// `timeout` so a hang fails the test instead of stopping CI: SIGTERM first,
// which mpirun forwards to its ranks and cleans up after, SIGKILL 10 s later.
inline std::string Mpirun(int ranks, int timeout_s = 120) {
  return "timeout -k 10 " + std::to_string(timeout_s) +
         " mpirun --oversubscribe --allow-run-as-root --mca btl self,vader -np " + std::to_string(ranks) + " " +
         kCtrain + " ";
}

// The number after the last occurrence of `key` in `text` (NaN when absent).
inline double NumberAfter(const std::string& text, const std::string& key) {
  const size_t p = text.rfind(key);
  if (p == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + p + key.size(), nullptr);
}

}  // namespace ctrain::testing
