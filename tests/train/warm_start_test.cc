// Warm start (TrainOptions::warm_start_from, Trainer::WarmStart) versus
// resume: a new run from another run's parameters, on other data, possibly
// with a larger feature_size; and the same run continued exactly.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <memory>
#include <vector>

#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

TrainOptions Small(int64_t feature_size = 2000, const std::string& opt = "adam") {
  TrainOptions o;
  o.model.feature_size = feature_size;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16};
  o.model.dropout = 0.0f;
  o.optimizer.name = opt;
  o.optimizer.learning_rate = 0.01f;
  o.batch_size = 64;
  o.seed = 7;
  o.epochs = 1;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

const Dataset& Day0() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 640, 2000));
  return *d;
}
const Dataset& Day1() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 640, 448, 2000));
  return *d;
}

std::vector<float> Predictions(Trainer& t, const Dataset& d = Day1()) {
  std::vector<float> p;
  EXPECT_TRUE(t.Predict(d, &p).ok());
  return p;
}

std::unique_ptr<Trainer> Make(const TrainOptions& o) {
  auto t = Trainer::Create(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Trains day 0 into `dir`; returns its predictions on day 1.
std::vector<float> TrainDay0(const std::string& dir) {
  TrainOptions o = Small();
  o.model_dir = dir;
  auto t = Make(o);
  TrainResult r;
  EXPECT_TRUE(t->Train(Day0(), nullptr, &r).ok());
  EXPECT_EQ(r.steps, 10);
  return Predictions(*t);
}

const NamedTensor& Tensor(const Checkpoint& c, const std::string& name) {
  static const NamedTensor empty;
  const NamedTensor* t = c.Find(name);
  EXPECT_NE(t, nullptr) << name;
  return t != nullptr ? *t : empty;
}

TEST(WarmStart, StartsFromTheParametersAndAcceptsOtherData) {
  const std::string day0 = testing::TestTempDir("warm", "day0"), day1 = testing::TestTempDir("warm", "day1");
  const std::vector<float> p0 = TrainDay0(day0);
  TrainOptions o = Small();
  o.model_dir = day1;
  o.warm_start_from = day0;
  auto t = Make(o);
  bool restored = true;
  ASSERT_TRUE(t->Restore(&restored).ok());
  EXPECT_FALSE(restored);
  EXPECT_TRUE(t->warm_started());
  EXPECT_EQ(t->global_step(), 10);       // the step continues
  EXPECT_EQ(Predictions(*t), p0);        // the same parameters
  TrainResult r;
  ASSERT_TRUE(t->Train(Day1(), nullptr, &r).ok());  // other data: no "inputs differ" refusal
  EXPECT_EQ(r.steps, 17);
  EXPECT_EQ(r.steps_this_run, 7);
  EXPECT_EQ(r.examples, 448);
  // The same command again resumes the finished day-1 run: nothing to do.
  auto again = Make(o);
  ASSERT_TRUE(again->Restore(&restored).ok());
  EXPECT_TRUE(restored);
  EXPECT_FALSE(again->warm_started());
  ASSERT_TRUE(again->Train(Day1(), nullptr, &r).ok());
  EXPECT_EQ(r.steps_this_run, 0);
}

TEST(WarmStart, OptimizerSlotsOnlyWhenAsked) {
  const std::string day0 = testing::TestTempDir("warm", "slots0");
  TrainDay0(day0);
  StatusOr<Checkpoint> src = LoadLatestCheckpoint(day0);
  ASSERT_TRUE(src.ok());
  for (bool carry : {false, true}) {
    const std::string dir = testing::TestTempDir("warm", carry ? "carry" : "fresh");
    TrainOptions o = Small();
    o.model_dir = dir;
    o.warm_start_from = day0;
    o.warm_start_optimizer = carry;
    o.max_steps = 10;  // no step: the saved state is the warm-started one
    auto t = Make(o);
    bool restored = false;
    ASSERT_TRUE(t->Restore(&restored).ok());
    ASSERT_TRUE(t->SaveCheckpoint().ok());
    StatusOr<Checkpoint> c = LoadLatestCheckpoint(dir);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(Tensor(*c, "embeddings/V").f32, Tensor(*src, "embeddings/V").f32);
    const std::vector<float>& m = Tensor(*c, "embeddings/V/m").f32;
    if (carry) {
      EXPECT_EQ(m, Tensor(*src, "embeddings/V/m").f32);
    } else {
      EXPECT_NE(m, Tensor(*src, "embeddings/V/m").f32);
      for (float x : m) ASSERT_EQ(x, 0.0f);  // Adam's m starts at 0
    }
    // Dense parameters come along always, their slots only when asked.
    EXPECT_EQ(Tensor(*c, "mlp0/weights").f32, Tensor(*src, "mlp0/weights").f32);
    const std::vector<float>& dm = Tensor(*c, "mlp0/weights/v").f32;
    ASSERT_FALSE(dm.empty());
    if (carry) {
      EXPECT_EQ(dm, Tensor(*src, "mlp0/weights/v").f32);
    } else {
      for (float x : dm) ASSERT_EQ(x, 0.0f);  // Adam's v starts at 0
    }
    EXPECT_EQ(c->meta["warm_start"]["optimizer"].get<bool>(), carry);
  }
}

TEST(WarmStart, LargerFeatureSizeKeepsTheRowsAndInitialisesTheNewOnes) {
  const std::string day0 = testing::TestTempDir("warm", "grow0"), dir = testing::TestTempDir("warm", "grow1");
  const std::vector<float> p0 = TrainDay0(day0);
  TrainOptions o = Small(3000);
  o.model_dir = dir;
  o.warm_start_from = day0;
  auto t = Make(o);
  bool restored = false;
  ASSERT_TRUE(t->Restore(&restored).ok());
  EXPECT_EQ(Predictions(*t), p0);  // the data's ids are < 2000: the same rows
  ASSERT_TRUE(t->SaveCheckpoint().ok());
  StatusOr<Checkpoint> c = LoadLatestCheckpoint(dir);
  StatusOr<Checkpoint> src = LoadLatestCheckpoint(day0);
  ASSERT_TRUE(c.ok() && src.ok());
  const std::vector<float>& v = Tensor(*c, "embeddings/V").f32;
  const std::vector<float>& v0 = Tensor(*src, "embeddings/V").f32;
  ASSERT_EQ(v.size(), 3000u * 4);
  EXPECT_TRUE(std::equal(v0.begin(), v0.end(), v.begin()));
  // Rows 2000.. hold a fresh 3000-row model's initialisation (not zeros).
  const std::string fresh_dir = testing::TestTempDir("warm", "fresh3000");
  TrainOptions f = Small(3000);
  f.model_dir = fresh_dir;
  auto fresh = Make(f);
  ASSERT_TRUE(fresh->SaveCheckpoint().ok());
  StatusOr<Checkpoint> fc = LoadLatestCheckpoint(fresh_dir);
  ASSERT_TRUE(fc.ok());
  const std::vector<float>& vf = Tensor(*fc, "embeddings/V").f32;
  EXPECT_TRUE(std::equal(v.begin() + 2000 * 4, v.end(), vf.begin() + 2000 * 4));
  EXPECT_NE(std::count(v.begin() + 2000 * 4, v.end(), 0.0f), 1000 * 4);
}

TEST(WarmStart, Refusals) {
  const std::string day0 = testing::TestTempDir("warm", "ref0");
  TrainDay0(day0);
  bool restored = false;
  {
    TrainOptions o = Small(1000);
    o.warm_start_from = day0;
    Status s = Make(o)->Restore(&restored);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("feature_size 2000, this run asks for 1000 (a smaller --feature-size would drop"),
              std::string::npos)
        << s.ToString();
  }
  {
    TrainOptions o = Small();
    o.model.embedding_size = 8;
    o.warm_start_from = day0;
    Status s = Make(o)->Restore(&restored);
    EXPECT_NE(s.message().find("the checkpoint's model has embedding_size = 4, this run asks for 8"), std::string::npos)
        << s.ToString();
  }
  {
    TrainOptions o = Small(2000, "adagrad");
    o.warm_start_from = day0;
    o.warm_start_optimizer = true;
    Status s = Make(o)->Restore(&restored);
    EXPECT_NE(s.message().find("--warm-start-optimizer needs the same optimizer, the checkpoint's is 'adam'"),
              std::string::npos)
        << s.ToString();
    o.warm_start_optimizer = false;  // another optimizer starting afresh is fine
    EXPECT_TRUE(Make(o)->Restore(&restored).ok());
  }
  {  // a model dir holding another run is not overwritten by a warm start
    const std::string other = testing::TestTempDir("warm", "other");
    TrainDay0(other);
    TrainOptions o = Small();
    o.model_dir = other;
    o.warm_start_from = day0;
    Status s = Make(o)->Restore(&restored);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("already holds"), std::string::npos) << s.ToString();
  }
  {
    TrainOptions o = Small();
    o.warm_start_from = testing::TestTempDir("warm", "empty");
    EXPECT_EQ(Make(o)->Restore(&restored).code(), StatusCode::kNotFound);
  }
}

