// DCN and DCN-V2 (model/dcn.h): full-model finite-difference gradients for
// every structure and cross variant, the logit by hand, Predict == the training
// forward without dropout, determinism, parameter names/shapes, FLOPs, errors.
#include "ctrain/model/dcn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/bf16.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

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

// The step's inputs as a trainer gathers them: V's rows of the batch's unique ids (DCN reads no w).
struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
  Step(const data::Batch& batch, const ModelConfig& c, float scale) {
    UniqueIds(batch, &u, &idx);
    std::vector<float> V(c.feature_size * c.embedding_size);
    InitEmbeddings(5, c.feature_size, c.embedding_size, nullptr, V.data());
    for (int64_t id : u)
      for (int32_t k = 0; k < c.embedding_size; ++k) v_rows.push_back(scale * V[id * c.embedding_size + k]);
  }
};

ModelConfig Small(const std::string& kind) {
  ModelConfig c;
  c.kind = kind;
  c.feature_size = 40;
  c.field_size = 3;
  c.embedding_size = 2;
  c.deep_layers = {5, 4};
  c.cross_layers = 2;
  c.dropout = 0.0f;
  c.l2_reg = 0.01f;
  return c;
}

void FullModelGradCheck(const ModelConfig& cfg, const std::string& name) {
  const std::string repro = cfg.kind + " " + name + " F=3 K=2 B=7";
  SCOPED_TRACE(repro);
  DCN model(cfg);
  ASSERT_TRUE(model.status().ok()) << model.status().ToString();
  for (DenseParam& p : model.dense_params()) {  // order-1 values so every term matters
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size()) + 3, -0.5f, 0.5f);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
  const data::Batch batch = RandomBatch(7, cfg.field_size, cfg.feature_size, 77);
  Step s(batch, cfg, 3.0f);
  ASSERT_TRUE(model.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 1, &s.wg, &s.vg, &s.loss).ok());
  EXPECT_GT(s.loss.l2, 0.0);
  for (float z : model.logits()) EXPECT_LT(std::fabs(z), 15.0f) << "test setup: logits too large for a float FD check";
  EXPECT_TRUE(s.wg.ids.empty() && s.wg.grad.empty()) << "DCN reads no first-order table";
  EXPECT_EQ(s.vg.ids, s.u);
  const std::vector<float> vg = s.vg.grad;
  std::vector<std::vector<float>> dense_grads;
  for (const DenseParam& p : model.dense_params()) dense_grads.push_back(p.grad);
  auto f = [&] {
    SparseGrad a, b;
    LossTerms l;
    EXPECT_TRUE(model.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 1, &a, &b, &l).ok());
    return l.loss;
  };
  const double eps = 1e-3, abs_tol = 5e-4, rel_tol = 2e-2;
  EXPECT_TRUE(CheckGradient(repro + " v_rows", &s.v_rows, vg, f, eps, abs_tol, rel_tol, {}, 60));
  for (size_t i = 0; i < model.dense_params().size(); ++i) {
    DenseParam& p = model.dense_params()[i];
    EXPECT_TRUE(CheckGradient(repro + " " + p.name, &p.value, dense_grads[i], f, eps, abs_tol, rel_tol, {}, 25));
  }
}

TEST(DCN, GradCheckParallel) { FullModelGradCheck(Small("dcn"), "parallel"); }
TEST(DCN, GradCheckCrossOnly) {
  ModelConfig c = Small("dcn");
  c.deep_layers = {};
  FullModelGradCheck(c, "cross only");
}
TEST(DCN, GradCheckStackedBatchNorm) {
  ModelConfig c = Small("dcn");
  c.model_structure = "stacked";
  c.batch_norm = true;
  FullModelGradCheck(c, "stacked bn");
}
TEST(DCNv2, GradCheckFullRankParallelBatchNorm) {
  ModelConfig c = Small("dcn_v2");
  c.batch_norm = true;
  FullModelGradCheck(c, "full rank parallel bn");
}
TEST(DCNv2, GradCheckLowRankStacked) {
  ModelConfig c = Small("dcn_v2");
  c.low_rank = 2;
  c.model_structure = "stacked";
  FullModelGradCheck(c, "low rank stacked");
}
TEST(DCNv2, GradCheckMixtureParallel) {
  ModelConfig c = Small("dcn_v2");
  c.low_rank = 2;
  c.num_experts = 3;
  FullModelGradCheck(c, "mixture parallel");
}
TEST(DCNv2, GradCheckMixtureCrossOnly) {
  ModelConfig c = Small("dcn_v2");
  c.low_rank = 3;
  c.num_experts = 2;
  c.deep_layers = {};
  c.cross_layers = 3;
  FullModelGradCheck(c, "mixture cross only");
}

