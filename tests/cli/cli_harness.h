// Shared harness of the end-to-end CLI tests: run the real build/ctrain (or a
// shell command) and capture its output, read files back, and a scratch
// directory per test that is removed afterwards.
//
// CTRAIN_BINARY, CTRAIN_SOURCE_DIR and CTRAIN_SHARED_DATA_DIR are compile
// definitions set by CMakeLists.txt for the test targets.
#pragma once

#include <algorithm>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ctrain::testing {

namespace fs = std::filesystem;

inline const std::string kCtrain = CTRAIN_BINARY;
// Small synthetic case inputs copied into the repo (tests/cases/<case>/).
inline const std::string kCases = std::string(CTRAIN_SOURCE_DIR) + "/tests/cases";
// The read-only field-report cases beside the checkout (Criteo-derived inputs stay there).
inline const std::string kSharedCases = std::string(CTRAIN_SOURCE_DIR) + "/../shared/cases";
inline const std::string kData = CTRAIN_SHARED_DATA_DIR;

struct RunResult {
  // The shell's view of the status: the exit code, or 128 + signal number
  // for a process killed by a signal; -1 when the command could not run.
  int exit_code = -1;
  std::string out;  // stdout and stderr, interleaved
};

// Runs `cmd` with /bin/sh (in `cwd` when given), stderr joined to stdout.
inline RunResult Shell(const std::string& cmd, const std::string& cwd = "") {
  const std::string full = (cwd.empty() ? "{ " : "cd '" + cwd + "' && { ") + cmd + " ; } 2>&1";
  RunResult r;
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) r.exit_code = 128 + WTERMSIG(st);
  return r;
}

// Runs build/ctrain with `args` (shell words).
inline RunResult RunCtrain(const std::string& args, const std::string& cwd = "") {
  return Shell(kCtrain + " " + args, cwd);
}

// The whole file as bytes ("" when it cannot be read).
inline std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fixture with a fresh scratch directory per test:
// <tmp>/<prefix>_<pid>_<test name>, removed in TearDown.
class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    // A parameterised test's name is "Name/param": one directory, not a parent TearDown would leave behind.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / (prefix_ + "_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The path of `name` inside the scratch directory.
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(P(name), std::ios::binary) << bytes;
  }

  std::string prefix_;
  fs::path dir_;
};

}  // namespace ctrain::testing
