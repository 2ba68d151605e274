// train/sample_weights.h and Trainer::set_eval_weights: weighted evaluation
// equals ComputeCtrMetrics with the same weights on the same predictions.
#include "ctrain/train/sample_weights.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <vector>

#include "ctrain/io/file.h"
#include "ctrain/train/ctr_metrics.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::TestTempDir("sample_weights", "files") + "/" + name;
  EXPECT_TRUE(io::WriteStringToFileAtomic(path, text).ok());
  return path;
}

TEST(SampleWeights, OnePerLine) {
  StatusOr<std::vector<float>> w = ReadSampleWeights(Write("a.weight", "1\n0.5\r\n 3 \n0\n"));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(*w, (std::vector<float>{1, 0.5f, 3, 0}));
  const std::string bad = Write("b.weight", "1\n\n2\n");
  EXPECT_EQ(ReadSampleWeights(bad).status().message(), bad + ":2: weight '' is not a finite number >= 0");
  const std::string neg = Write("c.weight", "1\n-2\n");
  EXPECT_EQ(ReadSampleWeights(neg).status().message(), neg + ":2: weight '-2' is not a finite number >= 0");
  EXPECT_EQ(ReadSampleWeights(Write("d.weight", "nan\n")).status().code(), StatusCode::kInvalidArgument);
}

TEST(SampleWeights, WeightedEvaluationEqualsTheWeightedMetrics) {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {8};
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.max_steps = 5;
  const Dataset data = *MakeSynthDataset(5, 0, 500, 2000);
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  TrainResult r;
  ASSERT_TRUE((*t)->Train(data, nullptr, &r).ok());
  std::vector<float> probs, weights;
  ASSERT_TRUE((*t)->Predict(data, &probs).ok());
  for (int64_t i = 0; i < data.size(); ++i) weights.push_back(static_cast<float>(1 + i % 4));
  (*t)->set_eval_weights(weights);
  StatusOr<EvalResult> e = (*t)->Evaluate(data);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  StatusOr<CtrMetrics> m = ComputeCtrMetrics(probs, data.label_span(), weights, {});
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(e->auc, m->auc);
  EXPECT_DOUBLE_EQ(e->logloss, m->logloss);
  EXPECT_DOUBLE_EQ(e->pr_auc, m->pr_auc);
  EXPECT_DOUBLE_EQ(e->label_mean, m->label_mean);
  // The weights matter (the comparison can fail).
  StatusOr<CtrMetrics> unweighted = ComputeCtrMetrics(probs, data.label_span(), {}, {});
  EXPECT_NE(e->logloss, unweighted->logloss);
  weights.pop_back();
  (*t)->set_eval_weights(weights);
  EXPECT_EQ((*t)->Evaluate(data).status().message(),
            "sample weights: 499 weights for 500 examples (one weight per example, in order)");
}

TEST(SampleWeightsTest, ACountThatDiffersNamesTheFile) {
  const std::string dir = ctrain::testing::TestTempDir("sample_weights", "count");
  const std::string path = dir + "/w2.txt";
  std::ofstream(path) << "1\n2\n0.5\n";
  StatusOr<std::vector<float>> w = ReadSampleWeightsFor(path, 4, "--input va.libsvm");
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(),
            path + ": 3 weights (lines) for 4 examples of --input va.libsvm; one weight per example, in order");
  w = ReadSampleWeightsFor(path, 3, "x");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(*w, (std::vector<float>{1.0f, 2.0f, 0.5f}));
}

}  // namespace
}  // namespace ctrain::train
