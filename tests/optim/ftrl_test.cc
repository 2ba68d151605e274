#include "ctrain/optim/ftrl.h"

#include <gtest/gtest.h>

#include "optim/optim_test_util.h"

namespace ctrain::optim {
namespace {

using testing::Make;

OptimizerConfig Cfg(float lr, float l1 = 0.0f, float l2 = 0.0f, float beta = 0.0f, float lr_power = -0.5f,
                    float init = 0.1f) {
  OptimizerConfig c;
  c.name = "ftrl";
  c.learning_rate = lr;
  c.l1 = l1;
  c.l2 = l2;
  c.beta = beta;
  c.lr_power = lr_power;
  c.initial_accumulator_value = init;
  return c;
}

// TF's ApplyFtrl equations in double (beta folded into l2 as tf.keras does).
testing::RefRule Ref(const OptimizerConfig& c) {
  const double lr = c.learning_rate, l1 = c.l1, l2 = c.l2 + c.beta / (2.0 * lr), e = -c.lr_power;
  return [=](double& p, double* s, double g, int64_t) {
    const double n_new = s[0] + g * g;
    s[1] += g - (std::pow(n_new, e) - std::pow(s[0], e)) / lr * p;
    s[0] = n_new;
    const double z = s[1];
    p = std::fabs(z) <= l1 ? 0.0 : ((z > 0 ? l1 : -l1) - z) / (std::pow(n_new, e) / lr + 2 * l2);
  };
}

// Runs `steps` dense updates of var with the constant gradient g.
std::vector<float> RunFtrl(const OptimizerConfig& c, std::vector<float> var, std::vector<float> g, int steps) {
  auto o = Make(c);
  const int64_t n = var.size();
  std::vector<float> acc(n, o->SlotInit(0)), z(n, o->SlotInit(1));
  float* slots[] = {acc.data(), z.data()};
  for (int t = 1; t <= steps; ++t) o->ApplyDense(var.data(), g.data(), slots, n, t);
  return var;
}

TEST(FtrlTest, Slots) {
  auto o = Make(Cfg(0.1f, 0, 0, 0, -0.5f, 0.2f));
  EXPECT_EQ(o->num_slots(), 2);
  EXPECT_EQ(o->SlotName(0), "accumulator");
  EXPECT_EQ(o->SlotName(1), "linear");
  EXPECT_EQ(o->SlotInit(0), 0.2f);
  EXPECT_EQ(o->SlotInit(1), 0.0f);
}

TEST(FtrlTest, HandComputedOneStep) {
  // lr 0.1, n0 0.1, z0 0, p0 0, g 0.5: n1 = 0.35, z1 = 0.5 (p0 = 0 so sigma is irrelevant),
  // y = sqrt(0.35) / 0.1 = 5.91607978.
  //   l1 0:            p1 = -0.5 / 5.91607978 = -0.0845154255
  //   l1 0.1:          p1 = (0.1 - 0.5) / 5.91607978 = -0.0676123404
  //   l1 0.1, l2 0.5:  p1 = -0.4 / (5.91607978 + 1) = -0.0578362327
  //   l1 0.1, beta 1:  p1 = -0.4 / (5.91607978 + 10) = -0.0251318167
  //   l1 0.6 >= |z|:   p1 = 0
  struct Case {
    float l1, l2, beta;
    double want;
  } cases[] = {{0, 0, 0, -0.0845154255},
               {0.1f, 0, 0, -0.0676123404},
               {0.1f, 0.5f, 0, -0.0578362327},
               {0.1f, 0, 1.0f, -0.0251318167},
               {0.6f, 0, 0, 0.0}};
  for (const Case& c : cases) {
    std::vector<float> p = RunFtrl(Cfg(0.1f, c.l1, c.l2, c.beta), {0.0f}, {0.5f}, 1);
    EXPECT_NEAR(p[0], c.want, 1e-7) << "l1 " << c.l1 << " l2 " << c.l2 << " beta " << c.beta;
  }
}

// The expected values are those of TensorFlow's own FTRL tests
// (tensorflow/python/training/ftrl_test.py: testFtrlwithoutRegularization,
// testFtrlwithoutRegularization2, testFtrlWithL1, testFtrlWithL1_L2), which
// run tf.compat.v1.train.FtrlOptimizer(3.0, initial_accumulator_value=0.1).
TEST(FtrlTest, MatchesTensorFlowPublishedValues) {
  const std::vector<float> g0 = {0.1f, 0.2f}, g1 = {0.01f, 0.02f};
  auto expect = [](const std::vector<float>& got, std::vector<double> want, const char* what) {
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-5 * std::fabs(want[i])) << what << i;
  };
  expect(RunFtrl(Cfg(3.0f), {0, 0}, g0, 3), {-2.60260963, -4.29698515}, "noreg var0 ");
  expect(RunFtrl(Cfg(3.0f), {0, 0}, g1, 3), {-0.28432083, -0.56694895}, "noreg var1 ");
  expect(RunFtrl(Cfg(3.0f), {1, 2}, g0, 3), {-2.55607247, -3.98729396}, "noreg2 var0 ");
  expect(RunFtrl(Cfg(3.0f), {4, 3}, g1, 3), {-0.28232238, -0.56096673}, "noreg2 var1 ");
  expect(RunFtrl(Cfg(3.0f, 0.001f), {1, 2}, g0, 10), {-7.66718769, -10.91273689}, "l1 var0 ");
  expect(RunFtrl(Cfg(3.0f, 0.001f), {4, 3}, g1, 10), {-0.93460727, -1.86147261}, "l1 var1 ");
  expect(RunFtrl(Cfg(3.0f, 0.001f, 2.0f), {1, 2}, g0, 10), {-0.24059935, -0.46829352}, "l1l2 var0 ");
  expect(RunFtrl(Cfg(3.0f, 0.001f, 2.0f), {4, 3}, g1, 10), {-0.02406147, -0.04830509}, "l1l2 var1 ");
}

TEST(FtrlTest, DenseMatchesReference) {
  for (const OptimizerConfig& c : {Cfg(0.05f), Cfg(0.05f, 0.01f, 0.1f), Cfg(0.05f, 0.01f, 0.1f, 0.5f),
                                   Cfg(0.05f, 0.01f, 0.0f, 0.0f, -0.75f), Cfg(0.05f, 0, 0, 1.0f, 0.0f, 0.0f)}) {
    testing::CheckDenseAgainstReference(c, Ref(c), 37, 8, 5e-5, 1e-6);
  }
}

TEST(FtrlTest, SparseTouchesOnlyGivenRows) {
  const OptimizerConfig c = Cfg(0.05f, 0.01f, 0.1f, 0.5f);
  testing::CheckSparseTouchesOnlyGivenRows(c, Ref(c));
}

TEST(FtrlTest, SparseEqualsDenseWhenAllRowsGiven) {
  testing::CheckSparseEqualsDenseWhenAllRowsGiven(Cfg(0.05f, 0.01f, 0.1f, 0.5f));
  testing::CheckSparseEqualsDenseWhenAllRowsGiven(Cfg(0.05f, 0.01f, 0.1f, 0.5f, -0.6f));
}

TEST(FtrlTest, InvalidConfig) {
  auto l1 = MakeOptimizer(Cfg(0.1f, -1.0f));
  ASSERT_FALSE(l1.ok());
  EXPECT_EQ(l1.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l1.status().message(), "optimizer ftrl: l1 -1 not in [0, inf)");
  auto lrp = MakeOptimizer(Cfg(0.1f, 0, 0, 0, 0.5f));
  ASSERT_FALSE(lrp.ok());
  EXPECT_EQ(lrp.status().message(), "optimizer ftrl: lr_power 0.5 not in [-inf, 0]");
}

}  // namespace
}  // namespace ctrain::optim
