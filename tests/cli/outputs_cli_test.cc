// Outputs never destroy inputs: every command refuses, before any work, an
// output path that is the same file as one of its inputs (or as another
// output), however it is spelled (symlink, "./", hard link); an unusable
// --cache path fails up front (io/file.h CheckOutputsAreNotInputs,
// CheckOutputWritable).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;

constexpr const char* kSmallModel =
    " --deep-layers 8 --embedding-size 4 --batch-size 64 --intra-op-threads 1 --num-parallel-calls 1";

class OutputsCliTest : public ScratchDirTest {
 protected:
  OutputsCliTest() : ScratchDirTest("ctrain_outputs_test") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    RunResult r = Run("synth --rows 300 --format libsvm -o s.libsvm");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    input_ = Slurp(dir_ / "s.libsvm");
    ASSERT_FALSE(input_.empty());
  }
  RunResult Run(const std::string& args) { return RunCtrain(args, dir_.string()); }
  // The command fails with exit 1, names `needle`, and s.libsvm is unchanged.
  void ExpectRefused(const std::string& args, const std::string& needle) {
    SCOPED_TRACE(args);
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
    EXPECT_EQ(Slurp(dir_ / "s.libsvm"), input_) << "the input was changed";
  }
  std::string input_;
};

TEST_F(OutputsCliTest, TrainRefusesACacheOrMetricsFileThatIsAnInput) {
  ExpectRefused("train --train s.libsvm --cache s.libsvm --epochs 2" + std::string(kSmallModel),
                "--cache s.libsvm is the same file as --train s.libsvm: writing it would destroy the input");
  ASSERT_EQ(::symlink("s.libsvm", (dir_ / "link").c_str()), 0);
  ExpectRefused("train --train s.libsvm --metrics-json ./link" + std::string(kSmallModel),
                "--metrics-json ./link is the same file as --train s.libsvm");
  fs::create_hard_link(dir_ / "s.libsvm", dir_ / "hard");
  ExpectRefused("train --train s.libsvm --valid hard --metrics-json s.libsvm" + std::string(kSmallModel),
                "--metrics-json s.libsvm is the same file as --train s.libsvm");
  ExpectRefused("train --train s.libsvm --cache c.bin --metrics-json ./c.bin" + std::string(kSmallModel),
                "--metrics-json ./c.bin and --cache c.bin are the same file");
  fs::create_directory(dir_ / "d");
  fs::copy_file(dir_ / "s.libsvm", dir_ / "d" / "a.libsvm");
  ExpectRefused("train --train d --cache d/c.bin" + std::string(kSmallModel),
                "--cache d/c.bin is inside the input directory --train d");
  ExpectRefused("train --train 'd/*.libsvm' --metrics-json d/a.libsvm" + std::string(kSmallModel),
                "--metrics-json d/a.libsvm is the same file as --train d/a.libsvm");
  EXPECT_FALSE(fs::exists(dir_ / "c.bin"));
}

