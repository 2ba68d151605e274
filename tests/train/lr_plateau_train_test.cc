// TrainOptions::lr_plateau() (--lr-decay plateau) in the trainer: the rate
// drops at the evaluations the scheduler says, the next steps run at it
// exactly, it composes with early stopping and keep_best on the same
// evaluation, and a run interrupted after an evaluation resumes bit-identical
// to an uninterrupted one (its state is in the checkpoint meta).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("lr_plateau_train", name); }

TrainOptions Small() {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16};
  o.model.dropout = 0.0f;
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = 0.05f;
  o.batch_size = 64;
  o.seed = 7;
  o.epochs = 2;  // 10 steps per epoch
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.eval_every_steps = 2;
  o.lr_decay = optim::LrDecay::kPlateau;
  o.lr_plateau_factor = 0.5;
  o.lr_plateau_patience = 0;
  o.lr_plateau_min_delta = 1.0;  // no evaluation after the first improves by 1: each one is a plateau
  return o;
}

const Dataset& TrainRows() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 640, 2000));
  return *d;
}
const Dataset& Valid() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 640, 256, 2000));
  return *d;
}

struct Outcome {
  Status status;
  TrainResult r;
  std::vector<std::string> log;
};

// One run (restoring from model_dir); `stop_at` > 0 sets the stop flag when the line `stop_at` is logged.
Outcome RunOnce(const TrainOptions& o, const Dataset* valid = &Valid(), const std::string& stop_at = "") {
  Outcome run;
  auto t = Trainer::Create(o);
  if (!t.ok()) return {t.status(), {}, {}};
  bool restored = false;
  run.status = (*t)->Restore(&restored);
  if (!run.status.ok()) return run;
  std::atomic<int> flag{0};
  (*t)->set_stop_flag(&flag);
  (*t)->set_log_sink([&](const std::string& line) {
    run.log.push_back(line);
    if (!stop_at.empty() && line.find(stop_at) != std::string::npos) flag = SIGTERM;
  });
  run.status = (*t)->Train(TrainRows(), valid, &run.r);
  return run;
}

void ExpectSameTensors(const std::string& a_dir, const std::string& b_dir) {
  StatusOr<Checkpoint> a = LoadLatestCheckpoint(a_dir), b = LoadLatestCheckpoint(b_dir);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->step, b->step);
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const NamedTensor& x : a->tensors) {
    const NamedTensor* y = b->Find(x.name);
    ASSERT_NE(y, nullptr) << x.name;
    ASSERT_EQ(x.f32.size(), y->f32.size()) << x.name;
    EXPECT_EQ(0, std::memcmp(x.f32.data(), y->f32.data(), x.f32.size() * sizeof(float))) << x.name;
  }
}

TEST(LrPlateauTraining, DropsAtEachPlateauAndReportsTheRates) {
  TrainOptions o = Small();
  o.max_steps = 9;
  Outcome run = RunOnce(o);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  // Evaluations at steps 2 (the first: the best), 4, 6, 8: a drop at each of the last three. The final
  // evaluation (step 9, the run stopped by max_steps) reports the model and steps nothing.
  const double b = 0.05f;
  ASSERT_EQ(run.r.lr_drops.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(run.r.lr_drops[k].step, 4 + 2 * k);
    EXPECT_EQ(run.r.lr_drops[k].lr, b / (2 << k));
  }
  EXPECT_EQ(run.r.learning_rate, b / 8);
  EXPECT_TRUE(run.r.evaluated);
  int lines = 0;
  for (const std::string& l : run.log)
    if (l.find("lr plateau at step 4: valid logloss has not improved") != std::string::npos) {
      EXPECT_NE(l.find("learning rate 0.05 -> 0.025"), std::string::npos) << l;
      ++lines;
    }
  EXPECT_EQ(lines, 1);
}

TEST(LrPlateauTraining, TheStepsAfterADropRunAtTheLoweredRateExactly) {
  // Plateau: steps 1-4 at lr, the drop at the evaluation of step 4, steps 5-6 at lr / 2.
  TrainOptions o = Small();
  o.max_steps = 6;
  o.model_dir = TempDir("plateau6");
  Outcome a = RunOnce(o);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  ASSERT_EQ(a.r.lr_drops.size(), 2u);  // at 4, and at 6 (no step follows it)
  // The same by hand: 4 steps at lr, then resumed for 2 steps at lr / 2 (no schedule).
  TrainOptions h = Small();
  h.lr_decay = optim::LrDecay::kNone;
  h.lr_plateau_factor = 0.1;
  h.lr_plateau_patience = 10;
  h.lr_plateau_min_delta = 1e-4;
  h.eval_every_steps = 0;
  h.model_dir = TempDir("by_hand");
  h.max_steps = 4;
  ASSERT_TRUE(RunOnce(h, nullptr).status.ok());
  h.max_steps = 6;
  h.optimizer.learning_rate = 0.025f;  // 0.05f / 2 exactly
  ASSERT_TRUE(RunOnce(h, nullptr).status.ok());
  ExpectSameTensors(o.model_dir, h.model_dir);
}

