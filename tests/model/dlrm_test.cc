#include "ctrain/model/dlrm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/sigmoid_cross_entropy.h"
#include "model/dlrm_testing.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using dlrm_testing::Perturb;
using dlrm_testing::Prepare;
using dlrm_testing::RandomBatch;
using dlrm_testing::SmallConfig;
using dlrm_testing::Step;
using dlrm_testing::Table;
using testing::CheckGradient;

// Naive DLRM forward in double, straight from the paper and the reference code (no BN, no dropout):
// returns the logits.
std::vector<double> NaiveLogits(Dlrm& m, const data::Batch& batch, const Step& s) {
  const ModelConfig& c = m.config();
  const int32_t F = c.field_size, N = c.num_dense_fields, K = c.embedding_size;
  auto param = [&](const std::string& name) -> const DenseParam& {
    for (const DenseParam& p : m.dense_params())
      if (p.name == name) return p;
    ADD_FAILURE() << "no parameter " << name;
    return m.dense_params()[0];
  };
  auto linear = [&](const std::vector<double>& x, const std::string& scope, bool relu) {
    const DenseParam& W = param(scope + "/weights");
    const DenseParam& bias = param(scope + "/biases");
    const int64_t in = W.shape[0], out = W.shape[1];
    EXPECT_EQ(static_cast<int64_t>(x.size()), in) << scope;
    std::vector<double> y(out);
    for (int64_t o = 0; o < out; ++o) {
      double a = bias.value[o];
      for (int64_t i = 0; i < in; ++i) a += x[i] * W.value[i * out + o];
      y[o] = relu ? std::max(0.0, a) : a;
    }
    return y;
  };
  std::vector<double> logits;
  for (int64_t b = 0; b < batch.size(); ++b) {
    std::vector<std::vector<double>> T;
    std::vector<double> x;
    if (N > 0) {
      for (int32_t f = 0; f < N; ++f) x.push_back(batch.values[b * F + f]);
      for (size_t i = 0; i <= c.bottom_mlp.size(); ++i) x = linear(x, "bot_mlp" + std::to_string(i), true);
      EXPECT_EQ(static_cast<int32_t>(x.size()), K);
      T.push_back(x);
    }
    for (int32_t f = N; f < F; ++f) {
      std::vector<double> e(K);
      const int32_t u = s.idx[b * F + f];
      for (int32_t k = 0; k < K; ++k) e[k] = static_cast<double>(s.v_rows[u * K + k]) * batch.values[b * F + f];
      T.push_back(e);
    }
    std::vector<double> r = x;  // [x, Zflat]: Z[i][j] for i in range(T), j in range(i)
    for (size_t i = 0; i < T.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        double d = 0;
        for (int32_t k = 0; k < K; ++k) d += T[i][k] * T[j][k];
        r.push_back(d);
      }
    for (size_t i = 0; i < c.top_mlp.size(); ++i) r = linear(r, "top_mlp" + std::to_string(i), true);
    r = linear(r, "top_out", false);
    logits.push_back(r[0] + param("bias").value[0]);
  }
  return logits;
}

TEST(Dlrm, ForwardMatchesNaiveReference) {
  for (int32_t N : {3, 0}) {
    SCOPED_TRACE("num_dense_fields " + std::to_string(N));
    Dlrm m(SmallConfig(N));
    ASSERT_TRUE(m.status().ok()) << m.status().ToString();
    Perturb(&m, 0.3f);
    Table t(40, 3, 4);
    for (float& v : t.V) v *= 3.0f;
    const data::Batch batch = RandomBatch(11, 7, N, 40, 21);
    Step s = Prepare(batch, t);
    std::vector<float> probs(11);
    ASSERT_TRUE(m.Predict(batch, s.u, s.idx, nullptr, s.v_rows.data(), probs.data()).ok());
    const std::vector<double> want = NaiveLogits(m, batch, s);
    double spread = 0;
    for (int b = 0; b < 11; ++b) {
      EXPECT_NEAR(m.logits()[b], want[b], 1e-5 * (1 + std::fabs(want[b]))) << "b=" << b;
      EXPECT_EQ(probs[b], Sigmoid(m.logits()[b]));
      spread = std::max(spread, std::fabs(want[b] - want[0]));
    }
    EXPECT_GT(spread, 0.05) << "test setup: the logits should differ between rows";
  }
}

