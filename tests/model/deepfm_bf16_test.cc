// DeepFM with DeepFMConfig::gemm_dtype = kBF16 (mixed-precision MLP GEMMs):
// one step agrees with f32, and training still learns.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/deepfm.h"
#include "ctrain/model/layers/bf16.h"

namespace ctrain::model {
namespace {

#define SKIP_WITHOUT_BF16()                                                                   \
  do {                                                                                        \
    const Status bf16_support = Bf16GemmSupported();                                          \
    if (!bf16_support.ok()) GTEST_SKIP() << "no bf16 on this CPU: " << bf16_support.message(); \
  } while (0)

struct Tables {
  int32_t K;
  std::vector<float> w, V;
  Tables(int64_t fs, int32_t k, uint64_t seed) : K(k), w(fs), V(fs * k) {
    InitEmbeddings(seed, fs, k, w.data(), V.data());
  }
};

struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> w_rows, v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
};

Step Gather(const data::Batch& batch, const Tables& t) {
  Step s;
  UniqueIds(batch, &s.u, &s.idx);
  s.w_rows.resize(s.u.size());
  s.v_rows.resize(s.u.size() * t.K);
  for (size_t i = 0; i < s.u.size(); ++i) {
    s.w_rows[i] = t.w[s.u[i]];
    std::memcpy(s.v_rows.data() + i * t.K, t.V.data() + s.u[i] * t.K, sizeof(float) * t.K);
  }
  return s;
}

data::Batch RandomBatch(int64_t B, int32_t F, int64_t feature_size, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Batch batch;
  batch.field_size = F;
  std::vector<int64_t> ids(F);
  std::vector<float> vals(F);
  for (int64_t b = 0; b < B; ++b) {
    for (int32_t f = 0; f < F; ++f) {
      ids[f] = rng() % feature_size;
      vals[f] = (rng() % 3 == 0) ? 1.0f : 0.25f + (rng() % 1000) / 1000.0f;
    }
    batch.AppendRow(static_cast<float>(rng() % 2), ids, vals);
  }
  return batch;
}

double RelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The benchmark model's shape (F=39, 400-400-400), smaller K and batch.
// Loss and gradients of one step, bf16 vs f32, same parameters.
TEST(DeepFMBf16, OneStepMatchesF32) {
  SKIP_WITHOUT_BF16();
  DeepFMConfig c;
  c.feature_size = 5000;
  c.field_size = 39;
  c.embedding_size = 8;
  c.deep_layers = {400, 400, 400};
  c.dropout = 0.2f;
  c.l2_reg = 1e-4f;
  DeepFMConfig cb = c;
  cb.gemm_dtype = DataType::kBF16;
  DeepFM f32(c), bf16(cb);
  ASSERT_TRUE(f32.status().ok());
  ASSERT_TRUE(bf16.status().ok());
  Tables t(c.feature_size, c.embedding_size, 5);
  const data::Batch batch = RandomBatch(256, c.field_size, c.feature_size, 11);
  Step a = Gather(batch, t), b = Gather(batch, t);
  ASSERT_TRUE(f32.TrainStep(batch, a.u, a.idx, a.w_rows.data(), a.v_rows.data(), 3, &a.wg, &a.vg, &a.loss).ok());
  const Status st = bf16.TrainStep(batch, b.u, b.idx, b.w_rows.data(), b.v_rows.data(), 3, &b.wg, &b.vg, &b.loss);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_NEAR(b.loss.loss, a.loss.loss, 1e-2 * a.loss.loss);
  const std::vector<float> la(f32.logits().begin(), f32.logits().end()), lb(bf16.logits().begin(), bf16.logits().end());
  EXPECT_LT(RelDiff(lb, la), 5e-3) << "logits";  // measured 6.5e-4
  EXPECT_EQ(b.loss.l2, a.loss.l2);  // the tables' l2 does not go through a GEMM
  EXPECT_NE(b.loss.logloss, a.loss.logloss) << "bf16 gave the f32 bits: were bf16 operands used?";
  // Gradients: the labels are random, so a weight gradient sum_b x_b·dy_b adds
  // B terms of random sign and its norm is ~sqrt(B) below sum_b |x_b·dy_b|,
  // the scale of the bf16 rounding error (2^-8 per operand). Relative errors of
  // 2^-8·sqrt(256) ≈ 6% are therefore expected here, growing a little per layer
  // backwards (measured: deep_out 0.5%, mlp2 5%, mlp1 6%, mlp0 8%); a wrong
  // product (transpose, stale W) would be ~100%.
  for (size_t i = 0; i < f32.dense_params().size(); ++i) {
    const DenseParam& pa = f32.dense_params()[i];
    const DenseParam& pb = bf16.dense_params()[i];
    ASSERT_EQ(pa.name, pb.name);
    if (pa.name == "fm_bias") continue;
    EXPECT_LT(RelDiff(pb.grad, pa.grad), pa.name.rfind("deep_out", 0) == 0 ? 0.01 : 0.15) << pa.name;
  }
  EXPECT_LT(RelDiff(b.vg.grad, a.vg.grad), 0.1) << "V grad";  // measured 2.5%
  EXPECT_LT(RelDiff(b.wg.grad, a.wg.grad), 1e-3) << "w grad (bf16 reaches it only through the logits)";
}

// As DeepFM.SgdLearnsSeparableProblem (deepfm_test.cc), in mixed precision.
TEST(DeepFMBf16, SgdLearnsSeparableProblem) {
  SKIP_WITHOUT_BF16();
  DeepFMConfig c;
  c.feature_size = 60;
  c.field_size = 4;
  c.embedding_size = 4;
  c.deep_layers = {16, 8};
  c.dropout = 0.1f;
  c.batch_norm = true;
  c.gemm_dtype = DataType::kBF16;
  DeepFM m(c);
  ASSERT_TRUE(m.status().ok());
  Tables t(c.feature_size, c.embedding_size, 2);
  std::mt19937 rng(3);
  auto make = [&](int64_t B) {
    data::Batch batch;
    batch.field_size = 4;
    std::vector<int64_t> ids(4);
    std::vector<float> vals(4, 1.0f);
    for (int64_t b = 0; b < B; ++b) {
      ids[0] = rng() % 20;
      for (int f = 1; f < 4; ++f) ids[f] = 20 + rng() % 40;  // noise fields
      batch.AppendRow(ids[0] % 2 == 0 ? 1.0f : 0.0f, ids, vals);
    }
    return batch;
  };
  const float lr = 0.1f;
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const data::Batch batch = make(64);
    Step s = Gather(batch, t);
    const Status st = m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), step, &s.wg, &s.vg, &s.loss);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (step == 0) first = s.loss.loss;
    last = s.loss.loss;
    for (size_t i = 0; i < s.u.size(); ++i) {
      t.w[s.u[i]] -= lr * s.wg.grad[i];
      for (int k = 0; k < 4; ++k) t.V[s.u[i] * 4 + k] -= lr * s.vg.grad[i * 4 + k];
    }
    for (DenseParam& p : m.dense_params())
      for (size_t i = 0; i < p.value.size(); ++i) p.value[i] -= lr * p.grad[i];
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, 0.1 * first) << "first " << first << " last " << last;
  EXPECT_LT(last, 0.05) << "first " << first << " last " << last;
  const data::Batch test = make(200);
  Step s = Gather(test, t);
  std::vector<float> probs(200);
  ASSERT_TRUE(m.Predict(test, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), probs.data()).ok());
  int correct = 0;
  for (int b = 0; b < 200; ++b) correct += (probs[b] > 0.5f) == (test.labels[b] > 0.5f);
  EXPECT_GE(correct, 196);
}

// Without AVX512_BF16 a bf16 model refuses to step (never silently f32).
TEST(DeepFMBf16, UnsupportedCpuIsAnError) {
  DeepFMConfig c;
  c.feature_size = 40;
  c.field_size = 5;
  c.embedding_size = 3;
  c.deep_layers = {7};
  c.gemm_dtype = DataType::kBF16;
  DeepFM m(c);
  ASSERT_TRUE(m.status().ok());
  Tables t(c.feature_size, c.embedding_size, 1);
  const data::Batch batch = RandomBatch(4, c.field_size, c.feature_size, 2);
  Step s = Gather(batch, t);
  const Status st = m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss);
  const Status support = Bf16GemmSupported();
  if (support.ok()) {
    EXPECT_TRUE(st.ok()) << st.ToString();
  } else {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(st.message(), "fully_connected mb4ic15oc7 bf16: " + std::string(support.message()));
  }
  DeepFMConfig bad = c;
  bad.gemm_dtype = static_cast<DataType>(3);
  EXPECT_EQ(bad.Validate().message(), "ModelConfig: gemm_dtype must be f32 or bf16, got 3");
}

}  // namespace
}  // namespace ctrain::model
