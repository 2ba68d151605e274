#include "ctrain/model/layers/dropout.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

TEST(Dropout, RateZeroIsIdentity) {
  const auto x = RandomVector(101, 1);
  std::vector<float> mask(101), y(101);
  DropoutForward(101, 0.0f, 7, DropoutStream(3, 0), x.data(), mask.data(), y.data());
  EXPECT_EQ(y, x);
  for (float m : mask) EXPECT_EQ(m, 1.0f);
}

TEST(Dropout, KeepsAboutOneMinusRateAndScales) {
  const int64_t n = 200001;
  std::vector<float> x(n, 2.0f), mask(n), y(n);
  DropoutForward(n, 0.3f, 2017, DropoutStream(5, 1), x.data(), mask.data(), y.data());
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i] != 0.0f) {
      ++kept;
      EXPECT_FLOAT_EQ(mask[i], 1.0f / 0.7f);
      EXPECT_FLOAT_EQ(y[i], 2.0f / 0.7f);
    } else {
      EXPECT_EQ(y[i], 0.0f);
    }
  }
  // Binomial(n, 0.7): sd = sqrt(n * 0.21) ~ 205; allow 6 sd.
  EXPECT_NEAR(static_cast<double>(kept), 0.7 * n, 1230.0);
}

TEST(Dropout, DeterministicPerSeedStepLayer) {
  const int64_t n = 1000;
  std::vector<float> x(n, 1.0f), m1(n), m2(n), m3(n), m4(n), y(n);
  DropoutForward(n, 0.5f, 1, DropoutStream(10, 0), x.data(), m1.data(), y.data());
  DropoutForward(n, 0.5f, 1, DropoutStream(10, 0), x.data(), m2.data(), y.data());
  DropoutForward(n, 0.5f, 1, DropoutStream(11, 0), x.data(), m3.data(), y.data());
  DropoutForward(n, 0.5f, 1, DropoutStream(10, 1), x.data(), m4.data(), y.data());
  EXPECT_EQ(m1, m2);
  EXPECT_NE(m1, m3);
  EXPECT_NE(m1, m4);
}

void CheckDropout(int64_t n, float rate, uint32_t seed) {
  const std::string repro = "dropout n=" + std::to_string(n) + " rate=" + std::to_string(rate) +
                            " seed=" + std::to_string(seed);
  auto x = RandomVector(n, seed);
  const auto r = RandomVector(n, seed + 1);
  std::vector<float> mask(n), y(n), dx(n);
  DropoutForward(n, rate, seed, DropoutStream(1, 0), x.data(), mask.data(), y.data());
  DropoutBackward(n, mask.data(), r.data(), dx.data());
  auto f = [&] {
    DropoutForward(n, rate, seed, DropoutStream(1, 0), x.data(), mask.data(), y.data());
    return Dot(r, y.data(), n);
  };
  EXPECT_TRUE(CheckGradient(repro, &x, dx, f, 0.25, 1e-4, 1e-4));
}

TEST(Dropout, GradCheck1) { CheckDropout(1, 0.5f, 3); }
TEST(Dropout, GradCheck7x13x5) { CheckDropout(7 * 13 * 5, 0.5f, 4); }
TEST(Dropout, GradCheckHighRate) { CheckDropout(333, 0.9f, 5); }

}  // namespace
}  // namespace ctrain::model
