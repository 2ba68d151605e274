// model/xdeepfm.h: the full model by finite differences (w, V rows and every dense parameter), its
// logit against the naive CIN reference, parameter names/shapes/FLOPs, determinism, Predict ==
// the training forward, and the config it refuses.
#include "ctrain/model/xdeepfm.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/bf16.h"
#include "ctrain/model/layers/sigmoid_cross_entropy.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

// The caller's tables and one step's gathered rows (as the trainer holds them).
struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> w_rows, v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
};

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

Step Prepare(const data::Batch& batch, const ModelConfig& c, uint64_t seed, float v_scale = 1.0f, float w_scale = 1.0f) {
  std::vector<float> w(c.feature_size), V(c.feature_size * c.embedding_size);
  InitEmbeddings(seed, c.feature_size, c.embedding_size, w.data(), V.data());
  Step s;
  UniqueIds(batch, &s.u, &s.idx);
  for (int64_t id : s.u) {
    s.w_rows.push_back(w_scale * w[id]);
    for (int32_t k = 0; k < c.embedding_size; ++k) s.v_rows.push_back(v_scale * V[id * c.embedding_size + k]);
  }
  return s;
}

ModelConfig SmallConfig() {
  ModelConfig c;
  c.kind = "xdeepfm";
  c.feature_size = 40;
  c.field_size = 4;
  c.embedding_size = 3;
  c.cin_layer_units = {3, 2};
  c.deep_layers = {6, 5};
  c.dropout = 0.0f;
  c.l2_reg = 0.01f;
  return c;
}

void FullModelGradCheck(const ModelConfig& cfg, const std::string& name) {
  const std::string repro = "xdeepfm " + name + " F=4 K=3 cin=3,2 B=7 deep=" + std::to_string(cfg.deep_layers.size()) +
                            " bn=" + std::to_string(cfg.batch_norm);
  SCOPED_TRACE(repro);
  XDeepFM model(cfg);
  ASSERT_TRUE(model.status().ok()) << model.status().ToString();
  for (DenseParam& p : model.dense_params()) {
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size()), -0.4f, 0.4f);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
  const data::Batch batch = RandomBatch(7, cfg.field_size, cfg.feature_size, 77);
  Step s = Prepare(batch, cfg, 5, 4.0f, 5.0f);
  ASSERT_TRUE(model.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 1, &s.wg, &s.vg, &s.loss).ok());
  EXPECT_GT(s.loss.l2, 0.0);
  for (float z : model.logits()) EXPECT_LT(std::fabs(z), 15.0f) << "test setup: logits too large for a float FD check";
  EXPECT_EQ(s.wg.ids, s.u);
  EXPECT_EQ(s.vg.ids, s.u);
  const std::vector<float> wg = s.wg.grad, vg = s.vg.grad;
  std::vector<std::vector<float>> dense_grads;
  for (const DenseParam& p : model.dense_params()) dense_grads.push_back(p.grad);
  auto f = [&] {
    SparseGrad a, b;
    LossTerms l;
    EXPECT_TRUE(model.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 1, &a, &b, &l).ok());
    return l.loss;
  };
  const double eps = 1e-3, abs_tol = 5e-4, rel_tol = 2e-2;
  EXPECT_TRUE(CheckGradient(repro + " w_rows", &s.w_rows, wg, f, eps, abs_tol, rel_tol));
  EXPECT_TRUE(CheckGradient(repro + " v_rows", &s.v_rows, vg, f, eps, abs_tol, rel_tol, {}, 60));
  for (size_t i = 0; i < model.dense_params().size(); ++i) {
    DenseParam& p = model.dense_params()[i];
    EXPECT_TRUE(CheckGradient(repro + " " + p.name, &p.value, dense_grads[i], f, eps, abs_tol, rel_tol, {}, 25));
  }
}

TEST(XDeepFM, GradCheck) { FullModelGradCheck(SmallConfig(), "plain"); }
TEST(XDeepFM, GradCheckBatchNorm) {
  ModelConfig c = SmallConfig();
  c.batch_norm = true;
  FullModelGradCheck(c, "bn");
}
TEST(XDeepFM, GradCheckCinOnly) {
  ModelConfig c = SmallConfig();
  c.deep_layers = {};
  FullModelGradCheck(c, "cin-only");
}

