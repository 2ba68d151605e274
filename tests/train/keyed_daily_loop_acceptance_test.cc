// Issue #20's daily loop with keyed tables: three days of synthetic clicks
// (data/synth.h, Criteo-shaped, Zipf ids: each day brings tail keys never seen
// before), with a drift: every day three fields' categories come back under
// new keys (a new day's campaigns, creatives and placements; their click
// effect is the old categories'). Day N is trained warm from day N-1 with a
// keyed table and no vocabulary; it must reach the AUC of a model trained from
// scratch on days 0..N within 0.005, on held-out traffic of the last day. The
// counters are printed (the closing note quotes them).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

constexpr int64_t kRows = 16000, kIdSpace = 40000;
constexpr int32_t kNumeric = 13;

// Rows [first, first + n) of the synthetic stream, with day `day`'s keys: fields 14, 20 and 30 offset per day.
Dataset Day(int day, int64_t first, int64_t n) {
  const Dataset src = *MakeSynthDataset(3, first, n, kIdSpace);
  Dataset out(src.field_size());
  std::vector<int64_t> ids(src.field_size());
  for (int64_t r = 0; r < src.size(); ++r) {
    for (int32_t f = 0; f < src.field_size(); ++f) {
      ids[f] = src.ids()[r * src.field_size() + f];
      if (f == 14 || f == 20 || f == 30) ids[f] += static_cast<int64_t>(day) * 1000003;
    }
    out.Append(src.labels()[r], ids.data(), src.values() + r * src.field_size());
  }
  return out;
}

TrainOptions Options(const std::string& dir) {
  TrainOptions o;
  o.model.feature_size = kKeySpace;
  o.model.field_size = 39;
  o.model.embedding_size = 8;
  o.model.deep_layers = {32, 32};
  o.model.dropout = 0.0f;
  o.model.num_dense_fields = kNumeric;
  o.model.embedding_initializer = "normal:1e-3";
  o.optimizer.learning_rate = 0.002f;
  o.batch_size = 256;
  o.epochs = 2;
  o.seed = 5;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.model_dir = dir;
  o.table.embedding_table = "keyed";
  o.table.min_count = 2;
  o.table.steps_to_live = 100;  // about 1.6 epochs of one day: a day-old key not seen again goes
  return o;
}

TEST(KeyedDailyLoop, WarmStartedDaysReachTheAucOfAModelTrainedOnAllDays) {
  const std::string root = testing::TestTempDir("keyed_daily", "loop");
  const Dataset holdout = Day(2, 3 * kRows, 6000);  // the last day's traffic, after its training rows
  double warm_auc = 0;
  for (int day = 0; day < 3; ++day) {
    TrainOptions o = Options(root + "/day" + std::to_string(day));
    if (day > 0) o.warm_start_from = root + "/day" + std::to_string(day - 1);
    auto t = Trainer::Create(o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    bool restored = false;
    ASSERT_TRUE((*t)->Restore(&restored).ok());
    TrainResult r;
    const Dataset d = Day(day, day * kRows, kRows);
    ASSERT_TRUE((*t)->Train(d, &holdout, &r).ok());
    warm_auc = r.eval.auc;
    std::printf("day %d (warm from day %d): AUC %.4f; keyed table: %s\n", day, day - 1, r.eval.auc,
                r.keyed_table.Summary().c_str());
    EXPECT_GT(r.keyed_table.admitted, 0);
    if (day > 0) EXPECT_GT(r.keyed_table.evicted_steps, 0);  // the old days' keys that did not come back
  }
  Dataset all(39);
  for (int day = 0; day < 3; ++day) all.AppendAll(Day(day, day * kRows, kRows));
  auto t = Trainer::Create(Options(root + "/scratch"));
  ASSERT_TRUE(t.ok());
  TrainResult r;
  ASSERT_TRUE((*t)->Train(all, &holdout, &r).ok());
  std::printf("from scratch on days 0..2: AUC %.4f; keyed table: %s\n", r.eval.auc, r.keyed_table.Summary().c_str());
  EXPECT_GE(warm_auc, r.eval.auc - 0.005);
  EXPECT_GT(warm_auc, 0.7);
}

}  // namespace
}  // namespace ctrain::train
