#include "ctrain/optim/adam.h"

#include <gtest/gtest.h>

#include "optim/optim_test_util.h"

namespace ctrain::optim {
namespace {

using testing::Make;

OptimizerConfig Cfg(float lr, float b1 = 0.9f, float b2 = 0.999f, float eps = 1e-8f) {
  OptimizerConfig c;
  c.name = "adam";
  c.learning_rate = lr;
  c.beta1 = b1;
  c.beta2 = b2;
  c.epsilon = eps;
  return c;
}

// Reference in double with the float hyper-parameters as given.
testing::RefRule Ref(const OptimizerConfig& c) {
  const double lr = c.learning_rate, b1 = c.beta1, b2 = c.beta2, eps = c.epsilon;
  return [=](double& p, double* s, double g, int64_t t) {
    s[0] = b1 * s[0] + (1 - b1) * g;
    s[1] = b2 * s[1] + (1 - b2) * g * g;
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    p -= lr_t * s[0] / (std::sqrt(s[1]) + eps);
  };
}

TEST(AdamTest, Slots) {
  auto o = Make(Cfg(0.001f));
  EXPECT_EQ(o->num_slots(), 2);
  EXPECT_EQ(o->SlotName(0), "m");
  EXPECT_EQ(o->SlotName(1), "v");
  EXPECT_EQ(o->SlotInit(0), 0.0f);
  EXPECT_EQ(o->SlotInit(1), 0.0f);
}

TEST(AdamTest, HandComputedTwoStepsExactHyperParameters) {
  // Hyper-parameters exact in binary: lr 0.125, beta1 0.5, beta2 0.75, epsilon 0; p 1.
  // Step 1, g 0.5: m = 0.25, v = 0.0625, lr_t = 0.125 * sqrt(0.25) / 0.5 = 0.125,
  //   p = 1 - 0.125 * 0.25 / 0.25 = 0.875.
  // Step 2, g -1: m = 0.125 - 0.5 = -0.375, v = 0.046875 + 0.25 = 0.296875,
  //   lr_t = 0.125 * sqrt(0.4375) / 0.75 = 0.110239638, p = 0.875 + lr_t * 0.375 / sqrt(0.296875)
  //   = 0.950872122.
  auto o = Make(Cfg(0.125f, 0.5f, 0.75f, 0.0f));
  const auto& adam = static_cast<const AdamOptimizer&>(*o);
  float p = 1.0f, m = 0.0f, v = 0.0f;
  float* slots[] = {&m, &v};
  float g = 0.5f;
  EXPECT_FLOAT_EQ(adam.StepSize(1), 0.125f);
  o->ApplyDense(&p, &g, slots, 1, 1);
  EXPECT_FLOAT_EQ(m, 0.25f);
  EXPECT_FLOAT_EQ(v, 0.0625f);
  EXPECT_FLOAT_EQ(p, 0.875f);
  g = -1.0f;
  EXPECT_FLOAT_EQ(adam.StepSize(2), 0.110239638f);
  o->ApplyDense(&p, &g, slots, 1, 2);
  EXPECT_FLOAT_EQ(m, -0.375f);
  EXPECT_FLOAT_EQ(v, 0.296875f);
  EXPECT_FLOAT_EQ(p, 0.950872122f);
}

TEST(AdamTest, HandComputedTwoStepsDefaults) {
  // lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8, g 0.5 twice (values in exact
  // decimal arithmetic; the float hyper-parameters differ in the 8th digit):
  // Step 1: m = 0.05, v = 0.00025, lr_t = 0.001 * sqrt(0.001) / 0.1 = 3.16227766e-4,
  //   update = lr_t * 0.05 / (0.0158113883 + 1e-8) = 9.99999368e-4.
  // Step 2: m = 0.095, v = 0.00049975, lr_t = 0.001 * sqrt(0.001999) / 0.19 = 2.35316725e-4,
  //   update = lr_t * 0.095 / (0.0223550889 + 1e-8) = 9.99999553e-4.
  auto o = Make(Cfg(0.001f));
  float p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
  float* slots[] = {&m, &v};
  o->ApplyDense(&p, &g, slots, 1, 1);
  EXPECT_NEAR(m, 0.05, 0.05 * 1e-6);
  EXPECT_NEAR(v, 0.00025, 0.00025 * 2e-5);
  EXPECT_NEAR(p, 1.0 - 9.99999368e-4, 2e-7);
  o->ApplyDense(&p, &g, slots, 1, 2);
  EXPECT_NEAR(m, 0.095, 0.095 * 1e-6);
  EXPECT_NEAR(v, 0.00049975, 0.0005 * 2e-5);
  EXPECT_NEAR(p, 1.0 - 9.99999368e-4 - 9.99999553e-4, 2e-7);
}

TEST(AdamTest, DenseMatchesReference) {
  testing::CheckDenseAgainstReference(Cfg(0.01f), Ref(Cfg(0.01f)), 37, 10);
  testing::CheckDenseAgainstReference(Cfg(0.1f, 0.5f, 0.9f, 1e-3f), Ref(Cfg(0.1f, 0.5f, 0.9f, 1e-3f)), 37, 10);
}

TEST(AdamTest, SparseTouchesOnlyGivenRows) {
  // Lazy: the reference applies the rule only to the given rows, with the global step.
  testing::CheckSparseTouchesOnlyGivenRows(Cfg(0.01f), Ref(Cfg(0.01f)));
}

TEST(AdamTest, SparseEqualsDenseWhenAllRowsGiven) {
  testing::CheckSparseEqualsDenseWhenAllRowsGiven(Cfg(0.01f));
}

TEST(AdamTest, LazySparseDiffersFromDenseWithZeroGradient) {
  // Row 1 is skipped at step 2. Lazy Adam leaves it (and its m, v) alone,
  // whereas dense Adam with a zero gradient still moves it by the decayed momentum.
  auto o = Make(Cfg(0.01f));
  const int32_t dim = 2;
  std::vector<float> table = {1, 2, 3, 4}, m(4, 0.0f), v(4, 0.0f);
  float* slots[] = {m.data(), v.data()};
  std::vector<int64_t> both = {0, 1}, first = {0};
  std::vector<float> g1 = {0.1f, 0.2f, 0.3f, 0.4f};
  o->ApplySparse(table.data(), slots, dim, both, g1.data(), 1);
  std::vector<float> dense = table, dm = m, dv = v;
  float* dslots[] = {dm.data(), dv.data()};
  const std::vector<float> row1_after_step1(table.begin() + 2, table.end());
  const std::vector<float> m1(m.begin() + 2, m.end()), v1(v.begin() + 2, v.end());
  std::vector<float> g2 = {0.5f, 0.5f};
  o->ApplySparse(table.data(), slots, dim, first, g2.data(), 2);
  EXPECT_EQ(std::vector<float>(table.begin() + 2, table.end()), row1_after_step1);
  EXPECT_EQ(std::vector<float>(m.begin() + 2, m.end()), m1);
  EXPECT_EQ(std::vector<float>(v.begin() + 2, v.end()), v1);
  std::vector<float> g2_dense = {0.5f, 0.5f, 0.0f, 0.0f};
  o->ApplyDense(dense.data(), g2_dense.data(), dslots, 4, 2);
  EXPECT_EQ(dense[0], table[0]);  // row 0 identical either way
  EXPECT_EQ(dense[1], table[1]);
  EXPECT_NE(dense[2], table[2]);  // dense moved row 1 with g = 0
  EXPECT_FLOAT_EQ(dm[2], 0.9f * m1[0]);
}

TEST(AdamTest, InvalidConfig) {
  auto b1 = MakeOptimizer(Cfg(0.1f, 1.5f));
  ASSERT_FALSE(b1.ok());
  EXPECT_EQ(b1.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b1.status().message(), "optimizer adam: beta1 1.5 not in [0, 1)");
  auto b2 = MakeOptimizer(Cfg(0.1f, 0.9f, 1.0f));
  ASSERT_FALSE(b2.ok());
  EXPECT_EQ(b2.status().message(), "optimizer adam: beta2 1 not in [0, 1)");
  auto eps = MakeOptimizer(Cfg(0.1f, 0.9f, 0.99f, -1.0f));
  ASSERT_FALSE(eps.ok());
  EXPECT_EQ(eps.status().message(), "optimizer adam: epsilon -1 not in [0, inf)");
}

}  // namespace
}  // namespace ctrain::optim