// One example, F = 1, K = 2, one DCN layer, no MLP: x0 = v * value,
// x1 = x0 * (x0·w) + b + x0, logit = bias + x1 · out.
TEST(DCN, LogitByHand) {
  ModelConfig c = Small("dcn");
  c.field_size = 1;
  c.cross_layers = 1;
  c.deep_layers = {};
  DCN m(c);
  ASSERT_TRUE(m.status().ok());
  ASSERT_EQ(m.dense_params().size(), 4u);  // output/biases, cross0/weights, cross0/biases, output/weights
  m.dense_params()[0].value = {0.25f};
  m.dense_params()[1].value = {1.0f, -0.5f};
  m.dense_params()[2].value = {0.1f, -0.2f};
  m.dense_params()[3].value = {2.0f, 1.0f};
  data::Batch batch;
  batch.field_size = 1;
  batch.AppendRow(1.0f, std::vector<int64_t>{3}, std::vector<float>{2.0f});
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(batch, &u, &idx);
  const std::vector<float> v_rows = {0.5f, 1.0f};  // x0 = (1, 2), x0·w = 0, x1 = (1.1, 1.8)
  std::vector<float> prob(1);
  ASSERT_TRUE(m.Predict(batch, u, idx, nullptr, v_rows.data(), prob.data()).ok());
  const double z = 0.25 + 2 * 1.1 + 1 * 1.8;
  EXPECT_NEAR(m.logits()[0], z, 1e-6);
  EXPECT_NEAR(prob[0], 1 / (1 + std::exp(-z)), 1e-6);
}

TEST(DCNv2, PredictEqualsTrainingForwardWithoutDropoutAndIsDeterministic) {
  for (const char* structure : {"parallel", "stacked"}) {
    ModelConfig c = Small("dcn_v2");
    c.model_structure = structure;
    c.low_rank = 2;
    c.num_experts = 2;
    const data::Batch batch = RandomBatch(33, c.field_size, c.feature_size, 9);
    Step s(batch, c, 2.0f);
    DCN m(c);
    ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 4, &s.wg, &s.vg, &s.loss).ok());
    const std::vector<float> train_logits(m.logits().begin(), m.logits().end());
    std::vector<float> probs(33);
    ASSERT_TRUE(m.Predict(batch, s.u, s.idx, nullptr, s.v_rows.data(), probs.data()).ok());
    for (int b = 0; b < 33; ++b) {
      EXPECT_EQ(m.logits()[b], train_logits[b]) << structure << " row " << b;
      EXPECT_NEAR(probs[b], 1 / (1 + std::exp(-train_logits[b])), 1e-7);
    }
    // With dropout: two models of one seed give the same bits; another step draws other masks.
    c.dropout = 0.3f;
    DCN a(c), b(c);
    Step sa(batch, c, 2.0f), sb(batch, c, 2.0f);
    ASSERT_TRUE(a.TrainStep(batch, sa.u, sa.idx, nullptr, sa.v_rows.data(), 4, &sa.wg, &sa.vg, &sa.loss).ok());
    ASSERT_TRUE(b.TrainStep(batch, sb.u, sb.idx, nullptr, sb.v_rows.data(), 4, &sb.wg, &sb.vg, &sb.loss).ok());
    EXPECT_EQ(sa.loss.loss, sb.loss.loss);
    EXPECT_EQ(sa.vg.grad, sb.vg.grad);
    for (size_t i = 0; i < a.dense_params().size(); ++i)
      EXPECT_EQ(a.dense_params()[i].grad, b.dense_params()[i].grad) << a.dense_params()[i].name;
    ASSERT_TRUE(b.TrainStep(batch, sb.u, sb.idx, nullptr, sb.v_rows.data(), 5, &sb.wg, &sb.vg, &sb.loss).ok());
    EXPECT_NE(sa.loss.loss, sb.loss.loss) << "step 5's dropout masks differ from step 4's";
  }
}

