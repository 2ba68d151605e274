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
  ASSERT_GE(ModelKinds().size(), 4u);
  EXPECT_EQ(ModelKinds()[0], "deepfm");  // the default first
  for (const std::string& kind : ModelKinds()) {
    ModelConfig c = Config();
    c.kind = kind;
    StatusOr<std::unique_ptr<Model>> m = MakeModel(c);
    ASSERT_TRUE(m.ok()) << kind << ": " << m.status().ToString();
    EXPECT_EQ((*m)->kind(), kind);
    EXPECT_TRUE((*m)->status().ok()) << kind << ": " << (*m)->status().ToString();
    EXPECT_EQ(dynamic_cast<DeepFM*>(m->get()) != nullptr, IsDeepFmKind(kind)) << kind;
  }
}

// lr, fm and wide_deep are DeepFM's terms (Rendle 2010; Cheng et al. 2016): the same bits as deepfm with
// the switches set, and only the parameters their terms read.
TEST(ModelTest, LrFmAndWideDeepAreDeepFmTerms) {
  const data::Batch b = Batch();
  std::vector<int64_t> unique;
  std::vector<int32_t> index;
  UniqueIds(b, &unique, &index);
  const int64_t U = static_cast<int64_t>(unique.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-0.1f, 0.1f);
  std::vector<float> w(U), v(U * Config().embedding_size);
  for (float& x : w) x = d(rng);
  for (float& x : v) x = d(rng);
  struct Case {
    const char* kind;
    bool first, fm, deep;
    size_t dense;  // fm_bias, then the MLP's weights and biases
  };
  const size_t mlp = 2 * (Config().deep_layers.size() + 1);
  for (const Case& k : {Case{"lr", true, false, false, 1}, Case{"fm", true, true, false, 1},
                        Case{"wide_deep", true, false, true, 1 + mlp}}) {
    ModelConfig kc = Config();
    kc.kind = k.kind;
    ModelConfig sc = Config();
    sc.use_first_order = k.first;
    sc.use_fm = k.fm;
    sc.use_deep = k.deep;
    EXPECT_EQ(kc.reads_w(), k.first) << k.kind;
    EXPECT_EQ(kc.reads_v(), k.fm || k.deep) << k.kind;
    DeepFM by_kind(kc), by_switches(sc);
    ASSERT_EQ(by_kind.dense_params().size(), k.dense) << k.kind;
    ASSERT_EQ(by_switches.dense_params().size(), k.dense) << k.kind;
    SparseGrad wg1, vg1, wg2, vg2;
    LossTerms l1, l2;
    ASSERT_TRUE(by_kind.TrainStep(b, unique, index, w.data(), v.data(), 1, &wg1, &vg1, &l1).ok());
    ASSERT_TRUE(by_switches.TrainStep(b, unique, index, w.data(), v.data(), 1, &wg2, &vg2, &l2).ok());
    EXPECT_EQ(l1.loss, l2.loss) << k.kind;
    EXPECT_EQ(wg1.grad, wg2.grad) << k.kind;
    EXPECT_EQ(vg1.grad, vg2.grad) << k.kind;
    EXPECT_EQ(vg1.grad.empty(), !(k.fm || k.deep)) << k.kind;
  }
}

TEST(ModelTest, UnknownKindIsRefusedListingTheKnownOnes) {
  ModelConfig c = Config();
  c.kind = "dcn_v3";
  StatusOr<std::unique_ptr<Model>> m = MakeModel(c);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  std::string known;
  for (const std::string& k : ModelKinds()) known += (known.empty() ? "" : ", ") + k;
  EXPECT_EQ(m.status().message(), "unknown model 'dcn_v3' (models: " + known + ")");
  EXPECT_EQ(c.Validate().message(), "unknown model 'dcn_v3' (models: " + known + ")");
  EXPECT_EQ(known.rfind("deepfm, lr, fm, wide_deep", 0), 0u) << known;
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