// Full-model finite-difference check of the training loss w.r.t. v_rows and every dense parameter.
void FullModelGradCheck(ModelConfig cfg, const std::string& name) {
  const std::string repro = "dlrm " + name + " F=7 N=" + std::to_string(cfg.num_dense_fields) +
                            " K=3 bottom=6,5 top=7,4 B=9 bn=" + std::to_string(cfg.batch_norm);
  SCOPED_TRACE(repro);
  Dlrm model(cfg);
  ASSERT_TRUE(model.status().ok()) << model.status().ToString();
  Perturb(&model, 0.4f);
  Table t(cfg.feature_size, cfg.embedding_size, 5);
  for (float& x : t.V) x *= 4.0f;
  const data::Batch batch = RandomBatch(9, cfg.field_size, cfg.num_dense_fields, cfg.feature_size, 77);
  Step s = Prepare(batch, t);
  ASSERT_TRUE(model.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 1, &s.wg, &s.vg, &s.loss).ok());
  EXPECT_GT(s.loss.l2, 0.0);
  for (float z : model.logits()) EXPECT_LT(std::fabs(z), 15.0f) << "test setup: logits too large for a float FD check";
  EXPECT_TRUE(s.wg.ids.empty()) << "dlrm reads no w";
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
  // eps 3e-4, not 1e-3: a ReLU unit of the bottom MLP sits within 1e-3 of its kink in the plain case.
  const double eps = 3e-4, abs_tol = 5e-4, rel_tol = 2e-2;
  EXPECT_TRUE(CheckGradient(repro + " v_rows", &s.v_rows, vg, f, eps, abs_tol, rel_tol, {}, 80));
  for (size_t i = 0; i < model.dense_params().size(); ++i) {
    DenseParam& p = model.dense_params()[i];
    EXPECT_TRUE(CheckGradient(repro + " " + p.name, &p.value, dense_grads[i], f, eps, abs_tol, rel_tol, {}, 25));
  }
}

TEST(Dlrm, GradCheckDenseAndCategorical) { FullModelGradCheck(SmallConfig(3), "plain"); }
TEST(Dlrm, GradCheckBatchNorm) {
  ModelConfig c = SmallConfig(3);
  c.batch_norm = true;
  FullModelGradCheck(c, "bn");
}
TEST(Dlrm, GradCheckNoDenseFields) { FullModelGradCheck(SmallConfig(0), "no-dense"); }
TEST(Dlrm, GradCheckNoHiddenLayers) {
  ModelConfig c = SmallConfig(2);
  c.bottom_mlp = {};
  c.top_mlp = {};
  FullModelGradCheck(c, "no-hidden");
}
TEST(Dlrm, GradCheckAllFieldsDense) {  // T = 1: no pair, the top MLP reads the bottom output alone
  ModelConfig c = SmallConfig(7);
  FullModelGradCheck(c, "all-dense");
}