// Day 0 -> day 1 in the same model dir, interrupted and resumed: the resumed
// run ends with exactly the bits of an uninterrupted one.
TEST(WarmStart, SameDirDailyRunResumesBitExact) {
  const std::string ref_dir = testing::TestTempDir("warm", "ref_same");
  TrainDay0(ref_dir);
  TrainOptions o = Small();
  o.epochs = 2;
  o.model_dir = ref_dir;
  o.warm_start_from = ref_dir;
  auto whole = Make(o);
  bool restored = false;
  ASSERT_TRUE(whole->Restore(&restored).ok());
  ASSERT_TRUE(whole->warm_started());
  TrainResult r;
  ASSERT_TRUE(whole->Train(Day1(), nullptr, &r).ok());
  EXPECT_EQ(r.steps, 10 + 14);
  const std::vector<float> expected = Predictions(*whole);

  const std::string dir = testing::TestTempDir("warm", "cut_same");
  TrainDay0(dir);
  o.model_dir = dir;
  o.warm_start_from = dir;
  o.save_checkpoints_steps = 1;
  {
    auto first = Make(o);
    ASSERT_TRUE(first->Restore(&restored).ok());
    ASSERT_TRUE(first->warm_started());
    std::atomic<int> stop{0};
    first->set_stop_flag(&stop);
    int lines = 0;
    first->set_log_sink([&](const std::string& line) {
      if (line.find("epoch 1/2") != std::string::npos) stop = SIGINT;  // stop after the first epoch
      ++lines;
    });
    Status s = first->Train(Day1(), nullptr, &r);
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  }
  auto second = Make(o);
  ASSERT_TRUE(second->Restore(&restored).ok());
  EXPECT_TRUE(restored);  // the unfinished day-1 run, not a second warm start
  EXPECT_FALSE(second->warm_started());
  EXPECT_EQ(second->global_step(), 17);
  ASSERT_TRUE(second->Train(Day1(), nullptr, &r).ok());
  EXPECT_EQ(r.steps, 24);
  EXPECT_EQ(Predictions(*second), expected);
  // Finished: the next day's run in the same dir warm-starts again from step 24.
  auto day2 = Make(o);
  ASSERT_TRUE(day2->Restore(&restored).ok());
  EXPECT_TRUE(day2->warm_started());
  EXPECT_EQ(day2->global_step(), 24);
}

}  // namespace
}  // namespace ctrain::train
