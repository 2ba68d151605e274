#include "ctrain/model/layers/batch_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

constexpr float kEps = 1e-3f;

TEST(BatchNorm, ForwardMatchesNaiveAndUpdatesMovingStats) {
  const int64_t B = 7, C = 13;
  const auto x = RandomVector(B * C, 1, -2.0f, 3.0f);
  const auto gamma = RandomVector(C, 2, 0.5f, 1.5f), beta = RandomVector(C, 3);
  std::vector<float> xhat(B * C), y(B * C), istd(C), mm(C, 0.5f), mv(C, 2.0f);
  BatchNormForwardTraining(B, C, kEps, 0.99f, x.data(), gamma.data(), beta.data(), xhat.data(), istd.data(), y.data(),
                           mm.data(), mv.data());
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (int64_t b = 0; b < B; ++b) mean += x[b * C + c];
    mean /= B;
    for (int64_t b = 0; b < B; ++b) var += (x[b * C + c] - mean) * (x[b * C + c] - mean);
    var /= B;
    for (int64_t b = 0; b < B; ++b)
      EXPECT_NEAR(y[b * C + c], gamma[c] * (x[b * C + c] - mean) / std::sqrt(var + kEps) + beta[c], 1e-5);
    EXPECT_NEAR(mm[c], 0.99 * 0.5 + 0.01 * mean, 1e-6);
    EXPECT_NEAR(mv[c], 0.99 * 2.0 + 0.01 * var, 1e-6);
  }
  // Inference uses the moving statistics.
  std::vector<float> yi(B * C);
  BatchNormForwardInference(B, C, kEps, x.data(), gamma.data(), beta.data(), mm.data(), mv.data(), yi.data());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      EXPECT_NEAR(yi[b * C + c], gamma[c] * (x[b * C + c] - mm[c]) / std::sqrt(mv[c] + kEps) + beta[c], 1e-5);
}

void CheckBn(int64_t B, int64_t C, uint32_t seed) {
  const std::string repro = "batch_norm B=" + std::to_string(B) + " C=" + std::to_string(C) +
                            " seed=" + std::to_string(seed);
  auto x = RandomVector(B * C, seed, -2.0f, 2.0f);
  auto gamma = RandomVector(C, seed + 1, 0.5f, 1.5f), beta = RandomVector(C, seed + 2);
  const auto r = RandomVector(B * C, seed + 3);
  std::vector<float> xhat(B * C), y(B * C), istd(C), dx(B * C), dg(C), db(C);
  BatchNormForwardTraining(B, C, kEps, 0.9f, x.data(), gamma.data(), beta.data(), xhat.data(), istd.data(), y.data(),
                           nullptr, nullptr);
  BatchNormBackward(B, C, xhat.data(), istd.data(), gamma.data(), r.data(), dx.data(), dg.data(), db.data());
  auto f = [&] {
    std::vector<float> xh(B * C), is(C), yy(B * C);
    BatchNormForwardTraining(B, C, kEps, 0.9f, x.data(), gamma.data(), beta.data(), xh.data(), is.data(), yy.data(),
                             nullptr, nullptr);
    return Dot(r, yy.data(), yy.size());
  };
  EXPECT_TRUE(CheckGradient(repro + " dx", &x, dx, f, 1e-2, 2e-3, 2e-2));
  EXPECT_TRUE(CheckGradient(repro + " dgamma", &gamma, dg, f, 0.25, 1e-3, 1e-3));  // linear in gamma
  EXPECT_TRUE(CheckGradient(repro + " dbeta", &beta, db, f, 0.25, 1e-3, 1e-3));    // linear in beta
  // In-place dx == dy gives the same result.
  std::vector<float> g = r, dg2(C), db2(C);
  BatchNormBackward(B, C, xhat.data(), istd.data(), gamma.data(), g.data(), g.data(), dg2.data(), db2.data());
  EXPECT_EQ(g, dx);
}

TEST(BatchNorm, GradCheck1x1) {
  // One example: xhat = 0, y = beta; dx = 0.
  CheckBn(1, 1, 1);
}
TEST(BatchNorm, GradCheck7x13) { CheckBn(7, 13, 2); }
TEST(BatchNorm, GradCheck64x40) { CheckBn(64, 40, 3); }

}  // namespace
}  // namespace ctrain::model
