// DeepFM on multi-hot batches (data::Batch::field_splits): full-model
// finite-difference gradients and equality with the one-hot path.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/deepfm.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

struct Tables {
  int32_t K;
  std::vector<float> w, V;
  Tables(int64_t fs, int32_t k, uint64_t seed) : K(k), w(fs), V(fs * k) {
    InitEmbeddings(seed, fs, k, w.data(), V.data());
  }
  void Gather(const std::vector<int64_t>& u, std::vector<float>* w_rows, std::vector<float>* v_rows) const {
    w_rows->resize(u.size());
    v_rows->resize(u.size() * K);
    for (size_t i = 0; i < u.size(); ++i) {
      (*w_rows)[i] = w[u[i]];
      std::memcpy(v_rows->data() + i * K, V.data() + u[i] * K, sizeof(float) * K);
    }
  }
};

// B rows of F fields; field f holds 0..max_len ids (a "mean" field gets weights 1/n).
data::Batch RandomMultiHotBatch(int64_t B, int32_t F, int32_t max_len, int64_t feature_size, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Batch batch;
  batch.field_size = F;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> ids;
    std::vector<float> vals;
    std::vector<int32_t> lens(F);
    for (int32_t f = 0; f < F; ++f) {
      lens[f] = static_cast<int32_t>(rng() % (max_len + 1));
      for (int32_t i = 0; i < lens[f]; ++i) {
        ids.push_back(rng() % feature_size);
        vals.push_back(f % 2 == 0 ? 1.0f / lens[f] : 0.25f + (rng() % 1000) / 1000.0f);
      }
    }
    batch.AppendMultiHotRow(static_cast<float>(rng() % 2), ids, vals, lens);
  }
  return batch;
}

DeepFMConfig SmallConfig() {
  DeepFMConfig c;
  c.feature_size = 40;
  c.field_size = 5;
  c.embedding_size = 3;
  c.deep_layers = {7, 6};
  c.dropout = 0.0f;
  c.l2_reg = 0.01f;
  return c;
}

void MultiHotGradCheck(DeepFMConfig cfg, const std::string& name) {
  const std::string repro = "deepfm multi-hot " + name + " F=5 K=3 deep=7,6 B=8 max_len=4";
  SCOPED_TRACE(repro);
  DeepFM model(cfg);
  ASSERT_TRUE(model.status().ok()) << model.status().ToString();
  for (DenseParam& p : model.dense_params()) {
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size()), -0.6f, 0.6f);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
  Tables t(cfg.feature_size, cfg.embedding_size, 5);
  for (float& x : t.V) x *= 3.0f;
  for (float& x : t.w) x *= 4.0f;
  const data::Batch batch = RandomMultiHotBatch(8, cfg.field_size, 4, cfg.feature_size, 78);
  ASSERT_TRUE(batch.Validate().ok());
  ASSERT_TRUE(batch.multi_hot());
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(batch, &u, &idx);
  std::vector<float> w_rows, v_rows;
  t.Gather(u, &w_rows, &v_rows);
  SparseGrad wg, vg;
  LossTerms loss;
  Status st = model.TrainStep(batch, u, idx, w_rows.data(), v_rows.data(), 1, &wg, &vg, &loss);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (float z : model.logits()) EXPECT_LT(std::fabs(z), 15.0f) << "test setup: logits too large for a float FD check";
  if (cfg.use_fm || cfg.use_deep) {
    EXPECT_EQ(vg.ids, u);
  }
  const std::vector<float> wgrad = wg.grad, vgrad = vg.grad;
  std::vector<std::vector<float>> dense_grads;
  for (const DenseParam& p : model.dense_params()) dense_grads.push_back(p.grad);
  auto f = [&] {
    SparseGrad a, b;
    LossTerms l;
    EXPECT_TRUE(model.TrainStep(batch, u, idx, w_rows.data(), v_rows.data(), 1, &a, &b, &l).ok());
    return l.loss;
  };
  const double eps = 1e-3, abs_tol = 5e-4, rel_tol = 2e-2;
  EXPECT_TRUE(CheckGradient(repro + " w_rows", &w_rows, wgrad, f, eps, abs_tol, rel_tol));
  if (!vgrad.empty()) {
    EXPECT_TRUE(CheckGradient(repro + " v_rows", &v_rows, vgrad, f, eps, abs_tol, rel_tol, {}, 80));
  }
  for (size_t i = 0; i < model.dense_params().size(); ++i) {
    DenseParam& p = model.dense_params()[i];
    EXPECT_TRUE(CheckGradient(repro + " " + p.name, &p.value, dense_grads[i], f, eps, abs_tol, rel_tol, {}, 20));
  }
}

