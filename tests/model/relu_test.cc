#include "ctrain/model/layers/relu.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomAwayFromZero;
using testing::RandomVector;

TEST(Relu, ForwardBackwardValues) {
  const std::vector<float> x = {-2.0f, 0.0f, 3.0f, -0.0f, 1e-30f};
  std::vector<float> y(5), dx(5);
  ReluForward(5, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 3.0f, 0.0f, 1e-30f}));
  const std::vector<float> dy = {1, 2, 3, 4, 5};
  ReluBackward(5, y.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 3, 0, 5}));  // subgradient 0 at 0
  ReluForward(5, x.data(), const_cast<float*>(x.data()));  // in place
  EXPECT_EQ(x, y);
}

void CheckRelu(int64_t n, uint32_t seed) {
  const std::string repro = "relu n=" + std::to_string(n) + " seed=" + std::to_string(seed);
  auto x = RandomAwayFromZero(n, seed, 0.05f);  // |x| >= 0.05 > eps: no kink crossing
  const auto r = RandomVector(n, seed + 1);
  std::vector<float> y(n), dx(n);
  ReluForward(n, x.data(), y.data());
  ReluBackward(n, y.data(), r.data(), dx.data());
  auto f = [&] {
    ReluForward(n, x.data(), y.data());
    return Dot(r, y.data(), n);
  };
  EXPECT_TRUE(CheckGradient(repro, &x, dx, f, 1e-2, 1e-4, 1e-3));
}

TEST(Relu, GradCheck1) { CheckRelu(1, 1); }
TEST(Relu, GradCheck7x13x5) { CheckRelu(7 * 13 * 5, 2); }

}  // namespace
}  // namespace ctrain::model