TEST(LrPlateauTraining, SeesTheEvaluationEarlyStoppingAndKeepBestSee) {
  TrainOptions o = Small();
  o.model_dir = TempDir("with_early_stopping");
  o.lr_plateau_patience = 1;  // the drop at the 2nd evaluation without improvement
  o.early_stopping_metric = "auc";  // also the plateau's metric (none of its own)
  o.early_stopping_patience = 3;
  o.early_stopping_min_delta = 1.0;
  o.keep_best = true;
  Outcome run = RunOnce(o);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  // Evaluations at 2 (best), 4, 6 (the plateau's 2nd bad one: drop), 8 (early stopping's 3rd: stop).
  EXPECT_TRUE(run.r.early_stopped);
  EXPECT_EQ(run.r.steps, 8);
  EXPECT_EQ(run.r.best_step, 2);
  ASSERT_EQ(run.r.lr_drops.size(), 1u);
  EXPECT_EQ(run.r.lr_drops[0].step, 6);
  bool named_auc = false;
  for (const std::string& l : run.log) named_auc |= l.find("lr plateau at step 6: valid auc") != std::string::npos;
  EXPECT_TRUE(named_auc);
  // Checkpoints hold the state the evaluation of their step left: best/ at step 2 before any drop, the last
  // one after the drop at 6 and the bad evaluation at 8.
  StatusOr<Checkpoint> best = LoadLatestCheckpoint(o.model_dir + "/best");
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_EQ(best->step, 2);
  EXPECT_EQ(best->meta["lr_plateau"]["lr"].get<double>(), static_cast<double>(0.05f));
  EXPECT_EQ(best->meta["lr_plateau"]["metric"], "auc");
  StatusOr<Checkpoint> last = LoadLatestCheckpoint(o.model_dir);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->step, 8);
  const nlohmann::json& p = last->meta["lr_plateau"];
  EXPECT_EQ(p["lr"].get<double>(), 0.05f / 2.0);
  EXPECT_EQ(p["num_bad_evals"], 1);
  EXPECT_EQ(p["reductions"], 1);
  EXPECT_EQ(p["drops"], nlohmann::json::parse(R"([{"step": 6, "lr": 0.02500000037252903}])"));
}

TEST(LrPlateauTraining, ARunInterruptedAfterAnEvaluationResumesBitIdentical) {
  TrainOptions o = Small();
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.01f;
  o.model.dropout = 0.1f;
  o.lr_plateau_patience = 1;
  o.lr_plateau_cooldown = 1;
  o.keep_best = true;
  o.model_dir = TempDir("straight");
  Outcome straight = RunOnce(o);
  ASSERT_TRUE(straight.status.ok()) << straight.status.ToString();
  ASSERT_EQ(straight.r.steps, 20);
  // e2 best; e4 bad 1; e6 bad 2: drop, cooldown 1; e8 in the cooldown; e10 bad 1; e12 drop; ...
  ASSERT_GE(straight.r.lr_drops.size(), 2u);
  EXPECT_EQ(straight.r.lr_drops[0].step, 6);
  EXPECT_EQ(straight.r.lr_drops[1].step, 12);

  for (const char* at : {"eval step 4:", "eval step 8:"}) {  // one bad evaluation pending; in the cooldown
    SCOPED_TRACE(at);
    TrainOptions a = o;
    a.model_dir = TempDir(std::string("interrupted_") + at[10]);
    Outcome first = RunOnce(a, &Valid(), at);
    ASSERT_EQ(first.status.code(), StatusCode::kCancelled) << first.status.ToString();
    Outcome resumed = RunOnce(a);
    ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString();
    EXPECT_TRUE(resumed.r.restored);
    EXPECT_EQ(resumed.r.steps, 20);
    ASSERT_EQ(resumed.r.lr_drops.size(), straight.r.lr_drops.size());
    for (size_t k = 0; k < resumed.r.lr_drops.size(); ++k) {
      EXPECT_EQ(resumed.r.lr_drops[k].step, straight.r.lr_drops[k].step);
      EXPECT_EQ(resumed.r.lr_drops[k].lr, straight.r.lr_drops[k].lr);
    }
    EXPECT_EQ(resumed.r.learning_rate, straight.r.learning_rate);
    EXPECT_EQ(resumed.r.eval.auc, straight.r.eval.auc);
    EXPECT_EQ(resumed.r.eval.logloss, straight.r.eval.logloss);
    ExpectSameTensors(o.model_dir, a.model_dir);
    ExpectSameTensors(o.model_dir + "/best", a.model_dir + "/best");
  }
}

TEST(LrPlateauTraining, RefusedWithoutValidationDataOrWithHogwildAndItsParametersAlone) {
  TrainOptions o = Small();
  Outcome run = RunOnce(o, nullptr);
  EXPECT_EQ(run.status.message(), "--lr-decay plateau needs validation data (--valid): it reduces the learning rate "
                                  "when a validation metric stops improving");
  o.parallel.hogwild = 2;
  EXPECT_EQ(o.Validate().message(), "--lr-decay needs synchronous training (not --hogwild)");
  TrainOptions p = Small();
  p.lr_decay = optim::LrDecay::kCosine;
  p.lr_decay_steps = 10;
  EXPECT_EQ(p.Validate().message(), "--lr-plateau-factor needs --lr-decay plateau (--lr-schedule plateau), this run "
                                    "has --lr-decay cosine");
  TrainOptions m = Small();
  m.lr_plateau_metric = "gauc";
  EXPECT_EQ(m.Validate().message(), "--lr-plateau-metric gauc needs --gauc-field (the field whose id groups examples)");
  m.lr_plateau_metric = "accuracy";
  EXPECT_EQ(m.Validate().message(),
            "--lr-plateau-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, got 'accuracy'");
}

}  // namespace
}  // namespace ctrain::train