TEST(DeepFMMultiHot, GradCheck) { MultiHotGradCheck(SmallConfig(), "plain"); }
TEST(DeepFMMultiHot, GradCheckBatchNorm) {
  DeepFMConfig c = SmallConfig();
  c.batch_norm = true;
  MultiHotGradCheck(c, "bn");
}
TEST(DeepFMMultiHot, GradCheckFirstOrderOnly) {
  DeepFMConfig c = SmallConfig();
  c.use_fm = false;
  c.use_deep = false;
  MultiHotGradCheck(c, "lr");
}

// A multi-hot batch with exactly one id per field is the one-hot batch: same
// logits, loss and gradients, bit for bit.
TEST(DeepFMMultiHot, OneIdPerFieldEqualsOneHot) {
  const DeepFMConfig cfg = SmallConfig();
  std::mt19937 rng(3);
  data::Batch one, multi;
  one.field_size = multi.field_size = cfg.field_size;
  const std::vector<int32_t> ones(cfg.field_size, 1);
  for (int b = 0; b < 6; ++b) {
    std::vector<int64_t> ids(cfg.field_size);
    std::vector<float> vals(cfg.field_size);
    for (int32_t f = 0; f < cfg.field_size; ++f) {
      ids[f] = rng() % cfg.feature_size;
      vals[f] = 0.5f + (rng() % 100) / 100.0f;
    }
    const float label = static_cast<float>(b % 2);
    one.AppendRow(label, ids, vals);
    multi.AppendMultiHotRow(label, ids, vals, ones);
  }
  Tables t(cfg.feature_size, cfg.embedding_size, 7);
  DeepFM m1(cfg), m2(cfg);
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(one, &u, &idx);
  std::vector<float> w_rows, v_rows;
  t.Gather(u, &w_rows, &v_rows);
  SparseGrad wg1, vg1, wg2, vg2;
  LossTerms l1, l2;
  ASSERT_TRUE(m1.TrainStep(one, u, idx, w_rows.data(), v_rows.data(), 3, &wg1, &vg1, &l1).ok());
  ASSERT_TRUE(m2.TrainStep(multi, u, idx, w_rows.data(), v_rows.data(), 3, &wg2, &vg2, &l2).ok());
  EXPECT_EQ(l1.loss, l2.loss);
  EXPECT_EQ(std::vector<float>(m1.logits().begin(), m1.logits().end()),
            std::vector<float>(m2.logits().begin(), m2.logits().end()));
  EXPECT_EQ(wg1.grad, wg2.grad);
  EXPECT_EQ(vg1.grad, vg2.grad);
  for (size_t i = 0; i < m1.dense_params().size(); ++i)
    EXPECT_EQ(m1.dense_params()[i].grad, m2.dense_params()[i].grad) << m1.dense_params()[i].name;
}

TEST(DeepFMMultiHot, BadFieldSplitsAreRefused) {
  const DeepFMConfig cfg = SmallConfig();
  data::Batch batch = RandomMultiHotBatch(3, cfg.field_size, 2, cfg.feature_size, 5);
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(batch, &u, &idx);
  Tables t(cfg.feature_size, cfg.embedding_size, 1);
  std::vector<float> w_rows, v_rows;
  t.Gather(u, &w_rows, &v_rows);
  DeepFM m(cfg);
  std::vector<float> probs(3);
  batch.field_splits.pop_back();
  Status s = m.Predict(batch, u, idx, w_rows.data(), v_rows.data(), probs.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("field_splits"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace ctrain::model
