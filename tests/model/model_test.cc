// model/model.h: the factory, the kind of the config, and that a Model made
// by MakeModel computes what the concrete DeepFM computes. The kind in
// checkpoints: tests/train/model_config_json_test.cc.
#include "ctrain/model/model.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ctrain/model/deepfm.h"

namespace ctrain::model {
namespace {

ModelConfig Config() {
  ModelConfig c;
  c.feature_size = 50;
  c.field_size = 3;
  c.embedding_size = 4;
  c.deep_layers = {8};
  c.dropout = 0.2f;
  return c;
}

data::Batch Batch() {
  data::Batch b;
  b.field_size = 3;
  std::mt19937 rng(3);
  for (int r = 0; r < 16; ++r) {
    b.labels.push_back(static_cast<float>(r % 2));
    for (int f = 0; f < 3; ++f) {
      b.ids.push_back(static_cast<int64_t>(rng() % 50));
      b.values.push_back(1.0f);
    }
  }
  return b;
}

TEST(ModelTest, MakeModelGivesTheKindItNames) {
  EXPECT_EQ(ModelKinds(), std::vector<std::string>{"deepfm"});
  StatusOr<std::unique_ptr<Model>> m = MakeModel(Config());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->kind(), "deepfm");
  EXPECT_TRUE((*m)->status().ok());
  EXPECT_NE(dynamic_cast<DeepFM*>(m->get()), nullptr);
}

TEST(ModelTest, UnknownKindIsRefusedListingTheKnownOnes) {
  ModelConfig c = Config();
  c.kind = "dcn_v3";
  StatusOr<std::unique_ptr<Model>> m = MakeModel(c);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "unknown model 'dcn_v3' (models: deepfm)");
  EXPECT_EQ(c.Validate().message(), "unknown model 'dcn_v3' (models: deepfm)");
}

// Through the interface, the same bits as the concrete class (the trainer only sees the interface).
TEST(ModelTest, TheInterfaceComputesWhatDeepFMComputes) {
  StatusOr<std::unique_ptr<Model>> m = MakeModel(Config());
  ASSERT_TRUE(m.ok());
  DeepFM direct(Config());
  (*m)->InitDense(7);
  direct.InitDense(7);
  const data::Batch b = Batch();
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(b, &u, &idx);
  std::vector<float> w(50), V(50 * 4);
  InitEmbeddings(11, 50, 4, w.data(), V.data());
  std::vector<float> wr(u.size()), vr(u.size() * 4);
  for (size_t i = 0; i < u.size(); ++i) {
    wr[i] = w[u[i]];
    for (int k = 0; k < 4; ++k) vr[i * 4 + k] = V[u[i] * 4 + k];
  }
  SparseGrad wg1, vg1, wg2, vg2;
  LossTerms l1, l2;
  ASSERT_TRUE((*m)->TrainStep(b, u, idx, wr.data(), vr.data(), 5, &wg1, &vg1, &l1).ok());
  ASSERT_TRUE(direct.TrainStep(b, u, idx, wr.data(), vr.data(), 5, &wg2, &vg2, &l2).ok());
  EXPECT_EQ(l1.loss, l2.loss);
  EXPECT_EQ(vg1.grad, vg2.grad);
  ASSERT_EQ((*m)->dense_params().size(), direct.dense_params().size());
  for (size_t i = 0; i < direct.dense_params().size(); ++i)
    EXPECT_EQ((*m)->dense_params()[i].grad, direct.dense_params()[i].grad) << direct.dense_params()[i].name;
  EXPECT_EQ((*m)->GemmFlopsPerExample(), 3.0 * 2.0 * (3 * 4 * 8 + 8 * 1));
}

}  // namespace
}  // namespace ctrain::model