TEST(DCN, ParamsNamesShapesAndFlops) {
  ModelConfig c;
  c.kind = "dcn";
  c.feature_size = 1000;
  c.field_size = 39;
  c.embedding_size = 16;  // D = 624
  c.deep_layers = {100, 50};
  c.batch_norm = true;
  c.cross_layers = 2;
  DCN m(c);
  ASSERT_TRUE(m.status().ok());
  std::vector<std::string> names;
  for (const DenseParam& p : m.dense_params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"output/biases", "cross0/weights", "cross0/biases", "cross1/weights",
                                             "cross1/biases", "mlp0/weights", "mlp0/biases", "bn_0/gamma",
                                             "bn_0/beta", "mlp1/weights", "mlp1/biases", "bn_1/gamma", "bn_1/beta",
                                             "output/weights"}));
  EXPECT_EQ(m.dense_params()[1].shape, (std::vector<int64_t>{624, 1}));
  EXPECT_EQ(m.dense_params()[13].shape, (std::vector<int64_t>{674, 1}));
  EXPECT_EQ(m.state().size(), 4u);
  EXPECT_EQ(m.GemmFlopsPerExample(), 6.0 * (2 * 624 + 624 * 100 + 100 * 50 + 674));
  // Glorot-uniform cross vector: limit sqrt(6 / (624 + 1)); biases 0.
  float mx = 0;
  for (float v : m.dense_params()[1].value) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, std::sqrt(6.0f / 625));
  EXPECT_GT(mx, 0.9f * std::sqrt(6.0f / 625));
  for (float v : m.dense_params()[2].value) EXPECT_EQ(v, 0.0f);

  c.kind = "dcn_v2";
  c.model_structure = "stacked";
  c.batch_norm = false;
  c.low_rank = 8;
  c.num_experts = 4;
  DCN v2(c);
  ASSERT_TRUE(v2.status().ok());
  names.clear();
  for (const DenseParam& p : v2.dense_params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"output/biases", "cross0/experts_v", "cross0/experts_c",
                                             "cross0/experts_u", "cross0/biases", "cross1/experts_v",
                                             "cross1/experts_c", "cross1/experts_u", "cross1/biases",
                                             "cross_gate/weights", "mlp0/weights", "mlp0/biases", "mlp1/weights",
                                             "mlp1/biases", "output/weights"}));
  EXPECT_EQ(v2.dense_params()[14].shape, (std::vector<int64_t>{50, 1}));  // stacked: h = MLP(x_L)
  EXPECT_EQ(v2.GemmFlopsPerExample(),
            6.0 * (2 * (624 * 4 + 4 * (2 * 624 * 8 + 64)) + 624 * 100 + 100 * 50 + 50));

  c.low_rank = 0;
  c.num_experts = 1;
  c.deep_layers = {};
  DCN full(c);  // stacked without an MLP: the cross network alone
  ASSERT_TRUE(full.status().ok());
  EXPECT_EQ(full.dense_params().size(), 6u);
  EXPECT_EQ(full.dense_params()[1].shape, (std::vector<int64_t>{624, 624}));
  EXPECT_EQ(full.dense_params()[5].shape, (std::vector<int64_t>{624, 1}));
  EXPECT_EQ(full.GemmFlopsPerExample(), 6.0 * (2 * 624 * 624 + 624));
}

double RelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The table of docs/model.md ("Cost per training example"): F = 39, K = 16, L = 3, 400-400-400, parallel.
TEST(DCN, FlopsOfTheDocsTable) {
  struct Case {
    const char* kind;
    int32_t low_rank, num_experts;
    double flops;
  };
  for (const Case& k : {Case{"dcn", 0, 1, 3434976}, Case{"dcn_v2", 0, 1, 10432512}, Case{"dcn_v2", 64, 1, 4861440},
                        Case{"dcn_v2", 64, 4, 9514368}}) {
    ModelConfig c;
    c.kind = k.kind;
    c.low_rank = k.low_rank;
    c.num_experts = k.num_experts;
    c.feature_size = 100;
    c.field_size = 39;
    c.embedding_size = 16;
    DCN m(c);
    ASSERT_TRUE(m.status().ok()) << m.status().ToString();
    EXPECT_EQ(m.GemmFlopsPerExample(), k.flops) << k.kind << " r=" << k.low_rank << " E=" << k.num_experts;
  }
}

