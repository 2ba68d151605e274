// Issue 14 acceptance (warm start): on a day split of the real
// criteo_deepfm_va10k.libsvm (../shared/data; read in place), day 0 -> day 1
// warm start beats training day 1 from scratch in validation AUC, and a
// warm-started run interrupted and resumed ends bit-exact.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

struct Days {
  Dataset day0{39}, day1{39}, valid{39};
};

// Rows [0, 4000) = day 0, [4000, 8000) = day 1, the rest (2040) = validation.
const Days* LoadDays() {
  static const Days* days = [] () -> const Days* {
    const std::string path = std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_deepfm_va10k.libsvm";
    if (!std::filesystem::exists(path)) return nullptr;
    data::ExampleReaderOptions ro;
    ro.id_base = 1;
    ro.feature_size = 921;
    ro.id_limit = 921;
    StatusOr<Dataset> all = LoadDataset({path}, ro);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    if (!all.ok()) return nullptr;
    auto* d = new Days;
    const int32_t F = all->field_size();
    for (int64_t r = 0; r < all->size(); ++r) {
      Dataset& to = r < 4000 ? d->day0 : r < 8000 ? d->day1 : d->valid;
      to.Append(all->labels()[r], all->ids() + r * F, all->values() + r * F);
    }
    return d;
  }();
  return days;
}

TrainOptions Options(const std::string& dir) {
  TrainOptions o;
  o.model.feature_size = 921;
  o.model.field_size = 39;
  o.model.embedding_size = 8;
  o.model.deep_layers = {32, 32};
  o.model.dropout = 0.0f;
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.001f;
  o.batch_size = 128;
  o.epochs = 2;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.model_dir = dir;
  return o;
}

double TrainAndEvaluate(Trainer& t, const Dataset& data, const Dataset& valid) {
  TrainResult r;
  Status s = t.Train(data, &valid, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r.eval.auc;
}

TEST(WarmStartAcceptance, DayZeroToDayOneBeatsDayOneFromScratch) {
  const Days* d = LoadDays();
  if (d == nullptr) GTEST_SKIP() << "shared data folder " << CTRAIN_SHARED_DATA_DIR << " is absent";
  const std::string day0 = testing::TestTempDir("warm_acc", "day0"), day1 = testing::TestTempDir("warm_acc", "day1"),
                    scratch = testing::TestTempDir("warm_acc", "scratch");
  auto t0 = Trainer::Create(Options(day0));
  ASSERT_TRUE(t0.ok());
  const double auc0 = TrainAndEvaluate(**t0, d->day0, d->valid);

  TrainOptions wo = Options(day1);
  wo.warm_start_from = day0;
  auto warm = Trainer::Create(wo);
  ASSERT_TRUE(warm.ok());
  bool restored = false;
  ASSERT_TRUE((*warm)->Restore(&restored).ok());
  ASSERT_TRUE((*warm)->warm_started());
  const double auc_warm = TrainAndEvaluate(**warm, d->day1, d->valid);

  auto cold = Trainer::Create(Options(scratch));
  ASSERT_TRUE(cold.ok());
  const double auc_cold = TrainAndEvaluate(**cold, d->day1, d->valid);
  std::printf("valid auc: day0 %.5f, day1 warm-started %.5f, day1 from scratch %.5f\n", auc0, auc_warm, auc_cold);
  EXPECT_GT(auc_warm, auc_cold);
}

TEST(WarmStartAcceptance, InterruptedWarmStartResumesBitExact) {
  const Days* d = LoadDays();
  if (d == nullptr) GTEST_SKIP() << "shared data folder " << CTRAIN_SHARED_DATA_DIR << " is absent";
  const std::string day0 = testing::TestTempDir("warm_acc", "bx0");
  {
    TrainOptions o = Options(day0);
    o.epochs = 1;
    auto t = Trainer::Create(o);
    ASSERT_TRUE(t.ok());
    TrainResult r;
    ASSERT_TRUE((*t)->Train(d->day0, nullptr, &r).ok());
  }
  auto run = [&](const std::string& dir, bool interrupt) {
    TrainOptions o = Options(dir);
    o.warm_start_from = day0;
    o.warm_start_optimizer = true;
    o.save_checkpoints_steps = 10;
    auto t = Trainer::Create(o);
    EXPECT_TRUE(t.ok());
    bool restored = false;
    EXPECT_TRUE((*t)->Restore(&restored).ok());
    std::atomic<int> stop{0};
    if (interrupt) {
      (*t)->set_stop_flag(&stop);
      (*t)->set_log_sink([&](const std::string& line) {
        if (line.find("epoch 1/2") != std::string::npos) stop = SIGTERM;
      });
    }
    TrainResult r;
    Status s = (*t)->Train(d->day1, nullptr, &r);
    if (interrupt) {
      EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
      auto again = Trainer::Create(o);
      EXPECT_TRUE((*again)->Restore(&restored).ok());
      EXPECT_TRUE(restored);
      s = (*again)->Train(d->day1, nullptr, &r);
      t = std::move(again);
    }
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<float> p;
    EXPECT_TRUE((*t)->Predict(d->valid, &p).ok());
    return p;
  };
  const std::vector<float> straight = run(testing::TestTempDir("warm_acc", "straight"), false);
  const std::vector<float> resumed = run(testing::TestTempDir("warm_acc", "resumed"), true);
  ASSERT_EQ(straight.size(), 2040u);
  EXPECT_EQ(straight, resumed);
}

}  // namespace
}  // namespace ctrain::train
