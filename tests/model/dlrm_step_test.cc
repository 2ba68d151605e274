// DLRM steps: the dense fields' rows, multi-hot batches, determinism, and learning with plain SGD.
#include "ctrain/model/dlrm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/dlrm_testing.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using dlrm_testing::Prepare;
using dlrm_testing::RandomBatch;
using dlrm_testing::SmallConfig;
using dlrm_testing::Step;
using dlrm_testing::Table;

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
