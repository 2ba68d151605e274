// base/log.h, base/clock.h, base/path.h: the one logging, clock and path helper.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "ctrain/base/clock.h"
#include "ctrain/base/log.h"
#include "ctrain/base/path.h"

namespace ctrain {
namespace {

TEST(Log, OneLinePrefixedNewlineNotDoubled) {
  ::testing::internal::CaptureStderr();
  Logf("resumed from %s at step %lld\n", "m", 42LL);
  Logf("no newline %d", 7);
  Warnf("%s is ignored", "x");
  LogLine("plain");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "ctrain: resumed from m at step 42\nctrain: no newline 7\nctrain: warning: x is ignored\nctrain: plain\n");
}

TEST(Log, LongLinesAreWrittenWhole) {
  const std::string big(100000, 'a');
  ::testing::internal::CaptureStderr();
  Logf("%s", big.c_str());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "ctrain: " + big + "\n");
}

TEST(Clock, SecondsAndDeadline) {
  const Clock::time_point a = Clock::now();
  EXPECT_DOUBLE_EQ(SecondsBetween(a, a + std::chrono::milliseconds(1500)), 1.5);
  EXPECT_DOUBLE_EQ(SecondsBetween(a + std::chrono::seconds(2), a), -2.0);
  EXPECT_GE(SecondsSince(a), 0.0);
  Deadline past(std::chrono::milliseconds(0));
  EXPECT_TRUE(past.expired());
  EXPECT_EQ(past.remaining(), Clock::duration::zero());
  Deadline later(std::chrono::hours(1));
  EXPECT_FALSE(later.expired());
  EXPECT_GT(later.remaining(), std::chrono::minutes(59));
}

TEST(Path, AbsoluteIsLexicalAndCanonicalResolvesLinks) {
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(AbsolutePath(""), "");
  EXPECT_EQ(AbsolutePath("/a/./b/../c"), "/a/c");
  EXPECT_EQ(AbsolutePath("x/y"), cwd + "/x/y");
  const std::string dir = ::testing::TempDir() + "/ctrain_path_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/real");
  std::filesystem::create_directory_symlink(dir + "/real", dir + "/link");
  const std::string real = std::filesystem::canonical(dir + "/real").string();
  EXPECT_EQ(CanonicalPath(dir + "/link/"), real);
  EXPECT_EQ(CanonicalPath(dir + "/link/missing"), real + "/missing");  // the existing part resolved
  EXPECT_EQ(AbsolutePath(dir + "/link"), std::filesystem::path(dir + "/link").lexically_normal().string());
  EXPECT_EQ(CanonicalPath(""), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ctrain
