// End to end: `inspect --suggest-spec` -> `train --feature-spec` -> `eval` /
// `predict` (the checkpoint keeps the spec) on the DeepCTR and PaddleRec
// TFRecords, and trial/09's varlen.libsvm with a field map (multi-hot).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "cli/cli_harness.h"

namespace ctrain::testing {
namespace {

constexpr char kSmall[] =
    " --embedding-size 4 --deep-layers 16,16 --dropout 0 --batch-size 32 --learning-rate 0.01"
    " --intra-op-parallelism-threads 1 --progress none";

class FeatureSpecCli : public ScratchDirTest {
 protected:
  FeatureSpecCli() : ScratchDirTest("ctrain_feature_spec_cli") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (!fs::exists(kData)) GTEST_SKIP() << "shared data folder " << kData << " is absent";
  }
};

// The AUC of "... valid auc 0.71 ..." / "auc 0.71" in `out`, or -1.
double Auc(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("auc ([0-9.]+)"))) return -1;
  return std::stod(m[1]);
}

TEST_F(FeatureSpecCli, DeepCtrGzipTFRecordsTrainEvalPredictWithASuggestedSpec) {
  const std::string tr = kData + "/criteo_deepctr_tr.gzip.tfrecords", va = kData + "/criteo_deepctr_va.gzip.tfrecords",
                    te = kData + "/criteo_deepctr_te.gzip.tfrecords";
  RunResult s = RunCtrain("inspect --suggest-spec " + P("spec.json") + " " + tr);
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_NE(s.out.find("wrote a feature spec for 160 records"), std::string::npos) << s.out;
  RunResult t = RunCtrain("train --feature-spec " + P("spec.json") + " --train " + tr + " --valid " + va +
                          " --model-dir " + P("m") + " --epochs 3" + kSmall + " --metrics-json " + P("m.json"));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("train: 160 examples"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("F=39"), std::string::npos) << t.out;
  const std::string metrics = Slurp(P("m.json"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex("\"auc\": ([0-9.]+)"))) << metrics;
  const double auc = std::stod(m[1]);
  EXPECT_GT(auc, 0.0);
  EXPECT_LE(auc, 1.0);
  // eval and predict without the flag: the checkpoint's spec reads the test file.
  RunResult e = RunCtrain("eval --model-dir " + P("m") + " --input " + te);
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_GE(Auc(e.out), 0.0) << e.out;
  EXPECT_NE(e.out.find("20 examples"), std::string::npos) << e.out;
  RunResult p = RunCtrain("predict --model-dir " + P("m") + " --input " + te + " -o " + P("p.txt"));
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const std::string preds = Slurp(P("p.txt"));
  EXPECT_EQ(std::count(preds.begin(), preds.end(), '\n'), 20) << preds.substr(0, 200);
  // Giving the same spec again is accepted; another one is refused.
  RunResult same = RunCtrain("eval --model-dir " + P("m") + " --input " + te + " --feature-spec " + P("spec.json"));
  EXPECT_EQ(same.exit_code, 0) << same.out;
  Write("other.json", R"({"fields": [{"key": "I1", "type": "numeric"}]})");
  RunResult other = RunCtrain("eval --model-dir " + P("m") + " --input " + te + " --feature-spec " + P("other.json"));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.out.find("differs from the feature spec"), std::string::npos) << other.out;
}

TEST_F(FeatureSpecCli, PaddleRecTFRecordTrainsWithASuggestedSpec) {
  const std::string f = kData + "/criteo_paddlerec_wd.tfrecord";
  RunResult s = RunCtrain("inspect --suggest-spec " + P("spec.json") + " " + f);
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_NE(s.out.find("'dense_feature' has values up to 326904"), std::string::npos) << s.out;
  RunResult t = RunCtrain("train --feature-spec " + P("spec.json") + " --train " + f + " --valid " + f +
                          " --model-dir " + P("m") + " --epochs 3" + kSmall);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("train: 100 examples"), std::string::npos) << t.out;
  const double auc = Auc(t.out);
  EXPECT_GT(auc, 0.5) << t.out;  // validation on the training rows
}

TEST_F(FeatureSpecCli, VarlenLibSvmTrainsWithAFieldMap) {
  const std::string f = kSharedCases + "/trial/varlen.libsvm";
  if (!fs::exists(f)) GTEST_SKIP() << f << " is absent";
  // trial/09's command: fixed-width fields cannot read it; the error says what can.
  RunResult fixed = RunCtrain("train --train " + f + " --id-base 1 --feature-size 200 --field-size 10" + kSmall);
  EXPECT_NE(fixed.exit_code, 0);
  EXPECT_NE(fixed.out.find("varlen.libsvm:"), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("expected 10 'id:value' pairs, found "), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("(if every line has 5 pairs, pass --field-size 5; lines with a varying number of pairs: "
                            "give a --feature-spec with a field map"),
            std::string::npos)
      << fixed.out;
  Write("map.toml", R"(input = "libsvm"
id_base = 1
[[fields]]
name = "a"
ids = [1, 50]
pooling = "mean"
[[fields]]
name = "b"
ids = [51, 100]
pooling = "mean"
[[fields]]
name = "c"
ids = [101, 150]
[[fields]]
name = "d"
ids = [151, 200]
)");
  RunResult t = RunCtrain("train --feature-spec " + P("map.toml") + " --train " + f + " --valid " + f +
                          " --model-dir " + P("m") + " --epochs 30" + kSmall);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("F=4"), std::string::npos) << t.out;
  EXPECT_GT(Auc(t.out), 0.8) << t.out;  // 50 rows, memorised
  RunResult e = RunCtrain("eval --model-dir " + P("m") + " --input " + f);
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_GT(Auc(e.out), 0.8) << e.out;
  // The seed layout cannot hold multi-hot rows: convert says so.
  RunResult c = RunCtrain("convert -i " + f + " --feature-spec " + P("map.toml") + " -o " + P("x.tfrecord"));
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.out.find("multi-hot fields"), std::string::npos) << c.out;
  // A spec is read in memory; streaming it is refused up front.
  RunResult st = RunCtrain("train --feature-spec " + P("map.toml") + " --train " + f + " --input-mode stream" + kSmall);
  EXPECT_NE(st.exit_code, 0);
  EXPECT_NE(st.out.find("--feature-spec"), std::string::npos) << st.out;
}

TEST_F(FeatureSpecCli, LibFfmTrainsWithASuggestedSpec) {
  const std::string tr = kData + "/criteo_xlearn_small_train.libffm", te = kData + "/criteo_xlearn_small_test.libffm";
  RunResult s = RunCtrain("inspect --suggest-spec " + P("ffm.json") + " " + tr);
  ASSERT_EQ(s.exit_code, 0) << s.out;
  RunResult t = RunCtrain("train --feature-spec " + P("ffm.json") + " --train " + tr + " --valid " + te +
                          " --model-dir " + P("m") + " --epochs 2" + kSmall);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("train: 200 examples from 1 file(s), CTR 0.2400, 18 fields multi-hot"), std::string::npos)
      << t.out;
  const double auc = Auc(t.out);
  EXPECT_GE(auc, 0.0) << t.out;
  EXPECT_LE(auc, 1.0) << t.out;
}

}  // namespace
}  // namespace ctrain::testing
