// Acceptance (slow): DeepFM on real Criteo data reaches the AUC a PyTorch
// DeepFM with the same configuration reaches (0.72-0.73).
//
// Data: CTRAIN_SHARED_DATA_DIR/criteo_deepfm_va10k.libsvm (10,040 lines,
// 39 pairs each, ids 1-based in 1..921). Train on the first 8,000 lines,
// validate on the last 2,040. Config: field_size 39, feature_size 921 with
// id_base 1, embedding 32, MLP 400-400-400, dropout 0.5, Adam lr 5e-4,
// batch 256, 5 epochs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "ctrain/train/trainer.h"

namespace ctrain::train {
namespace {

TEST(Acceptance, CriteoVa10kDeepFMReachesAuc072) {
  const std::string path = std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_deepfm_va10k.libsvm";
  struct stat st;
  if (::stat(CTRAIN_SHARED_DATA_DIR, &st) != 0)
    GTEST_SKIP() << "shared data directory " << CTRAIN_SHARED_DATA_DIR << " is absent";
  DataOptions d;
  d.format = "libsvm";
  d.field_size = 39;
  d.id_base = 1;
  d.feature_size = 921;
  LoadStats stats;
  StatusOr<Dataset> all = LoadDataset({path}, d, &stats);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 10040);
  Dataset train(39), valid(39);
  for (int64_t r = 0; r < all->size(); ++r)
    (r < 8000 ? train : valid).Append(all->labels()[r], all->ids() + r * 39, all->values() + r * 39);
  ASSERT_EQ(valid.size(), 2040);

  TrainOptions o;
  o.model.feature_size = 921;
  o.model.field_size = 39;
  o.model.embedding_size = 32;
  o.model.deep_layers = {400, 400, 400};
  o.model.dropout = 0.5f;
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 5e-4f;
  o.batch_size = 256;
  o.epochs = 5;
  o.progress = ProgressMode::kLog;
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TrainResult r;
  Status s = (*t)->Train(train, &valid, &r);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.steps, 5 * 32);  // ceil(8000 / 256) = 32
  ASSERT_TRUE(r.evaluated);
  EXPECT_EQ(r.eval.examples, 2040);
  EXPECT_GE(r.eval.auc, 0.72) << "logloss " << r.eval.logloss;
  std::printf("acceptance: valid auc %.5f logloss %.5f, %.0f examples/s\n", r.eval.auc, r.eval.logloss,
              r.examples_per_sec);
}

}  // namespace
}  // namespace ctrain::train
