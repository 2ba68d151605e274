// io::CheckOutputsAreNotInputs: the same file however it is spelled (symlink,
// hard link, "./"), outputs not yet created, directories, globs, output
// directories and the paths that are never compared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ctrain/io/file.h"

namespace ctrain::io {
namespace {

namespace fs = std::filesystem;

class OutputsNotInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_outputs_not_inputs_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "d");
    std::ofstream(P("a")) << "x";
    std::ofstream(P("d/b")) << "y";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& n) const { return (dir_ / n).string(); }
  std::string Check(const std::vector<FlagPath>& in, const std::vector<FlagPath>& out,
                    const std::vector<OutputDir>& dirs = {}) {
    Status s = CheckOutputsAreNotInputs(in, out, dirs);
    return s.ok() ? "" : s.ToString();
  }
  fs::path dir_;
};

TEST_F(OutputsNotInputsTest, SameFileUnderAnySpelling) {
  fs::create_symlink(P("a"), P("link"));
  fs::create_hard_link(P("a"), P("hard"));
  EXPECT_EQ(Check({{"--train", P("a")}}, {{"--cache", P("link")}}),
            "InvalidArgument: --cache " + P("link") + " is the same file as --train " + P("a") +
                ": writing it would destroy the input (choose another output path)");
  EXPECT_NE(Check({{"--train", P("a")}}, {{"-o", P("hard")}}), "");
  EXPECT_NE(Check({{"--train", P("a")}}, {{"-o", P("d/../a")}}), "");
  EXPECT_EQ(Check({{"--train", P("a")}}, {{"-o", P("d/b")}}), "");  // another existing file
  EXPECT_EQ(Check({{"--train", P("a")}}, {{"-o", P("new")}}), "");  // not created yet
}

TEST_F(OutputsNotInputsTest, TwoOutputsThatAreOneFileEvenBeforeTheyExist) {
  EXPECT_EQ(Check({}, {{"--cache", P("new")}, {"--metrics-json", P("d/../new")}}),
            "InvalidArgument: --metrics-json " + P("d/../new") + " and --cache " + P("new") +
                " are the same file: one output would overwrite the other");
}

TEST_F(OutputsNotInputsTest, DirectoriesAndGlobs) {
  EXPECT_NE(Check({{"--train", P("d")}}, {{"--cache", P("d/new")}}).find("is inside the input directory --train"),
            std::string::npos);
  EXPECT_NE(Check({{"--train", P("d/*")}}, {{"-o", P("d/b")}}).find("is the same file as --train " + P("d/b")),
            std::string::npos);
  EXPECT_EQ(Check({{"--train", P("d/*")}}, {{"-o", P("d/new")}}), "");
}

TEST_F(OutputsNotInputsTest, OutputDirectoryWritesOnlyItsOwnNames) {
  auto ckpt = [](std::string_view n) { return n.starts_with("ckpt-"); };
  std::ofstream(P("d/ckpt-1.bin")) << "z";
  EXPECT_NE(Check({{"--train", P("d/ckpt-1.bin")}}, {}, {{"--model-dir", P("d"), ckpt}}).find("is a file that"),
            std::string::npos);
  EXPECT_NE(Check({{"--train", P("d")}}, {}, {{"--model-dir", P("d"), ckpt}}).find("is the directory --model-dir"),
            std::string::npos);
  EXPECT_EQ(Check({{"--train", P("d/b")}}, {}, {{"--model-dir", P("d"), ckpt}}), "");
}

TEST_F(OutputsNotInputsTest, StreamsAndEmptyPathsAreNeverCompared) {
  EXPECT_EQ(Check({{"--train", "-"}, {"--feature-map", ""}}, {{"-o", "-"}, {"--metrics-json", ""}}), "");
  EXPECT_EQ(Check({{"--train", "/dev/null"}}, {{"-o", "/dev/null"}}), "");
  EXPECT_EQ(Check({{"--train", "pipe:" + P("ch")}}, {{"-o", P("ch")}}), "");
}

}  // namespace
}  // namespace ctrain::io
