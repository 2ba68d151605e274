// Issue 14 items 1, 4, 5, 7 through the CLI: warm start (trial 06), early
// stopping with --keep-best, predict on unlabelled input (trial 07) and the
// metrics eval reports. Inputs: small files written here, and the real files
// in ../shared (read in place, never copied).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace ctrain::testing {
namespace {

class DayOneCliTest : public ScratchDirTest {
 protected:
  DayOneCliTest() : ScratchDirTest("day_one_cli") {}
  // Lines [from, to) of the real criteo_deepfm_va10k.libsvm into `name` in the scratch dir (not the repo).
  void Slice(const std::string& name, int from, int to) const {
    Shell("sed -n '" + std::to_string(from + 1) + "," + std::to_string(to) + "p' " + kData +
          "/criteo_deepfm_va10k.libsvm > " + P(name));
  }
  nlohmann::json Json(const std::string& name) const {
    nlohmann::json j = nlohmann::json::parse(Slurp(P(name)), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << name;
    return j;
  }
  static constexpr const char* kModel =
      " --id-base 1 --feature-size 921 --embedding-size 8 --deep-layers 32,32 --dropout 0 --batch-size 128"
      " --intra-op-threads 1 --progress log";
};

TEST_F(DayOneCliTest, WarmStartFromDayZeroBeatsDayOneFromScratch) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  Slice("day0.libsvm", 0, 4000);
  Slice("day1.libsvm", 4000, 8000);
  Slice("va.libsvm", 8000, 10040);
  RunResult r = RunCtrain(std::string("train --train ") + P("day0.libsvm") + " --valid " + P("va.libsvm") + kModel +
                          " --learning-rate 0.001 --epochs 2 --model-dir " + P("m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Without --warm-start-from another input is still refused (a resume must read the same data).
  r = RunCtrain(std::string("train --train ") + P("day1.libsvm") + kModel + " --learning-rate 0.001 --epochs 2 --model-dir " + P("m"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--warm-start-from"), std::string::npos) << r.out;
  // Day 1 in place, warm-started from day 0.
  r = RunCtrain(std::string("train --train ") + P("day1.libsvm") + " --valid " + P("va.libsvm") + kModel +
                " --learning-rate 0.001 --epochs 2 --model-dir " + P("m") + " --warm-start-from " + P("m") + " --metrics-json " + P("w.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warm start from " + P("m") + "/ckpt-"), std::string::npos) << r.out;
  r = RunCtrain(std::string("train --train ") + P("day1.libsvm") + " --valid " + P("va.libsvm") + kModel +
                " --learning-rate 0.001 --epochs 2 --model-dir " + P("cold") + " --metrics-json " + P("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const double warm = Json("w.json")["auc"].get<double>(), cold = Json("c.json")["auc"].get<double>();
  std::printf("valid auc: day1 warm-started %.5f, day1 from scratch %.5f\n", warm, cold);
  EXPECT_GT(warm, cold);
  EXPECT_EQ(Json("w.json")["steps"].get<int64_t>(), 64 + 64);  // 2 x 32 steps of day 0, then day 1's
  // A larger --feature-size keeps the trained rows and initialises the new ones (LibSVM ids keep their meaning).
  const std::string grown = std::string(kModel);
  r = RunCtrain(std::string("train --train ") + P("day1.libsvm") +
                std::string(kModel).replace(grown.find("921"), 3, "1200") + " --epochs 1 --model-dir " + P("big") +
                " --warm-start-from " + P("m") + " --warm-start-optimizer");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("rows [921, 1200) newly initialised; optimizer slots carried over"), std::string::npos) << r.out;
  // Hashed Criteo rows: another bucket count moves every id, refused.
  r = RunCtrain("train --train " + kData + "/criteo_raw_paddlerec_part-0.tsv --feature-size 500 --embedding-size 4"
                " --deep-layers 8 --progress none --model-dir " + P("h"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("train --train " + kData + "/criteo_raw_paddlerec_part-0.tsv --feature-size 600 --embedding-size 4"
                " --deep-layers 8 --progress none --model-dir " + P("h2") + " --warm-start-from " + P("h"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("a different --feature-size (600) moves every hashed id"), std::string::npos) << r.out;
}

TEST_F(DayOneCliTest, EarlyStoppingStopsAtThePatienceAndKeepsTheBest) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  Slice("tr.libsvm", 0, 2000);
  Slice("va.libsvm", 8000, 9000);
  RunResult r = RunCtrain(std::string("train --train ") + P("tr.libsvm") + " --valid " + P("va.libsvm") + kModel +
                          " --epochs 20 --learning-rate 0.05 --early-stopping-metric auc --early-stopping-patience 2"
                          " --keep-best --model-dir " + P("m") + " --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = Json("m.json");
  ASSERT_TRUE(j["early_stopped"].get<bool>()) << r.out;
  const int64_t best = j["best_step"].get<int64_t>(), steps = j["steps"].get<int64_t>();
  EXPECT_EQ(steps, best + 2 * 16) << r.out;  // 16 steps per epoch, evaluated per epoch: patience 2
  EXPECT_LT(steps, 20 * 16);
  EXPECT_NE(r.out.find("early stopping at step " + std::to_string(steps)), std::string::npos) << r.out;
  // The best checkpoint is its own model dir; its eval AUC is the best one reported.
  r = RunCtrain("eval --model-dir " + P("m/best") + " --input " + P("va.libsvm") + " --metrics-json " + P("e.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(Json("e.json")["auc"].get<double>(), j["best_metric"].get<double>(), 1e-9);
  EXPECT_EQ(Json("e.json")["steps"].get<int64_t>(), best);
}

TEST_F(DayOneCliTest, PredictOnTheUnlabelled39ColumnTsvAndUnlabelledLibSvm) {
  const std::string tsv = kSharedCases + "/trial/criteo_test_nolabel_39cols.tsv";
  if (!fs::exists(kData) || !fs::exists(tsv)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  RunResult r = RunCtrain("train --train " + kData + "/criteo_raw_paddlerec_part-0.tsv --feature-size 1000"
                          " --embedding-size 4 --deep-layers 8 --epochs 1 --intra-op-threads 1 --progress none"
                          " --model-dir " + P("raw"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("raw") + " --input " + tsv + " --output-columns id,prediction -o " +
                P("p.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(Slurp(P("p.txt")));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ASSERT_EQ(line.substr(0, line.find('\t')), std::to_string(n)) << line;
    const double p = std::atof(line.substr(line.find('\t') + 1).c_str());
    EXPECT_GT(p, 0.0);
    EXPECT_LT(p, 1.0);
    ++n;
  }
  EXPECT_EQ(n, 3);
  r = RunCtrain("predict --model-dir " + P("raw") + " --input " + tsv + " --output-columns label,prediction -o " +
                P("q.txt"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("the input has no label column"), std::string::npos) << r.out;
  r = RunCtrain("eval --model-dir " + P("raw") + " --input " + tsv);  // eval needs labels
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("expected 40 cells, got 39"), std::string::npos) << r.out;

  // LibSVM without the label column (trial 07: cut -d' ' -f2-): the same predictions as with it.
  Write("va.libsvm", "1 1:0.5 2:1 3:1\n0 1:0.1 2:2 4:1\n1 1:0.9 3:1 4:1\n");
  Write("va_nolabel.libsvm", "1:0.5 2:1 3:1\n1:0.1 2:2 4:1\n1:0.9 3:1 4:1\n");
  r = RunCtrain("train --train " + P("va.libsvm") + " --field-size 3 --id-base 1 --feature-size 5 --embedding-size 2"
                " --deep-layers 4 --intra-op-threads 1 --progress none --model-dir " + P("svm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("svm") + " --input " + P("va.libsvm") + " -o " + P("a.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("svm") + " --input " + P("va_nolabel.libsvm") + " -o " + P("b.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string b = Slurp(P("b.txt"));
  EXPECT_EQ(Slurp(P("a.txt")), b);
  EXPECT_EQ(std::count(b.begin(), b.end(), '\n'), 3);
  // --no-label: a labelled file is then an error naming the line.
  r = RunCtrain("predict --model-dir " + P("svm") + " --no-label --input " + P("va.libsvm") + " -o " + P("c.txt"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(":1:1: expected 'id:value', found '1'"), std::string::npos) << r.out;
}

TEST_F(DayOneCliTest, EvalReportsTheCtrMetrics) {
  if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  Slice("tr.libsvm", 0, 2000);
  Slice("va.libsvm", 8000, 9000);
  RunResult r = RunCtrain(std::string("train --train ") + P("tr.libsvm") + kModel + " --learning-rate 0.001 --model-dir " +
                          P("m"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("eval --model-dir " + P("m") + " --input " + P("va.libsvm") + " --gauc-field 13 --metrics-json " +
                P("e.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = Json("e.json");
  for (const char* k : {"auc", "logloss", "normalized_entropy", "calibration", "pr_auc", "gauc"})
    EXPECT_TRUE(j[k].is_number()) << k << " in " << j.dump();
  EXPECT_NE(r.out.find("normalized_entropy "), std::string::npos) << r.out;
  const double ne = j["normalized_entropy"].get<double>(), ctr = j["label_mean"].get<double>();
  const double h = -(ctr * std::log(ctr) + (1 - ctr) * std::log(1 - ctr));
  EXPECT_NEAR(ne, j["logloss"].get<double>() / h, 1e-9);
  EXPECT_NEAR(j["calibration"].get<double>(), j["prediction_mean"].get<double>() / ctr, 1e-9);
  EXPECT_GT(j["gauc_groups"].get<int64_t>(), 0);
  // Negative downsampling: the model's rate corrects predictions; eval's flag weighs its negatives.
  r = RunCtrain("eval --model-dir " + P("m") + " --input " + P("va.libsvm") +
                " --negative-downsampling 0.5 --metrics-json " + P("d.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json d = Json("d.json");
  EXPECT_NEAR(d["auc"].get<double>(), j["auc"].get<double>(), 1e-12);  // one weight per class: the same ranking
  EXPECT_LT(d["label_mean"].get<double>(), ctr);  // negatives count twice
  // Sample weights (one per line): positives weigh 3, so the weighted CTR is 3P / (3P + N).
  std::string weights;
  int64_t pos = 0, neg = 0;
  std::istringstream va(Slurp(P("va.libsvm")));
  for (std::string line; std::getline(va, line);) {
    const bool positive = line[0] == '1';
    (positive ? pos : neg) += 1;
    weights += positive ? "3\n" : "1\n";
  }
  Write("va.weight", weights);
  r = RunCtrain("eval --model-dir " + P("m") + " --input " + P("va.libsvm") + " --weights " + P("va.weight") +
                " --metrics-json " + P("w.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json w = Json("w.json");
  EXPECT_NEAR(w["label_mean"].get<double>(), 3.0 * pos / (3.0 * pos + neg), 1e-12);
  EXPECT_NEAR(w["auc"].get<double>(), j["auc"].get<double>(), 1e-12);
  Write("short.weight", "1\n1\n");
  r = RunCtrain("eval --model-dir " + P("m") + " --input " + P("va.libsvm") + " --weights " + P("short.weight"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("short.weight: 2 weights (lines) for 1000 examples of --input"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ctrain::testing
