#include "ctrain/model/dlrm.h"

#include <algorithm>
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

// The embedding table V as the caller holds it (DLRM reads no w).
struct Table {
  int32_t K;
  std::vector<float> V;
  Table(int64_t fs, int32_t k, uint64_t seed) : K(k), V(fs * k) { InitEmbeddings(seed, fs, k, nullptr, V.data()); }
  std::vector<float> Gather(const std::vector<int64_t>& u) const {
    std::vector<float> rows(u.size() * K);
    for (size_t i = 0; i < u.size(); ++i) std::memcpy(rows.data() + i * K, V.data() + u[i] * K, sizeof(float) * K);
    return rows;
  }
};

// Rows whose first N fields are dense (ids 0..N-1, one per field, values in (0, 1.5)) and the rest
// categorical (ids >= N, values 1 or random).
data::Batch RandomBatch(int64_t B, int32_t F, int32_t N, int64_t feature_size, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Batch batch;
  batch.field_size = F;
  std::vector<int64_t> ids(F);
  std::vector<float> vals(F);
  for (int64_t b = 0; b < B; ++b) {
    for (int32_t f = 0; f < F; ++f) {
      if (f < N) {
        ids[f] = f;
        vals[f] = 0.05f + 1.4f * (rng() % 1000) / 1000.0f;
      } else {
        ids[f] = N + rng() % (feature_size - N);
        vals[f] = (rng() % 3 == 0) ? 0.5f + (rng() % 1000) / 1000.0f : 1.0f;
      }
    }
    batch.AppendRow(static_cast<float>(rng() % 2), ids, vals);
  }
  return batch;
}

struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
};

Step Prepare(const data::Batch& batch, const Table& t) {
  Step s;
  UniqueIds(batch, &s.u, &s.idx);
  s.v_rows = t.Gather(s.u);
  return s;
}

ModelConfig SmallConfig(int32_t num_dense = 3) {
  ModelConfig c;
  c.kind = "dlrm";
  c.feature_size = 40;
  c.field_size = 7;
  c.num_dense_fields = num_dense;
  c.embedding_size = 3;
  c.bottom_mlp = {6, 5};
  c.top_mlp = {7, 4};
  c.dropout = 0.0f;
  c.l2_reg = 0.01f;
  return c;
}

// Adds U(-a, a) to every dense parameter, so no bias or BN term is an identity.
void Perturb(Dlrm* m, float a) {
  for (DenseParam& p : m->dense_params()) {
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size() * 7 + p.name.size()), -a, a);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
}

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

// The dense fields' ids are gathered by the embedding stage but never read: their rows get exactly the
// l2 gradient 2 * l2_reg * V[u] (zero without l2).
TEST(Dlrm, DenseFieldRowsGetOnlyTheL2Gradient) {
  for (float l2 : {0.0f, 0.01f}) {
    ModelConfig c = SmallConfig(3);
    c.l2_reg = l2;
    Dlrm m(c);
    Table t(c.feature_size, c.embedding_size, 2);
    const data::Batch batch = RandomBatch(16, 7, 3, 40, 8);
    Step s = Prepare(batch, t);
    ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss).ok());
    ASSERT_EQ(s.u[0], 0);  // the dense fields use ids 0, 1, 2 only
    ASSERT_EQ(s.u[2], 2);
    for (int i = 0; i < 3 * 3; ++i) EXPECT_EQ(s.vg.grad[i], 2.0f * l2 * s.v_rows[i]) << "i=" << i;
    double categorical = 0;
    for (size_t i = 9; i < s.vg.grad.size(); ++i) categorical += std::fabs(s.vg.grad[i]);
    EXPECT_GT(categorical, 0.0);
  }
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