TEST_F(OutputsCliTest, TrainRefusesDataInsideTheModelDirWhereCheckpointsGo) {
  fs::create_directory(dir_ / "m");
  fs::copy_file(dir_ / "s.libsvm", dir_ / "m" / "ckpt-5.bin");
  ExpectRefused("train --train m/ckpt-5.bin --model-dir m" + std::string(kSmallModel),
                "--train m/ckpt-5.bin is a file that --model-dir m writes");
  ExpectRefused("train --train m --model-dir ./m" + std::string(kSmallModel),
                "--train m is the directory --model-dir ./m writes into");
  // Data next to the model dir's files, under its own name, is fine.
  RunResult ok = Run("train --train s.libsvm --model-dir ." + std::string(kSmallModel));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST_F(OutputsCliTest, PredictAndEvalRefuseAnOutputThatIsAnInputOrInTheModelDir) {
  RunResult t = Run("train --train s.libsvm --model-dir m" + std::string(kSmallModel));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  ExpectRefused("predict --model-dir m --input s.libsvm -o s.libsvm",
                "--output s.libsvm is the same file as --input s.libsvm");
  ExpectRefused("predict --model-dir m --input s.libsvm -o m/ckpt-5.bin",
                "--output m/ckpt-5.bin is the same file as --model-dir m/ckpt-5.bin");
  ExpectRefused("eval --model-dir m --input s.libsvm --metrics-json m/checkpoint",
                "--metrics-json m/checkpoint is the same file as --model-dir m/checkpoint");
  ExpectRefused("eval --model-dir m --input s.libsvm --metrics-json ./s.libsvm",
                "--metrics-json ./s.libsvm is the same file as --input s.libsvm");
  EXPECT_TRUE(fs::exists(dir_ / "m" / "ckpt-5.bin"));
  RunResult ok = Run("predict --model-dir m --input s.libsvm -o m/p.txt");  // next to the model is fine
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  RunResult ev = Run("eval --model-dir m --input s.libsvm --metrics-json m/eval.json");
  EXPECT_EQ(ev.exit_code, 0) << ev.out;
}

TEST_F(OutputsCliTest, CacheThatIsADirectoryFailsUpFront) {
  fs::create_directory(dir_ / "cdir");
  RunResult r = Run("train --train s.libsvm --cache cdir --epochs 2 --progress none" + std::string(kSmallModel));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--cache cdir: is a directory, not a file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("streaming training data"), std::string::npos) << "failed after starting: " << r.out;
}

// synth never writes a file every reader refuses: each numeric flag is checked
// first, named as written, and nothing is created.
TEST_F(OutputsCliTest, SynthRefusesFlagsThatGiveNoUsableData) {
  const std::pair<const char*, const char*> cases[] = {
      {"--rows 0", "InvalidArgument: --rows must be >= 1, got 0"},
      {"--rows -5", "InvalidArgument: --rows must be >= 1, got -5"},
      {"--rows 10 --field-size 0", "--field-size must be >= 1, got 0"},
      {"--rows 10 --num-numeric 40", "--num-numeric must be in [0, --field-size 39], got 40"},
      {"--rows 10 --num-numeric -1", "--num-numeric must be in [0, --field-size 39], got -1"},
      {"--rows 10 --feature-size 5", "--feature-size must be >= --field-size 39 (each field needs an id), got 5"},
      {"--rows 10 --id-base -1", "--id-base must be >= 0, got -1"},
  };
  for (const auto& [flags, message] : cases) {
    SCOPED_TRACE(flags);
    RunResult r = Run(std::string("synth ") + flags + " -o sy.out");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir_ / "sy.out"));
  }
  RunResult one = Run("synth --rows 1 --format libsvm -o sy.out");
  EXPECT_EQ(one.exit_code, 0) << one.out;
  const std::string written = Slurp(dir_ / "sy.out");
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 1);
}

// The real binary: --help wins over a flag missing its value; typos are named.
TEST_F(OutputsCliTest, HelpWinsAndUsageErrorsNameTheFlag) {
  RunResult help = Run("train --help --train");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("Usage: ctrain train"), std::string::npos) << help.out;
  RunResult lr = Run("train --train s.libsvm -lr 0.1");
  EXPECT_EQ(lr.exit_code, 2) << lr.out;
  EXPECT_NE(lr.out.find("unknown flag -lr (value '0.1'); did you mean --learning-rate?"), std::string::npos) << lr.out;
  RunResult version = Run("--verison");
  EXPECT_EQ(version.exit_code, 2) << version.out;
  EXPECT_NE(version.out.find("did you mean --version?"), std::string::npos) << version.out;
  RunResult stray = Run("train s.libsvm");
  EXPECT_EQ(stray.exit_code, 2) << stray.out;
  EXPECT_NE(stray.out.find("did you mean --train s.libsvm?"), std::string::npos) << stray.out;
}

}  // namespace
