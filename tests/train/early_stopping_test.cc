// TrainOptions early stopping and keep_best (trainer.h TrainResult::early_stopped),
// and the learning-rate decay as the trainer applies it.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

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
  o.epochs = 10;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

const Dataset& Train() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 640, 2000));
  return *d;
}
const Dataset& Valid() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 640, 256, 2000));
  return *d;
}

std::vector<float> Predictions(Trainer& t) {
  std::vector<float> p;
  EXPECT_TRUE(t.Predict(Valid(), &p).ok());
  return p;
}

TEST(EarlyStopping, StopsAtThePatienceLimitAndKeepsTheBestCheckpoint) {
  const std::string dir = testing::TestTempDir("early_stop", "run");
  TrainOptions o = Small(0.05f);
  o.model_dir = dir;
  o.eval_every_steps = 1;
  o.early_stopping_metric = "auc";
  o.early_stopping_patience = 2;
  o.early_stopping_min_delta = 1.0;  // no later evaluation can improve on the first by more than 1
  o.keep_best = true;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TrainResult r;
  ASSERT_TRUE((*t)->Train(Train(), &Valid(), &r).ok());
  // Step 1 sets the best; steps 2 and 3 do not improve: 2 evaluations = the patience.
  EXPECT_TRUE(r.early_stopped);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.best_step, 1);
  // The latest checkpoint is the stopping step, the best one step 1 in DIR/best.
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + CheckpointFileName(3)));
  StatusOr<Checkpoint> best = LoadLatestCheckpoint(dir + "/best");
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_EQ(best->step, 1);
  // The best checkpoint holds the parameters of step 1: the same as a 1-step run.
  TrainOptions one = Small(0.05f);
  one.max_steps = 1;
  auto t1 = Trainer::Create(one);
  ASSERT_TRUE(t1.ok());
  TrainResult r1;
  ASSERT_TRUE((*t1)->Train(Train(), nullptr, &r1).ok());
  ParallelOptions par;
  par.intra_op_threads = 1;
  auto loaded = LoadTrainerFromCheckpoint(dir + "/best", par);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(Predictions(**loaded), Predictions(**t1));
  EXPECT_NEAR(r.best_metric, (*(*loaded)->Evaluate(Valid())).auc, 1e-12);

  // Running the same job again: it stopped early, so there is nothing left to do.
  auto again = Trainer::Create(o);
  ASSERT_TRUE(again.ok());
  bool restored = false;
  ASSERT_TRUE((*again)->Restore(&restored).ok());
  ASSERT_TRUE(restored);
  TrainResult r2;
  ASSERT_TRUE((*again)->Train(Train(), &Valid(), &r2).ok());
  EXPECT_EQ(r2.steps_this_run, 0);
  EXPECT_TRUE(r2.early_stopped);
  EXPECT_EQ(r2.best_step, 1);
}

TEST(EarlyStopping, ImprovingMetricDoesNotStop) {
  // logloss on the validation set falls over the first epochs of this job.
  TrainOptions o = Small(0.01f);
  o.epochs = 3;
  o.early_stopping_metric = "logloss";
  o.early_stopping_patience = 1;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  TrainResult r;
  ASSERT_TRUE((*t)->Train(Train(), &Valid(), &r).ok());
  EXPECT_FALSE(r.early_stopped);
  EXPECT_EQ(r.steps, 30);
  EXPECT_EQ(r.best_step, 30);
}

TEST(EarlyStopping, OptionsAreValidated) {
  TrainOptions o = Small(0.1f);
  o.early_stopping_metric = "accuracy";
  o.early_stopping_patience = 1;
  EXPECT_EQ(o.Validate().message(),
            "--early-stopping-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, got 'accuracy'");
  o.early_stopping_metric = "auc";
  o.early_stopping_patience = 0;
  EXPECT_EQ(o.Validate().message(),
            "--early-stopping-metric auc needs --early-stopping-patience >= 1 (evaluations without improvement)");
  o.early_stopping_metric.clear();
  o.early_stopping_patience = 3;
  EXPECT_EQ(o.Validate().message(), "--early-stopping-patience needs --early-stopping-metric (e.g. auc)");
  o.early_stopping_patience = 0;
  o.keep_best = true;
  EXPECT_EQ(o.Validate().message(), "--keep-best needs --model-dir");
}

// The decay as applied: step 2 of an exponential decay by 0.5 per step equals a
// run whose second step uses lr / 2 (resumed from the first step's checkpoint).
TEST(LrDecay, TrainerAppliesTheScheduledRateOfEachStep) {
  TrainOptions decayed = Small(0.1f);
  decayed.lr_decay = optim::LrDecay::kExponential;
  decayed.lr_decay_steps = 1;
  decayed.lr_decay_rate = 0.5f;
  decayed.max_steps = 2;
  auto a = Trainer::Create(decayed);
  ASSERT_TRUE(a.ok());
  TrainResult ra;
  ASSERT_TRUE((*a)->Train(Train(), nullptr, &ra).ok());

  const std::string dir = testing::TestTempDir("lr_decay", "manual");
  TrainOptions first = Small(0.1f);
  first.model_dir = dir;
  first.max_steps = 1;
  auto b = Trainer::Create(first);
  ASSERT_TRUE(b.ok());
  TrainResult rb;
  ASSERT_TRUE((*b)->Train(Train(), nullptr, &rb).ok());
  TrainOptions second = Small(0.05f);
  second.model_dir = dir;
  second.max_steps = 2;
  auto c = Trainer::Create(second);
  ASSERT_TRUE(c.ok());
  bool restored = false;
  ASSERT_TRUE((*c)->Restore(&restored).ok());
  ASSERT_TRUE(restored);
  TrainResult rc;
  ASSERT_TRUE((*c)->Train(Train(), nullptr, &rc).ok());
  EXPECT_EQ(Predictions(**a), Predictions(**c));
  // Without the decay the second step differs (the comparison can fail).
  TrainOptions flat = Small(0.1f);
  flat.max_steps = 2;
  auto d = Trainer::Create(flat);
  ASSERT_TRUE(d.ok());
  TrainResult rd;
  ASSERT_TRUE((*d)->Train(Train(), nullptr, &rd).ok());
  EXPECT_NE(Predictions(**a), Predictions(**d));
}

}  // namespace
}  // namespace ctrain::train
