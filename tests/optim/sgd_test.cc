#include "ctrain/optim/sgd.h"

#include <gtest/gtest.h>

#include "optim/optim_test_util.h"

namespace ctrain::optim {
namespace {

using testing::CheckDenseAgainstReference;
using testing::CheckSparseEqualsDenseWhenAllRowsGiven;
using testing::CheckSparseTouchesOnlyGivenRows;
using testing::Make;

OptimizerConfig Cfg(const char* name, float lr, float momentum = 0.9f, bool nesterov = false) {
  OptimizerConfig c;
  c.name = name;
  c.learning_rate = lr;
  c.momentum = momentum;
  c.nesterov = nesterov;
  return c;
}

testing::RefRule SgdRef(double lr) {
  return [lr](double& p, double*, double g, int64_t) { p -= lr * g; };
}
testing::RefRule MomentumRef(double lr, double mu, bool nesterov) {
  return [=](double& p, double* s, double g, int64_t) {
    s[0] = mu * s[0] + g;
    p -= nesterov ? lr * (g + mu * s[0]) : lr * s[0];
  };
}

TEST(SgdTest, Slots) {
  auto sgd = Make(Cfg("sgd", 0.1f));
  EXPECT_EQ(sgd->name(), "sgd");
  EXPECT_EQ(sgd->num_slots(), 0);
  auto mom = Make(Cfg("momentum", 0.1f));
  EXPECT_EQ(mom->name(), "momentum");
  EXPECT_EQ(mom->num_slots(), 1);
  EXPECT_EQ(mom->SlotName(0), "momentum");
  EXPECT_EQ(mom->SlotInit(0), 0.0f);
}

TEST(SgdTest, HandComputedTwoSteps) {
  // p = 1, g = 0.5, lr = 0.1.
  float g = 0.5f;
  {
    float p = 1.0f;
    auto o = Make(Cfg("sgd", 0.1f));
    o->ApplyDense(&p, &g, nullptr, 1, 1);
    EXPECT_FLOAT_EQ(p, 0.95f);
    o->ApplyDense(&p, &g, nullptr, 1, 2);
    EXPECT_FLOAT_EQ(p, 0.90f);
  }
  {
    // a1 = 0.5, p1 = 1 - 0.05 = 0.95; a2 = 0.45 + 0.5 = 0.95, p2 = 0.95 - 0.095 = 0.855.
    float p = 1.0f, a = 0.0f;
    float* slots[] = {&a};
    auto o = Make(Cfg("momentum", 0.1f, 0.9f));
    o->ApplyDense(&p, &g, slots, 1, 1);
    EXPECT_FLOAT_EQ(a, 0.5f);
    EXPECT_FLOAT_EQ(p, 0.95f);
    o->ApplyDense(&p, &g, slots, 1, 2);
    EXPECT_FLOAT_EQ(a, 0.95f);
    EXPECT_FLOAT_EQ(p, 0.855f);
  }
  {
    // Nesterov: a1 = 0.5, p1 = 1 - 0.1 * (0.5 + 0.45) = 0.905;
    //           a2 = 0.95, p2 = 0.905 - 0.1 * (0.5 + 0.855) = 0.7695.
    float p = 1.0f, a = 0.0f;
    float* slots[] = {&a};
    auto o = Make(Cfg("momentum", 0.1f, 0.9f, true));
    o->ApplyDense(&p, &g, slots, 1, 1);
    EXPECT_FLOAT_EQ(p, 0.905f);
    o->ApplyDense(&p, &g, slots, 1, 2);
    EXPECT_FLOAT_EQ(a, 0.95f);
    EXPECT_FLOAT_EQ(p, 0.7695f);
  }
}

TEST(SgdTest, DenseMatchesReference) {
  CheckDenseAgainstReference(Cfg("sgd", 0.05f), SgdRef(0.05), 37, 6);
  CheckDenseAgainstReference(Cfg("momentum", 0.05f, 0.8f), MomentumRef(0.05, 0.8, false), 37, 6);
  CheckDenseAgainstReference(Cfg("momentum", 0.05f, 0.8f, true), MomentumRef(0.05, 0.8, true), 37, 6);
}

TEST(SgdTest, SparseTouchesOnlyGivenRows) {
  CheckSparseTouchesOnlyGivenRows(Cfg("sgd", 0.05f), SgdRef(0.05));
  CheckSparseTouchesOnlyGivenRows(Cfg("momentum", 0.05f, 0.8f), MomentumRef(0.05, 0.8, false));
  CheckSparseTouchesOnlyGivenRows(Cfg("momentum", 0.05f, 0.8f, true), MomentumRef(0.05, 0.8, true));
}

TEST(SgdTest, SparseEqualsDenseWhenAllRowsGiven) {
  CheckSparseEqualsDenseWhenAllRowsGiven(Cfg("sgd", 0.05f));
  CheckSparseEqualsDenseWhenAllRowsGiven(Cfg("momentum", 0.05f, 0.8f));
  CheckSparseEqualsDenseWhenAllRowsGiven(Cfg("momentum", 0.05f, 0.8f, true));
}

TEST(SgdTest, InvalidConfig) {
  auto bad_lr = MakeOptimizer(Cfg("sgd", 0.0f));
  ASSERT_FALSE(bad_lr.ok());
  EXPECT_EQ(bad_lr.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_lr.status().message(), "optimizer sgd: learning_rate 0 must be finite and > 0");
  auto bad_mu = MakeOptimizer(Cfg("momentum", 0.1f, 1.0f));
  ASSERT_FALSE(bad_mu.ok());
  EXPECT_EQ(bad_mu.status().message(), "optimizer momentum: momentum 1 not in [0, 1)");
  auto nesterov_sgd = MakeOptimizer(Cfg("sgd", 0.1f, 0.9f, true));
  ASSERT_FALSE(nesterov_sgd.ok());
  EXPECT_EQ(nesterov_sgd.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ctrain::optim
