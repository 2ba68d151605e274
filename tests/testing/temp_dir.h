// Test helper: per-process scratch directories that are removed when the
// test process exits.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace ctrain::testing {

// "<TEST_TMPDIR or /tmp>/<prefix>_<pid>_<name>", emptied now (created again
// when `create`), and removed with everything in it at process exit.
inline std::string TestTempDir(const std::string& prefix, const std::string& name, bool create = true) {
  struct Registry {
    std::mutex mu;
    std::vector<std::string> dirs;
    ~Registry() {
      std::error_code ec;
      for (const std::string& d : dirs) std::filesystem::remove_all(d, ec);
    }
  };
  static Registry registry;
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base ? base : "/tmp") + "/" + prefix + "_" + std::to_string(::getpid()) + "_" + name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (create) std::filesystem::create_directories(dir);
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.dirs.push_back(dir);
  return dir;
}

}  // namespace ctrain::testing