// Mixed precision (every cross, MLP and output GEMM in bf16): one step agrees with f32 to bf16's
// rounding (2^-8 per operand; weight gradients sum B terms of random sign, so a few % there), for
// every cross variant; a CPU without AVX512_BF16 fails the step by name.
TEST(DCNv2, Bf16StepMatchesF32) {
  struct Case {
    const char* kind;
    int32_t low_rank, num_experts;
  };
  for (const Case& k : {Case{"dcn", 0, 1}, Case{"dcn_v2", 0, 1}, Case{"dcn_v2", 8, 1}, Case{"dcn_v2", 8, 4}}) {
    ModelConfig c;
    c.kind = k.kind;
    c.low_rank = k.low_rank;
    c.num_experts = k.num_experts;
    c.feature_size = 3000;
    c.field_size = 39;
    c.embedding_size = 4;
    c.deep_layers = {64, 32};
    c.dropout = 0.0f;
    ModelConfig cb = c;
    cb.gemm_dtype = DataType::kBF16;
    const std::string what = std::string(k.kind) + " r=" + std::to_string(k.low_rank) + " E=" +
                             std::to_string(k.num_experts);
    SCOPED_TRACE(what);
    DCN f32(c), bf16(cb);
    const data::Batch batch = RandomBatch(256, c.field_size, c.feature_size, 11);
    Step a(batch, c, 1.0f), b(batch, c, 1.0f);
    ASSERT_TRUE(f32.TrainStep(batch, a.u, a.idx, nullptr, a.v_rows.data(), 3, &a.wg, &a.vg, &a.loss).ok());
    const Status st = bf16.TrainStep(batch, b.u, b.idx, nullptr, b.v_rows.data(), 3, &b.wg, &b.vg, &b.loss);
    const Status support = Bf16GemmSupported();
    if (!support.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
      EXPECT_NE(st.message().find(support.message()), std::string::npos) << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.ok()) << st.ToString();
    const std::vector<float> la(f32.logits().begin(), f32.logits().end()),
        lb(bf16.logits().begin(), bf16.logits().end());
    EXPECT_LT(RelDiff(lb, la), 1e-2) << "logits";  // measured 2.5e-3
    EXPECT_NE(b.loss.logloss, a.loss.logloss) << "bf16 gave the f32 bits: were bf16 operands used?";
    for (size_t i = 1; i < f32.dense_params().size(); ++i) {
      const DenseParam& pa = f32.dense_params()[i];
      // Measured: cross layers and gate 0.25-0.5%, output 0.3%, mlp 2-7% (B terms of random sign).
      const double tol = pa.name.starts_with("cross") ? 0.03 : pa.name.starts_with("output") ? 0.02 : 0.2;
      EXPECT_LT(RelDiff(bf16.dense_params()[i].grad, pa.grad), tol) << pa.name;
    }
    EXPECT_LT(RelDiff(b.vg.grad, a.vg.grad), 0.1) << "V grad";  // measured 1.5%
  }
}

TEST(DCNv2, InvalidConfigIsReported) {
  ModelConfig c = Small("dcn_v2");
  c.num_experts = 4;  // without low_rank
  DCN m(c);
  EXPECT_FALSE(m.status().ok());
  EXPECT_NE(m.status().message().find("num_experts 4 needs low_rank"), std::string::npos) << m.status().ToString();
  const data::Batch batch = RandomBatch(2, c.field_size, c.feature_size, 1);
  c.num_experts = 1;
  Step s(batch, c, 1.0f);
  const Status st = m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  c.kind = "deepfm";
  EXPECT_NE(DCN(c).status().message().find("DCN implements dcn and dcn_v2"), std::string::npos);
}

}  // namespace
}  // namespace ctrain::model
