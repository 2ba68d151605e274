#include "ctrain/model/deepfm.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/sigmoid_cross_entropy.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

// Tables owned by the "caller", as the trainer will hold them.
struct Tables {
  int64_t feature_size;
  int32_t K;
  std::vector<float> w, V;
  Tables(int64_t fs, int32_t k, uint64_t seed) : feature_size(fs), K(k), w(fs), V(fs * k) {
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

struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> w_rows, v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
};

Step Prepare(const data::Batch& batch, const Tables& t) {
  Step s;
  UniqueIds(batch, &s.u, &s.idx);
  t.Gather(s.u, &s.w_rows, &s.v_rows);
  return s;
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

// Full-model finite-difference check of the training loss w.r.t. w_rows,
// v_rows and every dense parameter.
void FullModelGradCheck(DeepFMConfig cfg, const std::string& name) {
  const std::string repro = "deepfm " + name + " F=5 K=3 deep=7,6 B=9 bn=" + std::to_string(cfg.batch_norm);
  SCOPED_TRACE(repro);
  DeepFM model(cfg);
  ASSERT_TRUE(model.status().ok()) << model.status().ToString();
  // Larger-than-default weights so every term matters.
  for (DenseParam& p : model.dense_params()) {
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size()), -0.6f, 0.6f);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
  Tables t(cfg.feature_size, cfg.embedding_size, 5);
  // Rows of order 1 (logits stay moderate, so float rounding of the loss stays
  // far below the finite-difference signal and the sigmoid is not saturated).
  for (float& x : t.V) x *= 4.0f;
  for (float& x : t.w) x *= 5.0f;
  const data::Batch batch = RandomBatch(9, cfg.field_size, cfg.feature_size, 77);
  Step s = Prepare(batch, t);
  ASSERT_TRUE(model.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 1, &s.wg, &s.vg, &s.loss).ok());
  EXPECT_GT(s.loss.l2, 0.0);
  for (float z : model.logits()) EXPECT_LT(std::fabs(z), 15.0f) << "test setup: logits too large for a float FD check";
  EXPECT_EQ(s.wg.ids, s.u);
  EXPECT_EQ(s.vg.ids, s.u);
  ASSERT_EQ(s.vg.grad.size(), s.u.size() * cfg.embedding_size);
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

TEST(DeepFM, GradCheckNoBatchNorm) { FullModelGradCheck(SmallConfig(), "plain"); }
TEST(DeepFM, GradCheckBatchNorm) {
  DeepFMConfig c = SmallConfig();
  c.batch_norm = true;
  FullModelGradCheck(c, "bn");
}
TEST(DeepFM, GradCheckNoHiddenLayers) {
  DeepFMConfig c = SmallConfig();
  c.deep_layers = {};
  FullModelGradCheck(c, "linear-deep");
}

TEST(DeepFM, ParamsNamesShapesAndFlops) {
  DeepFMConfig c;
  c.feature_size = 117581;
  c.field_size = 39;
  c.embedding_size = 32;
  c.batch_norm = true;
  DeepFM m(c);
  ASSERT_TRUE(m.status().ok());
  std::vector<std::string> names;
  for (const DenseParam& p : m.dense_params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fm_bias", "mlp0/weights", "mlp0/biases", "bn_0/gamma", "bn_0/beta",
                                             "mlp1/weights", "mlp1/biases", "bn_1/gamma", "bn_1/beta",
                                             "mlp2/weights", "mlp2/biases", "bn_2/gamma", "bn_2/beta",
                                             "deep_out/weights", "deep_out/biases"}));
  EXPECT_EQ(m.dense_params()[1].shape, (std::vector<int64_t>{1248, 400}));
  EXPECT_EQ(m.dense_params()[13].shape, (std::vector<int64_t>{400, 1}));
  ASSERT_EQ(m.state().size(), 6u);
  EXPECT_EQ(m.state()[1].name, "bn_0/moving_variance");
  EXPECT_EQ(m.state()[1].value[0], 1.0f);
  // 6 * (1248*400 + 400*400 + 400*400 + 400*1)
  EXPECT_EQ(m.GemmFlopsPerExample(), 4917600.0);
  // Glorot-uniform limits.
  const float lim = std::sqrt(6.0f / (1248 + 400));
  float mx = 0;
  for (float v : m.dense_params()[1].value) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, lim);
  EXPECT_GT(mx, 0.99f * lim);
}

