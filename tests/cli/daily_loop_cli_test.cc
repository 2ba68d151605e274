// Issue 20, the daily retraining loop through the CLI: a rerun of a finished day has nothing to do
// (shared/cases/trial3/05), and a vocabulary grows append-only while a warm start checks that the new
// feature map extends the model's (shared/cases/trial3/02). Inputs: slices of the real files in ../shared.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cli_harness.h"

namespace ctrain::testing {
namespace {

class DailyLoopCliTest : public ScratchDirTest {
 protected:
  DailyLoopCliTest() : ScratchDirTest("daily_loop_cli") {}
  static int64_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }
};

TEST_F(DailyLoopCliTest, ARerunOfAFinishedDayHasNothingToDoUnlessForced) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  const std::string src = kData + "/criteo_deepfm_va10k.libsvm";
  Shell("head -2000 " + src + " > day0.libsvm && sed -n 2001,4000p " + src + " > day1.libsvm", P(""));
  const std::string a = " --id-base 1 --feature-size 922 --embedding-size 8 --deep-layers 32 --epochs 1 "
                        "--batch-size 256 --progress none --intra-op-threads 1 --model-dir runs/m";
  RunResult r = RunCtrain("train --train day0.libsvm" + a, P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(fs::exists(P("runs/m/ckpt-16.bin")));  // 8 steps of day 0, 8 of day 1
  // The scheduler's retry: nothing trains, exit 0.
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m", P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("nothing to do: runs/m already finished on these inputs (step 16; 1 input file and "),
            std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(P("runs/m/ckpt-24.bin")));
  // A touched but identical file is the same input.
  Shell("touch -d '2001-01-01' day1.libsvm", P(""));
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m", P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("nothing to do"), std::string::npos) << r.out;
  // Another setting that decides the model trains (here: the learning rate).
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m --learning-rate 0.001", P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("nothing to do"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(P("runs/m/ckpt-24.bin")));
  // --force trains the same day again.
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m --learning-rate 0.001 --force", P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("nothing to do"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(P("runs/m/ckpt-32.bin")));
  // Day 2's file (changed content, same name) trains, warm-started from day 1.
  Shell("sed -n 4001,6000p " + src + " > day1.libsvm", P(""));
  r = RunCtrain("train --train day1.libsvm" + a + " --warm-start-from runs/m --learning-rate 0.001", P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(P("runs/m/ckpt-40.bin")));
  // --force where it cannot apply is refused by name.
  r = RunCtrain("train --train day1.libsvm" + a + " --force --ps 127.0.0.1:1", P(""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--force is not supported with parameter servers"), std::string::npos) << r.out;
}

TEST_F(DailyLoopCliTest, AVocabularyGrowsAppendOnlyAndAWarmStartRefusesARebuiltOne) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  const std::string src = kData + "/criteo_raw_paddlerec_part-0.tsv";
  Shell("head -50 " + src + " > day0.tsv && tail -n 50 " + src + " > day1.tsv", P(""));
  RunResult r = RunCtrain("convert -i day0.tsv -o day0.libsvm --output-format libsvm --vocab-min-count 1", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("convert -i day0.tsv day1.tsv -o d01.libsvm --output-format libsvm --vocab-min-count 1", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string day0_map = Slurp(P("day0.libsvm.feature_map.txt"));
  const int64_t day0_ids = Lines(day0_map), d01_ids = Lines(Slurp(P("d01.libsvm.feature_map.txt")));
  ASSERT_EQ(day0_ids, 713);
  ASSERT_EQ(d01_ids, 1261);
  const std::string a = " --format libsvm --field-size 39 --embedding-size 8 --deep-layers 32 --epochs 1 "
                        "--batch-size 10 --progress none --intra-op-threads 1";
  r = RunCtrain("train --train day0.libsvm" + a + " --feature-size 713 --model-dir runs/day0", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("the ids of day0.libsvm come from the feature map beside it, day0.libsvm.feature_map.txt"),
            std::string::npos) << r.out;
  // The rebuilt vocabulary renumbers day 0's categories: refused, naming both maps and the way out.
  r = RunCtrain("train --train d01.libsvm" + a + " --feature-size 1261 --model-dir runs/d01 --warm-start-from runs/day0",
                P(""));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("d01.libsvm.feature_map.txt (1261 entries) does not extend the map the model in runs/day0 "
                       "was trained with, " + P("day0.libsvm.feature_map.txt") + " (713 entries)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ctrain convert --feature-map " + P("day0.libsvm.feature_map.txt")), std::string::npos)
      << r.out;
  // Day 1's rows cut from it, with no map at all: refused too.
  Shell("tail -n 50 d01.libsvm > day1.libsvm", P(""));
  r = RunCtrain("train --train day1.libsvm" + a + " --feature-size 1261 --model-dir runs/day1 --warm-start-from runs/day0",
                P(""));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("this run's --train has no feature map"), std::string::npos) << r.out;
  // --feature-map-out with nothing to write is refused, not ignored.
  r = RunCtrain("convert -i day1.tsv -o z.libsvm --output-format libsvm --feature-map-out z.map", P(""));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--feature-map-out z.map: no vocabulary to write"), std::string::npos) << r.out;
  // The append-only extension: day 0's entries unchanged (a prefix of the new map), new ones after them.
  r = RunCtrain("convert -i day1.tsv -o y.libsvm --output-format libsvm --feature-map day0.libsvm.feature_map.txt "
                "--vocab-min-count 1 --feature-map-out y.map", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string y_map = Slurp(P("y.map"));
  const int64_t y_ids = Lines(y_map);
  EXPECT_EQ(y_map.substr(0, day0_map.size()), day0_map);
  EXPECT_GT(y_ids, day0_ids);
  EXPECT_NE(r.out.find("day0.libsvm.feature_map.txt's 713 unchanged, " + std::to_string(y_ids - 713) + " new"),
            std::string::npos) << r.out;
  // Without --vocab-min-count (every new category gets an id): the same map.
  r = RunCtrain("convert -i day1.tsv -o y2.libsvm --output-format libsvm --feature-map day0.libsvm.feature_map.txt "
                "--feature-map-out y2.map", P(""));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Slurp(P("y2.map")), y_map);
  EXPECT_EQ(Slurp(P("y2.libsvm")), Slurp(P("y.libsvm")));
  // The warm start onto the extended map is accepted and keeps day 0's rows.
  std::string a_log = a;  // the warm start's line is a log line: --progress log instead of none
  a_log.replace(a_log.find("--progress none"), 15, "--progress log");
  r = RunCtrain("train --train y.libsvm --feature-map y.map" + a_log + " --feature-size " + std::to_string(y_ids) +
                    " --model-dir runs/y --warm-start-from runs/day0",
                P(""));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("embedding rows [0, 713) from the checkpoint"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ctrain::testing
