// Service tokens (service/auth.h): LoadToken's sources and refusals, and
// CheckToken / AttachToken over a real loopback call.
#include "ctrain/service/auth.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace ctrain::service {
namespace {

class LoadTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ctrain::testing::TestTempDir("svc_auth", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    const char* old = std::getenv(kTokenEnv);
    had_env_ = old != nullptr;
    if (had_env_) old_env_ = old;
    ::unsetenv(kTokenEnv);
  }
  void TearDown() override {
    if (had_env_)
      ::setenv(kTokenEnv, old_env_.c_str(), 1);
    else
      ::unsetenv(kTokenEnv);
  }
  std::string Write(const std::string& name, const std::string& content) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::string dir_, old_env_;
  bool had_env_ = false;
};

TEST_F(LoadTokenTest, FromFileWithTrailingNewlinesStripped) {
  StatusOr<std::string> t = LoadToken(Write("tok", "s3cret-Token_1\r\n\n"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "s3cret-Token_1");
  // The file wins over the environment.
  ::setenv(kTokenEnv, "from-env", 1);
  EXPECT_EQ(*LoadToken(Write("tok2", "from-file")), "from-file");
}

TEST_F(LoadTokenTest, FromEnvironmentOrNone) {
  StatusOr<std::string> none = LoadToken("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  ::setenv(kTokenEnv, "env token", 1);
  EXPECT_EQ(*LoadToken(""), "env token");
  ::setenv(kTokenEnv, "bad\ttoken", 1);
  Status st = LoadToken("").status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(st.message()).find(kTokenEnv), std::string::npos) << st.message();
}

TEST_F(LoadTokenTest, RefusesMissingEmptyAndNonPrintable) {
  const std::string missing = dir_ + "/missing";
  Status st = LoadToken(missing).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(st.message()).find(missing), std::string::npos);

  for (const std::string& content : {std::string(""), std::string("\n"), std::string("\r\n\n")}) {
    const std::string p = Write("empty", content);
    st = LoadToken(p).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << content.size();
    EXPECT_NE(std::string(st.message()).find("empty"), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find(p), std::string::npos) << st.message();
  }
  for (const std::string& content : {std::string("a\nb"), std::string("tok\x01"), std::string("t\xc3\xa9")}) {
    const std::string p = Write("bin", content);
    st = LoadToken(p).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(st.message()).find("printable"), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find(p), std::string::npos) << st.message();
  }
  // A directory is not a token file.
  EXPECT_FALSE(LoadToken(dir_).ok());
}

}  // namespace
}  // namespace ctrain::service