TEST(XDeepFM, ParamsNamesShapesAndFlops) {
  ModelConfig c;
  c.kind = "xdeepfm";
  c.feature_size = 1000;
  c.field_size = 39;
  c.embedding_size = 10;
  c.cin_layer_units = {16, 16};
  c.deep_layers = {400, 400};
  c.batch_norm = true;
  XDeepFM m(c);
  ASSERT_TRUE(m.status().ok()) << m.status().ToString();
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const DenseParam& p : m.dense_params()) names.push_back(p.name), shapes.push_back(p.shape);
  EXPECT_EQ(names, (std::vector<std::string>{"bias", "cin0/weights", "cin0/biases", "cin1/weights", "cin1/biases",
                                             "cin_out/weights", "cin_out/biases", "dnn0/weights", "dnn0/biases",
                                             "dnn_bn_0/gamma", "dnn_bn_0/beta", "dnn1/weights", "dnn1/biases",
                                             "dnn_bn_1/gamma", "dnn_bn_1/beta", "dnn_out/weights", "dnn_out/biases"}));
  EXPECT_EQ(shapes[1], (std::vector<int64_t>{39 * 39, 16}));
  EXPECT_EQ(shapes[3], (std::vector<int64_t>{39 * 16, 16}));
  EXPECT_EQ(shapes[5], (std::vector<int64_t>{32, 1}));
  EXPECT_EQ(shapes[7], (std::vector<int64_t>{390, 400}));
  EXPECT_EQ(shapes[15], (std::vector<int64_t>{400, 1}));
  ASSERT_EQ(m.state().size(), 4u);
  EXPECT_EQ(m.state()[1].name, "dnn_bn_0/moving_variance");
  EXPECT_TRUE(c.reads_w() && c.reads_v());
  // CIN: 6 K (1521*16 + 624*16) + 6*32; DNN: 6 (390*400 + 400*400 + 400).
  EXPECT_EQ(m.GemmFlopsPerExample(), 6.0 * 10 * (1521 * 16 + 624 * 16) + 6.0 * 32 + 6.0 * (390 * 400 + 400 * 400 + 400));
  // Glorot-uniform limits of a CIN weight; biases 0.
  const float lim = std::sqrt(6.0f / (1521 + 16));
  float mx = 0;
  for (float v : m.dense_params()[1].value) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, lim);
  EXPECT_GT(mx, 0.99f * lim);
  for (float v : m.dense_params()[2].value) EXPECT_EQ(v, 0.0f);
}

// Without a DNN: logit = bias + y_first + the naive CIN reference over e = V[ids] * values.
TEST(XDeepFM, LogitIsBiasPlusLinearPlusReferenceCin) {
  ModelConfig c = SmallConfig();
  c.deep_layers = {};
  XDeepFM m(c);
  ASSERT_TRUE(m.status().ok());
  for (DenseParam& p : m.dense_params()) p.value = RandomVector(p.value.size(), 3, -0.5f, 0.5f);
  const int64_t B = 11;
  const data::Batch batch = RandomBatch(B, c.field_size, c.feature_size, 8);
  Step s = Prepare(batch, c, 2, 4.0f, 5.0f);
  std::vector<float> probs(B);
  ASSERT_TRUE(m.Predict(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), probs.data()).ok());
  const int32_t F = c.field_size, K = c.embedding_size;
  std::vector<float> e(B * F * K);
  std::vector<double> y_first(B, 0.0);
  for (int64_t p = 0; p < B * F; ++p) {
    const int32_t u = s.idx[p];
    y_first[p / F] += static_cast<double>(s.w_rows[u]) * batch.values[p];
    for (int32_t k = 0; k < K; ++k) e[p * K + k] = s.v_rows[u * K + k] * batch.values[p];
  }
  const auto& d = m.dense_params();
  std::vector<double> y_cin(B);
  CinReferenceForward(B, F, K, c.cin_layer_units, e.data(), {d[1].value.data(), d[3].value.data()},
                      {d[2].value.data(), d[4].value.data()}, d[5].value.data(), d[6].value.data(), y_cin.data());
  double spread = 0;
  for (int64_t b = 0; b < B; ++b) {
    const double logit = d[0].value[0] + y_first[b] + y_cin[b];
    spread = std::max(spread, std::fabs(y_cin[b]));
    EXPECT_NEAR(m.logits()[b], logit, 1e-4 * (1 + std::fabs(logit))) << b;
    EXPECT_NEAR(probs[b], 1.0 / (1.0 + std::exp(-logit)), 1e-5) << b;
  }
  EXPECT_GT(spread, 0.1) << "the CIN term should matter";
}

