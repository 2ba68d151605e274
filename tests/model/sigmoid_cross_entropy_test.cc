#include "ctrain/model/layers/sigmoid_cross_entropy.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

TEST(SigmoidCrossEntropy, MatchesNaiveFormula) {
  const std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f}, z = {0, 1, 1, 0, 1};
  std::vector<float> d(5);
  const double loss = SigmoidCrossEntropy(5, x.data(), z.data(), d.data());
  double ref = 0;
  for (int i = 0; i < 5; ++i) {
    const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    ref += -(z[i] * std::log(p) + (1 - z[i]) * std::log(1 - p));
    EXPECT_NEAR(d[i], (p - z[i]) / 5, 1e-7);
  }
  EXPECT_NEAR(loss, ref / 5, 1e-12);
  EXPECT_NEAR(SigmoidCrossEntropy(1, x.data() + 2, z.data() + 2, nullptr), std::log(2.0), 1e-15);
}

TEST(SigmoidCrossEntropy, StableForHugeLogits) {
  const std::vector<float> x = {1000.0f, -1000.0f, 1000.0f, -1000.0f}, z = {1, 0, 0, 1};
  std::vector<float> d(4);
  const double loss = SigmoidCrossEntropy(4, x.data(), z.data(), d.data());
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_DOUBLE_EQ(loss, (0 + 0 + 1000 + 1000) / 4.0);
  EXPECT_EQ(d, (std::vector<float>{0.0f, 0.0f, 0.25f, -0.25f}));
  EXPECT_EQ(Sigmoid(-1000.0f), 0.0f);
  EXPECT_EQ(Sigmoid(1000.0f), 1.0f);
  EXPECT_EQ(Sigmoid(0.0f), 0.5f);
}

void CheckSce(int64_t B, uint32_t seed) {
  const std::string repro = "sigmoid_cross_entropy B=" + std::to_string(B) + " seed=" + std::to_string(seed);
  auto x = RandomVector(B, seed, -4.0f, 4.0f);
  auto z = RandomVector(B, seed + 1, 0.0f, 1.0f);
  for (float& v : z) v = v < 0.5f ? 0.0f : 1.0f;
  std::vector<float> d(B);
  SigmoidCrossEntropy(B, x.data(), z.data(), d.data());
  auto f = [&] { return SigmoidCrossEntropy(B, x.data(), z.data(), nullptr); };
  EXPECT_TRUE(CheckGradient(repro, &x, d, f, 1e-2, 1e-6, 1e-3));
}

TEST(SigmoidCrossEntropy, GradCheck1) { CheckSce(1, 1); }
TEST(SigmoidCrossEntropy, GradCheck455) { CheckSce(455, 2); }

}  // namespace
}  // namespace ctrain::model
