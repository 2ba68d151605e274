#include "ctrain/optim/adagrad.h"

#include <gtest/gtest.h>

#include "optim/optim_test_util.h"

namespace ctrain::optim {
namespace {

using testing::Make;

OptimizerConfig Cfg(float lr, float init = 0.1f, float eps = 1e-7f) {
  OptimizerConfig c;
  c.name = "adagrad";
  c.learning_rate = lr;
  c.initial_accumulator_value = init;
  c.epsilon = eps;
  return c;
}

testing::RefRule Ref(double lr, double eps) {
  return [=](double& p, double* s, double g, int64_t) {
    s[0] += g * g;
    p -= lr * g / (std::sqrt(s[0]) + eps);
  };
}

TEST(AdagradTest, Slots) {
  auto o = Make(Cfg(0.1f, 0.25f));
  EXPECT_EQ(o->num_slots(), 1);
  EXPECT_EQ(o->SlotName(0), "accumulator");
  EXPECT_EQ(o->SlotInit(0), 0.25f);
}

TEST(AdagradTest, HandComputedTwoSteps) {
  // lr 0.1, acc0 0.1, eps 0, p 1, g 0.3:
  // acc1 = 0.19, p1 = 1 - 0.03 / sqrt(0.19) = 0.931175280;
  // acc2 = 0.28, p2 = p1 - 0.03 / sqrt(0.28) = 0.874480609.
  auto o = Make(Cfg(0.1f, 0.1f, 0.0f));
  float p = 1.0f, acc = o->SlotInit(0), g = 0.3f;
  float* slots[] = {&acc};
  o->ApplyDense(&p, &g, slots, 1, 1);
  EXPECT_FLOAT_EQ(acc, 0.19f);
  EXPECT_NEAR(p, 0.931175280, 1e-6);
  o->ApplyDense(&p, &g, slots, 1, 2);
  EXPECT_FLOAT_EQ(acc, 0.28f);
  EXPECT_NEAR(p, 0.874480609, 1e-6);
}

TEST(AdagradTest, DenseMatchesReference) {
  testing::CheckDenseAgainstReference(Cfg(0.05f), Ref(0.05, 1e-7f), 37, 8);
  testing::CheckDenseAgainstReference(Cfg(0.5f, 0.0f, 1e-3f), Ref(0.5, 1e-3f), 37, 8);
}

TEST(AdagradTest, SparseTouchesOnlyGivenRows) {
  testing::CheckSparseTouchesOnlyGivenRows(Cfg(0.05f), Ref(0.05, 1e-7f));
}

TEST(AdagradTest, SparseEqualsDenseWhenAllRowsGiven) {
  testing::CheckSparseEqualsDenseWhenAllRowsGiven(Cfg(0.05f));
}

TEST(AdagradTest, InvalidConfig) {
  auto neg = MakeOptimizer(Cfg(0.1f, -0.1f));
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(neg.status().message(), "optimizer adagrad: initial_accumulator_value -0.100000001 not in [0, inf)");
  auto zero = MakeOptimizer(Cfg(0.1f, 0.0f, 0.0f));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ctrain::optim
