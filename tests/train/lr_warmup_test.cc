// TrainOptions::lr_warmup_steps (Horovod's learning-rate warmup): the rate of
// step s is from + (to - from) * min(1, s / W) on every optimizer (dense and
// both embedding tables).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ctrain/train/trainer.h"

namespace ctrain::train {
namespace {

TrainOptions Small(float lr) {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16};
  o.model.dropout = 0.0f;
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = lr;
  o.batch_size = 64;
  o.seed = 7;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

const Dataset& Data() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 640, 2000));
  return *d;
}

// Predictions after `steps` steps of `o`.
std::vector<float> After(TrainOptions o, int64_t steps) {
  o.max_steps = steps;
  o.epochs = 10;
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  TrainResult r;
  EXPECT_TRUE((*t)->Train(Data(), nullptr, &r).ok());
  EXPECT_EQ(r.steps, steps);
  std::vector<float> p;
  EXPECT_TRUE((*t)->Predict(Data(), &p).ok());
  return p;
}

TEST(LrWarmup, FirstStepUsesTheRampedRateAndTheRampEndsAtTheTarget) {
  const float from = 0.02f, to = 0.1f;
  TrainOptions warm = Small(to);
  warm.lr_warmup_steps = 4;
  warm.lr_warmup_from = from;
  // Step 1 of 4: from + (to - from) / 4, on the dense and the sparse parameters alike.
  const float lr1 = static_cast<float>(from + (static_cast<double>(to) - from) * 0.25);
  EXPECT_EQ(After(warm, 1), After(Small(lr1), 1));
  // A different rate gives different parameters (the comparison can fail).
  EXPECT_NE(After(warm, 1), After(Small(to), 1));
  // From == to: no ramp at all.
  TrainOptions flat = Small(to);
  flat.lr_warmup_steps = 4;
  flat.lr_warmup_from = to;
  EXPECT_EQ(After(flat, 6), After(Small(to), 6));
}

TEST(LrWarmup, RefusedWithHogwildAndNegativeSteps) {
  TrainOptions o = Small(0.1f);
  o.lr_warmup_steps = -1;
  EXPECT_NE(o.Validate().ToString().find("--lr-warmup-steps must be >= 0, got -1"), std::string::npos);
  o.lr_warmup_steps = 3;
  o.parallel.hogwild = 2;
  EXPECT_NE(o.Validate().ToString().find("--lr-warmup-steps needs synchronous training"), std::string::npos);
}

}  // namespace
}  // namespace ctrain::train