TEST(XDeepFM, DeterministicAcrossRunsWithDropoutAndBatchNorm) {
  ModelConfig c = SmallConfig();
  c.dropout = 0.5f;
  c.batch_norm = true;
  c.deep_layers = {33, 17};
  auto run = [&](std::vector<double>* losses, std::vector<float>* grads) {
    XDeepFM m(c);
    for (int step = 0; step < 3; ++step) {
      const data::Batch batch = RandomBatch(50, c.field_size, c.feature_size, 100 + step);
      Step s = Prepare(batch, c, 9);
      ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), step, &s.wg, &s.vg, &s.loss).ok());
      losses->push_back(s.loss.loss);
      grads->insert(grads->end(), s.vg.grad.begin(), s.vg.grad.end());
      for (const DenseParam& p : m.dense_params()) grads->insert(grads->end(), p.grad.begin(), p.grad.end());
      for (const DenseParam& p : m.state()) grads->insert(grads->end(), p.value.begin(), p.value.end());
    }
  };
  std::vector<double> l1, l2;
  std::vector<float> g1, g2;
  run(&l1, &g1);
  run(&l2, &g2);
  EXPECT_EQ(l1, l2);
  ASSERT_EQ(g1.size(), g2.size());
  EXPECT_EQ(0, std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(float)));
}

TEST(XDeepFM, PredictMatchesTrainingForwardWithoutDropoutOrBatchNorm) {
  const ModelConfig c = SmallConfig();
  XDeepFM m(c);
  const data::Batch batch = RandomBatch(13, c.field_size, c.feature_size, 5);
  Step s = Prepare(batch, c, 1);
  ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss).ok());
  const std::vector<float> train_logits(m.logits().begin(), m.logits().end());
  std::vector<float> probs(13);
  ASSERT_TRUE(m.Predict(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), probs.data()).ok());
  for (int b = 0; b < 13; ++b) EXPECT_EQ(probs[b], Sigmoid(train_logits[b]));
}

double RelDiff(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Mixed precision: the CIN's GEMMs (and the DNN's) in bf16 give f32's step within bf16's rounding
// (a stale or transposed bf16 operand would be off by ~100%); without AVX512_BF16 the step fails by name.
TEST(XDeepFM, Bf16StepMatchesF32OrIsRefused) {
  ModelConfig c = SmallConfig();
  c.feature_size = 2000;
  c.field_size = 10;
  c.embedding_size = 8;
  c.cin_layer_units = {16, 16};
  c.deep_layers = {64, 64};
  ModelConfig cb = c;
  cb.gemm_dtype = DataType::kBF16;
  XDeepFM f32(c), bf16(cb);
  const data::Batch batch = RandomBatch(256, c.field_size, c.feature_size, 11);
  Step a = Prepare(batch, c, 5, 4.0f), b = Prepare(batch, c, 5, 4.0f);
  ASSERT_TRUE(f32.TrainStep(batch, a.u, a.idx, a.w_rows.data(), a.v_rows.data(), 3, &a.wg, &a.vg, &a.loss).ok());
  const Status st = bf16.TrainStep(batch, b.u, b.idx, b.w_rows.data(), b.v_rows.data(), 3, &b.wg, &b.vg, &b.loss);
  const Status support = Bf16GemmSupported();
  if (!support.ok()) {
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
    EXPECT_NE(st.message().find("bf16 GEMM needs a CPU with AVX512_BF16"), std::string::npos) << st.ToString();
    return;
  }
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::vector<float> la(f32.logits().begin(), f32.logits().end()), lb(bf16.logits().begin(), bf16.logits().end());
  EXPECT_LT(RelDiff(lb, la), 1e-2) << "logits";
  EXPECT_NE(b.loss.logloss, a.loss.logloss) << "bf16 gave the f32 bits: were bf16 operands used?";
  for (size_t i = 1; i < f32.dense_params().size(); ++i) {
    const DenseParam& pa = f32.dense_params()[i];
    EXPECT_LT(RelDiff(bf16.dense_params()[i].grad, pa.grad), 0.15) << pa.name;
  }
  EXPECT_LT(RelDiff(b.vg.grad, a.vg.grad), 0.1) << "V grad";
}

TEST(XDeepFM, RefusesNoCinLayerAndAnotherKind) {
  ModelConfig c = SmallConfig();
  c.cin_layer_units = {};
  XDeepFM m(c);
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("cin_layer_units: xdeepfm needs at least one CIN layer"), std::string::npos)
      << m.status().ToString();
  c = SmallConfig();
  c.cin_layer_units = {4, 0};
  EXPECT_NE(c.Validate().message().find("cin_layer_units[1] must be >= 1, got 0"), std::string::npos);
  c = SmallConfig();
  c.kind = "deepfm";
  XDeepFM other(c);
  EXPECT_FALSE(other.status().ok());
  StatusOr<std::unique_ptr<Model>> made = MakeModel(SmallConfig());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->kind(), "xdeepfm");
  EXPECT_NE(dynamic_cast<XDeepFM*>(made->get()), nullptr);
}

}  // namespace
}  // namespace ctrain::model
