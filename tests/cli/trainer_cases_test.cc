// End-to-end regression tests of train / eval / predict for the field-report
// cases of issue #7 (tests/cases/<case>/, copied from ../shared/cases) and the
// new-user trial findings (trial/01, trial/03, trial/10). Each runs the real
// build/ctrain on tiny inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code;
  std::string out;  // stdout + stderr
};

// Runs `sh -c "<cmd>"` in `dir` with stderr folded into stdout.
RunResult Shell(const std::string& dir, const std::string& cmd) {
  const std::string full = "cd '" + dir + "' && { " + cmd + " ; } 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  RunResult r{-1, {}};
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

const std::string kBin = CTRAIN_BINARY;
const std::string kCases = std::string(CTRAIN_SOURCE_DIR) + "/tests/cases";
const std::string kData = CTRAIN_SHARED_DATA_DIR;
// A tiny model: every case trains in well under a second.
const std::string kTiny = " --embedding-size 4 --deep-layers 8 --progress none";

class TrainerCasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_cases_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult Run(const std::string& args) { return Shell(dir_.string(), kBin + " " + args); }
  RunResult Sh(const std::string& cmd) { return Shell(dir_.string(), cmd); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(P(name)) << text; }
  // True if model_dir holds a checkpoint file.
  bool HasCheckpoint(const std::string& model_dir) const {
    if (!fs::exists(dir_ / model_dir)) return false;
    for (const auto& e : fs::directory_iterator(dir_ / model_dir))
      if (e.path().filename().string().rfind("ckpt-", 0) == 0) return true;
    return false;
  }
  fs::path dir_;
};

// ---- B05 / trial/01: empty input in any mode is an error naming the input ----

const std::string kB05Flags = " --format libsvm --field-size 3 --feature-size 10" + kTiny;

TEST_F(TrainerCasesTest, B05EmptyFileStreamModeFailsNamingItAndWritesNoCheckpoint) {
  RunResult r = Run("train --train " + kCases + "/B05/empty.libsvm" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in " + kCases + "/B05/empty.libsvm"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nothing to do"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05EmptyFileMemoryModeFailsNamingIt) {
  RunResult r = Run("train --input-mode memory --train " + kCases + "/B05/empty.libsvm" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("InvalidArgument: no examples in " + kCases + "/B05/empty.libsvm"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05EmptyStdinFailsInBothModes) {
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Sh("false | " + kBin + " train --train - --input-mode " + mode + kB05Flags + " --model-dir m");
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("no examples in stdin (-)"), std::string::npos) << mode << ": " << r.out;
    EXPECT_FALSE(HasCheckpoint("m")) << mode;
  }
}

TEST_F(TrainerCasesTest, B05EmptyFifoAndChannelFail) {
  ASSERT_EQ(::mkfifo(P("f.libsvm").c_str(), 0600), 0);
  RunResult r = Sh(": > f.libsvm & " + kBin + " train --train f.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in f.libsvm"), std::string::npos) << r.out;
  fs::create_directories(dir_ / "ch");
  ASSERT_EQ(::mkfifo(P("ch/train_0").c_str(), 0600), 0);
  r = Sh(": > ch/train_0 & " + kBin + " train --train pipe:ch/train" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in pipe:ch/train (FIFO ch/train_0)"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

TEST_F(TrainerCasesTest, B05SeveralInputsNameTheEmptyOnes) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("e1.libsvm", "");
  Write("e2.libsvm", "# only a comment\n");
  for (const char* mode : {"stream", "memory"}) {
    RunResult r = Run(std::string("train --input-mode ") + mode + " --train a.libsvm e1.libsvm" + kB05Flags);
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("e1.libsvm"), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("1 of 2 inputs are empty"), std::string::npos) << mode << ": " << r.out;
  }
  RunResult r = Run("train --input-mode memory --train a.libsvm e1.libsvm e2.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in e1.libsvm, e2.libsvm (2 of 3 inputs are empty)"), std::string::npos) << r.out;
}

TEST_F(TrainerCasesTest, B05EmptyValidationEvalAndPredictInputsFail) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  Write("e.libsvm", "");
  RunResult r = Run("train --train a.libsvm --valid e.libsvm" + kB05Flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--valid: no examples in e.libsvm"), std::string::npos) << r.out;
  ASSERT_EQ(Run("train --train a.libsvm" + kB05Flags + " --model-dir m").exit_code, 0);
  r = Run("eval --model-dir m --input e.libsvm");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--input: no examples in e.libsvm"), std::string::npos) << r.out;
  r = Sh("printf '' | " + kBin + " predict --model-dir m --input - -o p.txt");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no examples in stdin (-)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("p.txt")));
}

TEST_F(TrainerCasesTest, Trial01DropRemainderLeavingNoBatchAndZeroEpochsFail) {
  Write("a.libsvm", "1 0:1 1:1 2:1\n0 0:1 1:2 2:1\n");
  RunResult r = Run("train --train a.libsvm --batch-size 10 --drop-remainder true" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--drop-remainder dropped all 2 examples of epoch 1 from a.libsvm: --batch-size 10"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
  r = Run("train --train a.libsvm --epochs 0" + kB05Flags + " --model-dir m");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--epochs must be >= 1, got 0"), std::string::npos) << r.out;
  EXPECT_FALSE(HasCheckpoint("m"));
}

}  // namespace
