// TrainOptions::negative_downsampling_rate: the model's predictions q become
// q / (q + (1 - q) / rate) in Predict and Evaluate, also after a reload from
// the checkpoint (meta "negative_downsampling_rate"); training is unchanged.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ctrain/train/ctr_metrics.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

TEST(NegativeDownsampling, PredictionsAreCorrectedAndTheRateIsRecorded) {
  const Dataset data = *MakeSynthDataset(9, 0, 400, 2000);
  auto run = [&](double rate, const std::string& dir) {
    TrainOptions o;
    o.model.feature_size = 2000;
    o.model.field_size = 39;
    o.model.embedding_size = 4;
    o.model.deep_layers = {8};
    o.parallel.intra_op_threads = 1;
    o.progress = ProgressMode::kNone;
    o.max_steps = 4;
    o.negative_downsampling_rate = rate;
    o.model_dir = dir;
    auto t = Trainer::Create(o);
    EXPECT_TRUE(t.ok());
    TrainResult r;
    EXPECT_TRUE((*t)->Train(data, nullptr, &r).ok());
    std::vector<float> p;
    EXPECT_TRUE((*t)->Predict(data, &p).ok());
    return p;
  };
  const std::string dir = testing::TestTempDir("neg_ds", "m");
  const std::vector<float> q = run(1.0, testing::TestTempDir("neg_ds", "plain"));
  const std::vector<float> p = run(0.25, dir);
  ASSERT_EQ(p.size(), q.size());
  for (size_t i = 0; i < p.size(); ++i)
    ASSERT_EQ(p[i], static_cast<float>(CorrectDownsampledProbability(q[i], 0.25))) << i;
  EXPECT_LT(p[0], q[0]);
  ParallelOptions par;
  par.intra_op_threads = 1;
  auto loaded = LoadTrainerFromCheckpoint(dir, par);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->options().negative_downsampling_rate, 0.25);
  std::vector<float> again;
  ASSERT_TRUE((*loaded)->Predict(data, &again).ok());
  EXPECT_EQ(again, p);
}

}  // namespace
}  // namespace ctrain::train