TEST(Dlrm, ParamsNamesShapesAndFlops) {
  ModelConfig c;  // Criteo: 13 dense + 26 categorical fields
  c.kind = "dlrm";
  c.feature_size = 117581;
  c.field_size = 39;
  c.num_dense_fields = 13;
  c.embedding_size = 16;
  c.bottom_mlp = {512, 256, 64};
  c.top_mlp = {512, 256};
  c.batch_norm = true;
  Dlrm m(c);
  ASSERT_TRUE(m.status().ok()) << m.status().ToString();
  EXPECT_EQ(m.num_vectors(), 27);
  EXPECT_EQ(m.top_input_width(), 16 + 351);
  std::vector<std::string> names;
  for (const DenseParam& p : m.dense_params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "bias",          "bot_mlp0/weights", "bot_mlp0/biases", "bot_bn_0/gamma",  "bot_bn_0/beta",
                       "bot_mlp1/weights", "bot_mlp1/biases", "bot_bn_1/gamma", "bot_bn_1/beta",  "bot_mlp2/weights",
                       "bot_mlp2/biases", "bot_bn_2/gamma",  "bot_bn_2/beta",   "bot_mlp3/weights", "bot_mlp3/biases",
                       "bot_bn_3/gamma", "bot_bn_3/beta",    "top_mlp0/weights", "top_mlp0/biases", "top_bn_0/gamma",
                       "top_bn_0/beta",  "top_mlp1/weights", "top_mlp1/biases", "top_bn_1/gamma",  "top_bn_1/beta",
                       "top_out/weights", "top_out/biases"}));
  EXPECT_EQ(m.dense_params()[1].shape, (std::vector<int64_t>{13, 512}));
  EXPECT_EQ(m.dense_params()[13].shape, (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(m.dense_params()[17].shape, (std::vector<int64_t>{367, 512}));
  EXPECT_EQ(m.dense_params()[25].shape, (std::vector<int64_t>{256, 1}));
  ASSERT_EQ(m.state().size(), 12u);
  EXPECT_EQ(m.state()[0].name, "bot_bn_0/moving_mean");
  EXPECT_EQ(m.state()[11].name, "top_bn_1/moving_variance");
  EXPECT_EQ(m.state()[11].value[0], 1.0f);
  const double bottom = 13 * 512 + 512 * 256 + 256 * 64 + 64 * 16, top = 367 * 512 + 512 * 256 + 256 * 1;
  EXPECT_EQ(m.GemmFlopsPerExample(), 6 * bottom + 6 * top + 6 * 351 * 16);
  const float lim = std::sqrt(6.0f / (367 + 512));
  float mx = 0;
  for (float v : m.dense_params()[17].value) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, lim);
  EXPECT_GT(mx, 0.99f * lim);
  for (float v : m.dense_params()[18].value) EXPECT_EQ(v, 0.0f);  // biases start at 0

  ModelConfig none = c;
  none.num_dense_fields = 0;
  Dlrm n(none);
  EXPECT_EQ(n.num_vectors(), 39);
  EXPECT_EQ(n.top_input_width(), 741);
  EXPECT_EQ(n.dense_params()[1].name, "top_mlp0/weights");
}

TEST(Dlrm, ConfigErrors) {
  ModelConfig c = SmallConfig(8);
  Dlrm too_many(c);
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_many.status().message(), "ModelConfig: num_dense_fields must be in [0, field_size = 7], got 8");
  c = SmallConfig(0);
  c.field_size = 1;
  Dlrm one(c);
  EXPECT_NE(one.status().message().find("dlrm without dense fields (num_dense_fields 0) needs field_size >= 2"),
            std::string::npos)
      << one.status().ToString();
  c = SmallConfig(3);
  c.bottom_mlp = {4, 0};
  EXPECT_EQ(Dlrm(c).status().message(), "ModelConfig: bottom_mlp[1] must be >= 1, got 0");
  c = SmallConfig(3);
  c.kind = "deepfm";
  EXPECT_EQ(Dlrm(c).status().message(), "Dlrm implements dlrm, not 'deepfm'");
  // MakeModel builds it by kind.
  StatusOr<std::unique_ptr<Model>> made = MakeModel(SmallConfig(3));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->kind(), "dlrm");
  EXPECT_FALSE(SmallConfig(3).reads_w());
  EXPECT_TRUE(SmallConfig(3).reads_v());
}

TEST(Dlrm, PredictMatchesTrainingForwardWithoutDropout) {
  Dlrm m(SmallConfig(3));
  Table t(40, 3, 1);
  const data::Batch batch = RandomBatch(13, 7, 3, 40, 5);
  Step s = Prepare(batch, t);
  ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss).ok());
  const std::vector<float> train_logits(m.logits().begin(), m.logits().end());
  std::vector<float> probs(13);
  ASSERT_TRUE(m.Predict(batch, s.u, s.idx, nullptr, s.v_rows.data(), probs.data()).ok());
  for (int b = 0; b < 13; ++b) EXPECT_EQ(probs[b], Sigmoid(train_logits[b]));
}

}  // namespace
}  // namespace ctrain::model
