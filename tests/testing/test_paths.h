// The paths the tests use, resolved at run time (force-included into every
// test by CMakeLists.txt): CTRAIN_BINARY (the build tree's ctrain),
// CTRAIN_SOURCE_DIR (the source tree) and CTRAIN_SHARED_DATA_DIR
// (<source>/../shared/data). Each is a `const char*` expression.
//
// They are not compile-time -D strings: an absolute path in a compile command
// would make every test object differ between two clones, so a fresh clone
// (CI's) would miss the shared compiler cache on every test file
// (README.md#set-up: one ccache for every tree and clone).
//
// Resolution: the environment variables of the same names (CTest sets them,
// CMakeLists.txt), else the test executable's build tree: its directory holds
// `ctrain` and CMakeCache.txt, whose CMAKE_HOME_DIRECTORY is the source tree.
// A test run from elsewhere without the variables fails loudly on first use.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace ctrain::testing {

enum class TestPathKind { kBinary, kSourceDir, kSharedDataDir };

inline const std::string& TestExeDir() {
  static const std::string dir = [] {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    std::string p = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
  }();
  return dir;
}

inline std::string SourceDirFromBuildTree() {
  std::ifstream cache(TestExeDir() + "/CMakeCache.txt");
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  std::fprintf(stderr, "test paths: set CTRAIN_SOURCE_DIR (no CMakeCache.txt beside %s)\n", TestExeDir().c_str());
  std::abort();
}

inline const char* TestPath(TestPathKind kind) {
  static const std::string binary = [] {
    const char* e = std::getenv("CTRAIN_BINARY");
    return e != nullptr && *e ? std::string(e) : TestExeDir() + "/ctrain";
  }();
  static const std::string source = [] {
    const char* e = std::getenv("CTRAIN_SOURCE_DIR");
    return e != nullptr && *e ? std::string(e) : SourceDirFromBuildTree();
  }();
  static const std::string shared = [] {
    const char* e = std::getenv("CTRAIN_SHARED_DATA_DIR");
    return e != nullptr && *e ? std::string(e) : source + "/../shared/data";
  }();
  switch (kind) {
    case TestPathKind::kBinary: return binary.c_str();
    case TestPathKind::kSourceDir: return source.c_str();
    case TestPathKind::kSharedDataDir: return shared.c_str();
  }
  return "";
}

}  // namespace ctrain::testing

#define CTRAIN_BINARY (::ctrain::testing::TestPath(::ctrain::testing::TestPathKind::kBinary))
#define CTRAIN_SOURCE_DIR (::ctrain::testing::TestPath(::ctrain::testing::TestPathKind::kSourceDir))
#define CTRAIN_SHARED_DATA_DIR (::ctrain::testing::TestPath(::ctrain::testing::TestPathKind::kSharedDataDir))