// A multi-hot batch: one id per dense field gives the one-hot model's bits; a dense field with 0 or 2 ids is
// refused by name, before anything runs.
TEST(Dlrm, MultiHotDenseFieldsMustBeOneHot) {
  ModelConfig c = SmallConfig(3);
  Dlrm m(c);
  Table t(c.feature_size, c.embedding_size, 3);
  const data::Batch one_hot = RandomBatch(6, 7, 3, 40, 9);
  auto to_multi = [&](int extra_row, int extra_field, int64_t ids_there) {
    data::Batch mb;
    mb.field_size = 7;
    mb.field_splits = {0};
    for (int64_t b = 0; b < one_hot.size(); ++b) {
      std::vector<int64_t> ids;
      std::vector<float> vals;
      std::vector<int32_t> lens;
      for (int f = 0; f < 7; ++f) {
        const int64_t n = (b == extra_row && f == extra_field) ? ids_there : 1;
        for (int64_t j = 0; j < n; ++j) {
          ids.push_back(one_hot.ids[b * 7 + f]);
          vals.push_back(one_hot.values[b * 7 + f] / static_cast<float>(n));
        }
        lens.push_back(static_cast<int32_t>(n));
      }
      mb.AppendMultiHotRow(one_hot.labels[b], ids, vals, lens);
    }
    return mb;
  };
  Step s = Prepare(one_hot, t);
  ASSERT_TRUE(m.TrainStep(one_hot, s.u, s.idx, nullptr, s.v_rows.data(), 0, &s.wg, &s.vg, &s.loss).ok());
  const std::vector<float> want(m.logits().begin(), m.logits().end());
  const std::vector<float> want_grad = s.vg.grad;

  const data::Batch same = to_multi(-1, -1, 1);
  Step ms = Prepare(same, t);
  ASSERT_TRUE(m.TrainStep(same, ms.u, ms.idx, nullptr, ms.v_rows.data(), 0, &ms.wg, &ms.vg, &ms.loss).ok());
  EXPECT_EQ(std::vector<float>(m.logits().begin(), m.logits().end()), want);
  EXPECT_EQ(ms.vg.grad, want_grad);

  // A categorical field may be multi-hot.
  const data::Batch cat = to_multi(2, 5, 2);
  Step cs = Prepare(cat, t);
  EXPECT_TRUE(m.TrainStep(cat, cs.u, cs.idx, nullptr, cs.v_rows.data(), 0, &cs.wg, &cs.vg, &cs.loss).ok());

  for (int64_t n : {2, 0}) {
    const data::Batch bad = to_multi(4, 1, n);
    Step bs = Prepare(bad, t);
    const Status st = m.TrainStep(bad, bs.u, bs.idx, nullptr, bs.v_rows.data(), 0, &bs.wg, &bs.vg, &bs.loss);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "dlrm: row 4 of the batch, field 1: a dense field (--num-dense-fields 3) must hold "
                            "exactly one value, this multi-hot field holds " + std::to_string(n) + " ids");
    std::vector<float> probs(6);
    EXPECT_EQ(m.Predict(bad, bs.u, bs.idx, nullptr, bs.v_rows.data(), probs.data()).message(), st.message());
  }
}

TEST(Dlrm, DeterministicAcrossRunsWithDropoutAndBatchNorm) {
  ModelConfig c = SmallConfig(3);
  c.dropout = 0.5f;
  c.batch_norm = true;
  c.bottom_mlp = {33, 17};
  c.top_mlp = {19};
  auto run = [&](std::vector<double>* losses, std::vector<float>* grads) {
    Dlrm m(c);
    Table t(c.feature_size, c.embedding_size, 9);
    for (int step = 0; step < 3; ++step) {
      const data::Batch batch = RandomBatch(50, c.field_size, 3, c.feature_size, 100 + step);
      Step s = Prepare(batch, t);
      ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), step, &s.wg, &s.vg, &s.loss).ok());
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

// Plain SGD on a problem only the interaction of the dense input and a categorical field solves:
// label = (dense value > 0.5) XOR (field 2's id is even).
TEST(Dlrm, SgdLearnsAnInteraction) {
  ModelConfig c;
  c.kind = "dlrm";
  c.feature_size = 60;
  c.field_size = 4;
  c.num_dense_fields = 1;
  c.embedding_size = 4;
  c.bottom_mlp = {8};
  c.top_mlp = {16};
  c.dropout = 0.0f;
  Dlrm m(c);
  ASSERT_TRUE(m.status().ok());
  Table t(c.feature_size, c.embedding_size, 2);
  std::mt19937 rng(3);
  auto make = [&](int64_t B) {
    data::Batch batch;
    batch.field_size = 4;
    std::vector<int64_t> ids(4);
    std::vector<float> vals(4, 1.0f);
    for (int64_t b = 0; b < B; ++b) {
      ids[0] = 0;
      vals[0] = (rng() % 2) ? 0.8f + 0.2f * (rng() % 100) / 100.0f : 0.2f * (rng() % 100) / 100.0f;
      ids[1] = 1 + rng() % 10;
      ids[2] = 11 + rng() % 10;
      ids[3] = 21 + rng() % 30;
      const bool hi = vals[0] > 0.5f, even = ids[1] % 2 == 0;
      batch.AppendRow(hi != even ? 1.0f : 0.0f, ids, vals);
    }
    return batch;
  };
  const float lr = 0.2f;
  double first = 0, last = 0;
  for (int step = 0; step < 600; ++step) {
    const data::Batch batch = make(64);
    Step s = Prepare(batch, t);
    ASSERT_TRUE(m.TrainStep(batch, s.u, s.idx, nullptr, s.v_rows.data(), step, &s.wg, &s.vg, &s.loss).ok());
    if (step == 0) first = s.loss.loss;
    last = s.loss.loss;
    for (size_t i = 0; i < s.u.size(); ++i)
      for (int k = 0; k < 4; ++k) t.V[s.u[i] * 4 + k] -= lr * s.vg.grad[i * 4 + k];
    for (DenseParam& p : m.dense_params())
      for (size_t i = 0; i < p.value.size(); ++i) p.value[i] -= lr * p.grad[i];
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, 0.15) << "first " << first << " last " << last;
  const data::Batch test = make(200);
  Step s = Prepare(test, t);
  std::vector<float> probs(200);
  ASSERT_TRUE(m.Predict(test, s.u, s.idx, nullptr, s.v_rows.data(), probs.data()).ok());
  int correct = 0;
  for (int b = 0; b < 200; ++b) correct += (probs[b] > 0.5f) == (test.labels[b] > 0.5f);
  EXPECT_GE(correct, 190);
}

}  // namespace
}  // namespace ctrain::model