TEST(DeepFM, InitEmbeddingsShardedEqualsWhole) {
  const int64_t fs = 1000;
  const int32_t K = 4;
  std::vector<float> w(fs), V(fs * K), ws(100), Vs(100 * K);
  InitEmbeddings(3, fs, K, w.data(), V.data());
  InitEmbeddingRows(3, fs, K, 500, 100, ws.data(), Vs.data());
  EXPECT_EQ(0, std::memcmp(ws.data(), w.data() + 500, sizeof(float) * 100));
  EXPECT_EQ(0, std::memcmp(Vs.data(), V.data() + 500 * K, sizeof(float) * 100 * K));
  // Truncated normal: |x| <= 2 sigma, sample stddev close to the Glorot value.
  const double sv = std::sqrt(2.0 / (fs + K));
  double ss = 0;
  for (float x : V) {
    EXPECT_LE(std::fabs(x), 2.0 * sv / 0.87962566103423978 + 1e-7);
    ss += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(std::sqrt(ss / V.size()), sv, 0.05 * sv);
}

// LR: logit = b + sum_f w[id_f] x_f; hand-computed on a 2x2 batch.
TEST(DeepFM, LogisticRegressionSpecialCase) {
  DeepFMConfig c;
  c.feature_size = 10;
  c.field_size = 2;
  c.use_fm = false;
  c.use_deep = false;
  c.l2_reg = 0.1f;
  DeepFM m(c);
  ASSERT_TRUE(m.status().ok());
  ASSERT_EQ(m.dense_params().size(), 1u);
  m.dense_params()[0].value[0] = 0.5f;
  data::Batch batch;
  batch.field_size = 2;
  batch.AppendRow(1.0f, std::vector<int64_t>{3, 7}, std::vector<float>{1.0f, 2.0f});
  batch.AppendRow(0.0f, std::vector<int64_t>{7, 7}, std::vector<float>{1.0f, 0.5f});
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(batch, &u, &idx);
  ASSERT_EQ(u, (std::vector<int64_t>{3, 7}));
  const std::vector<float> w_rows = {0.2f, -0.3f};
  SparseGrad wg, vg;
  LossTerms loss;
  ASSERT_TRUE(m.TrainStep(batch, u, idx, w_rows.data(), nullptr, 0, &wg, &vg, &loss).ok());
  const double z0 = 0.5 + 0.2 * 1 - 0.3 * 2, z1 = 0.5 - 0.3 * 1 - 0.3 * 0.5;  // 0.1, 0.05
  const double p0 = 1 / (1 + std::exp(-z0)), p1 = 1 / (1 + std::exp(-z1));
  EXPECT_NEAR(loss.logloss, (-std::log(p0) - std::log(1 - p1)) / 2, 1e-7);
  EXPECT_NEAR(loss.l2, 0.1 * (0.04 + 0.09), 1e-8);
  EXPECT_NEAR(loss.loss, loss.logloss + loss.l2, 1e-12);
  const double g0 = (p0 - 1) / 2, g1 = p1 / 2;
  EXPECT_NEAR(m.dense_params()[0].grad[0], g0 + g1, 1e-7);
  ASSERT_EQ(wg.ids, u);
  EXPECT_NEAR(wg.grad[0], g0 * 1 + 2 * 0.1 * 0.2, 1e-7);
  EXPECT_NEAR(wg.grad[1], g0 * 2 + g1 * 1 + g1 * 0.5 + 2 * 0.1 * -0.3, 1e-7);
  EXPECT_TRUE(vg.ids.empty());  // V unused by LR
  EXPECT_TRUE(vg.grad.empty());
  std::vector<float> probs(2);
  ASSERT_TRUE(m.Predict(batch, u, idx, w_rows.data(), nullptr, probs.data()).ok());
  EXPECT_NEAR(probs[0], p0, 1e-7);
  EXPECT_NEAR(probs[1], p1, 1e-7);
}

// FM: logit = b + sum w x + sum_{i<j} <v_i, v_j> x_i x_j.
TEST(DeepFM, FactorizationMachineSpecialCase) {
  DeepFMConfig c;
  c.feature_size = 10;
  c.field_size = 3;
  c.embedding_size = 2;
  c.use_deep = false;
  DeepFM m(c);
  data::Batch batch;
  batch.field_size = 3;
  batch.AppendRow(1.0f, std::vector<int64_t>{1, 4, 1}, std::vector<float>{1.0f, 2.0f, 0.5f});
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  UniqueIds(batch, &u, &idx);
  ASSERT_EQ(u, (std::vector<int64_t>{1, 4}));
  const std::vector<float> w_rows = {0.1f, 0.2f};
  const std::vector<float> v_rows = {1.0f, 2.0f, -1.0f, 0.5f};  // v1 = (1,2), v4 = (-1,0.5)
  SparseGrad wg, vg;
  LossTerms loss;
  ASSERT_TRUE(m.TrainStep(batch, u, idx, w_rows.data(), v_rows.data(), 0, &wg, &vg, &loss).ok());
  // e0 = v1*1 = (1,2), e1 = v4*2 = (-2,1), e2 = v1*0.5 = (0.5,1)
  // pairs: <e0,e1> = 0, <e0,e2> = 2.5, <e1,e2> = 0  -> 2.5; first order 0.1 + 0.4 + 0.05 = 0.55
  const double z = 2.5 + 0.55;
  EXPECT_NEAR(m.logits()[0], z, 1e-6);
  const double g = 1 / (1 + std::exp(-z)) - 1;
  EXPECT_NEAR(loss.logloss, std::log1p(std::exp(-z)), 1e-7);
  // d logit / d v1 = x0 * (e1 + e2) + x2 * (e0 + e1) = (-1.5, 2) + 0.5 * (-1, 3) = (-2, 3.5)
  // d logit / d v4 = x1 * (e0 + e2) = 2 * (1.5, 3) = (3, 6)
  ASSERT_EQ(vg.dim, 2);
  EXPECT_NEAR(vg.grad[0], g * -2.0, 1e-6);
  EXPECT_NEAR(vg.grad[1], g * 3.5, 1e-6);
  EXPECT_NEAR(vg.grad[2], g * 3.0, 1e-6);
  EXPECT_NEAR(vg.grad[3], g * 6.0, 1e-6);
  EXPECT_NEAR(wg.grad[0], g * 1.5, 1e-6);
  EXPECT_NEAR(wg.grad[1], g * 2.0, 1e-6);
}

TEST(DeepFM, DeterministicAcrossRunsWithDropoutAndBatchNorm) {
  DeepFMConfig c = SmallConfig();
  c.dropout = 0.5f;
  c.batch_norm = true;
  c.deep_layers = {33, 17};
  auto run = [&](std::vector<double>* losses, std::vector<float>* grads) {
    DeepFM m(c);
    Tables t(c.feature_size, c.embedding_size, 9);
    for (int step = 0; step < 3; ++step) {
      const data::Batch batch = RandomBatch(50, c.field_size, c.feature_size, 100 + step);
      Step s = Prepare(batch, t);
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

TEST(DeepFM, PredictMatchesTrainingForwardWithoutDropoutOrBatchNorm) {
  DeepFMConfig c = SmallConfig();
  DeepFM m(c);
  Tables t(c.feature_size, c.embedding_size, 1);
  const data::Batch batch = RandomBatch(13, c.field_size, c.feature_size, 5);
  Step s = Prepare(batch, t);
  ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss).ok());
  const std::vector<float> train_logits(m.logits().begin(), m.logits().end());
  std::vector<float> probs(13);
  ASSERT_TRUE(m.Predict(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), probs.data()).ok());
  for (int b = 0; b < 13; ++b) EXPECT_EQ(probs[b], Sigmoid(train_logits[b]));
}

TEST(DeepFM, Errors) {
  DeepFMConfig bad = SmallConfig();
  bad.dropout = 1.0f;
  DeepFM invalid(bad);
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.status().message(), "ModelConfig: dropout (drop probability) must be in [0, 1), got 1.000000");

  DeepFMConfig c = SmallConfig();
  DeepFM m(c);
  Tables t(c.feature_size, c.embedding_size, 1);
  data::Batch batch = RandomBatch(4, c.field_size, c.feature_size, 5);
  Step s = Prepare(batch, t);
  Status st = invalid.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);

  std::vector<int32_t> idx = s.idx;
  idx[6] = (idx[6] + 1) % static_cast<int32_t>(s.u.size());
  st = m.TrainStep(batch, s.u, idx, s.w_rows.data(), s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("index[6]"), std::string::npos) << st.ToString();

  data::Batch wrong = RandomBatch(4, 4, c.feature_size, 5);
  Step s2 = Prepare(wrong, t);
  st = m.TrainStep(wrong, s2.u, s2.idx, s2.w_rows.data(), s2.v_rows.data(), 0, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.message(), "deepfm: batch field_size 4 != config field_size 5");

  st = m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), nullptr, 0, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.message(), "deepfm: v_rows is null");

  // A NaN parameter row: the trainer learns which term went bad.
  s.w_rows[0] = std::nanf("");
  st = m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), 42, &s.wg, &s.vg, &s.loss);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().substr(0, 45), "step 42: loss is not finite (term: logloss), ");
  EXPECT_TRUE(std::isnan(s.loss.logloss));
}

// Plain SGD on a separable problem: the label is 1 iff field 0 holds an even id.
TEST(DeepFM, SgdLearnsSeparableProblem) {
  DeepFMConfig c;
  c.feature_size = 60;
  c.field_size = 4;
  c.embedding_size = 4;
  c.deep_layers = {16, 8};
  c.dropout = 0.1f;
  c.batch_norm = true;
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
    Step s = Prepare(batch, t);
    ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), step, &s.wg, &s.vg, &s.loss).ok());
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
  // Inference mode (moving BN stats, no dropout) also separates the classes.
  const data::Batch test = make(200);
  Step s = Prepare(test, t);
  std::vector<float> probs(200);
  ASSERT_TRUE(m.Predict(test, s.u, s.idx, s.w_rows.data(), s.v_rows.data(), probs.data()).ok());
  int correct = 0;
  for (int b = 0; b < 200; ++b) correct += (probs[b] > 0.5f) == (test.labels[b] > 0.5f);
  EXPECT_GE(correct, 196);
}

}  // namespace
}  // namespace ctrain::model
