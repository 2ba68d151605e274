#include "ctrain/model/layers/dot_interaction.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::RandomVector;

// Naive reference: Z = X X^T per example, then the reference's li/lj gather of the strictly lower
// triangle (for i in range(T): for j in range(i): Z[i][j]), in double.
std::vector<double> NaiveZflat(int64_t B, int32_t T, int32_t K, const std::vector<float>& x) {
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> Z(static_cast<size_t>(T) * T);
    for (int32_t i = 0; i < T; ++i)
      for (int32_t j = 0; j < T; ++j) {
        double s = 0;
        for (int32_t k = 0; k < K; ++k) s += static_cast<double>(x[(b * T + i) * K + k]) * x[(b * T + j) * K + k];
        Z[i * T + j] = s;
      }
    for (int32_t i = 0; i < T; ++i)
      for (int32_t j = 0; j < i; ++j) out.push_back(Z[i * T + j]);
  }
  return out;
}

void CheckDot(int64_t B, int32_t T, int32_t K, uint32_t seed) {
  const std::string repro = "dot_interaction B=" + std::to_string(B) + " T=" + std::to_string(T) +
                            " K=" + std::to_string(K) + " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  const int64_t P = DotInteractionPairs(T);
  ASSERT_EQ(P, T * (T - 1) / 2);
  auto x = RandomVector(B * T * K, seed);
  // z placed inside wider rows: 3 leading and 2 trailing columns that must stay untouched.
  const int64_t stride = P + 5;
  std::vector<float> z(B * stride, 7.0f);
  DotInteractionForward(B, T, K, x.data(), stride, z.data() + 3);
  const std::vector<double> ref = NaiveZflat(B, T, K, x);
  ASSERT_EQ(static_cast<int64_t>(ref.size()), B * P);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < 3; ++c) ASSERT_EQ(z[b * stride + c], 7.0f);
    for (int64_t c = 3 + P; c < stride; ++c) ASSERT_EQ(z[b * stride + c], 7.0f);
    for (int64_t p = 0; p < P; ++p) {
      const double want = ref[b * P + p];
      ASSERT_NEAR(z[b * stride + 3 + p], want, 1e-5 * (1 + std::fabs(want))) << "b=" << b << " p=" << p;
    }
  }
  if (P == 0) return;
  // Backward against finite differences of sum_p r_p z_p.
  const auto r = RandomVector(B * stride, seed + 1);
  std::vector<float> d_x(B * T * K, 0.5f);  // overwritten
  DotInteractionBackward(B, T, K, x.data(), r.data() + 3, stride, d_x.data());
  std::vector<float> zz(B * stride, 0.0f);
  auto f = [&] {
    DotInteractionForward(B, T, K, x.data(), stride, zz.data() + 3);
    double s = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < P; ++p) s += static_cast<double>(r[b * stride + 3 + p]) * zz[b * stride + 3 + p];
    return s;
  };
  // z is bilinear in each single x entry (linear, as no self-interaction): central differences are exact
  // up to rounding.
  EXPECT_TRUE(CheckGradient(repro, &x, d_x, f, 0.25, 1e-3, 1e-3));
}

TEST(DotInteraction, OneVectorHasNoPairs) {
  std::vector<float> x = {1, 2, 3}, z(2, 9.0f), d_x(3, 9.0f), d_z(2, 1.0f);
  DotInteractionForward(1, 1, 3, x.data(), 2, z.data());
  EXPECT_EQ(z, (std::vector<float>{9.0f, 9.0f}));  // P = 0: nothing written
  DotInteractionBackward(1, 1, 3, x.data(), d_z.data(), 2, d_x.data());
  EXPECT_EQ(d_x, (std::vector<float>{0, 0, 0}));
}

TEST(DotInteraction, ThreeVectorsByHand) {
  // x0 = (1, 2), x1 = (3, -1), x2 = (0.5, 4): pairs in the reference's order (1,0), (2,0), (2,1).
  const std::vector<float> x = {1, 2, 3, -1, 0.5f, 4};
  std::vector<float> z(3);
  DotInteractionForward(1, 3, 2, x.data(), 3, z.data());
  EXPECT_EQ(z, (std::vector<float>{1.0f, 8.5f, -2.5f}));
  const std::vector<float> d_z = {1.0f, 10.0f, 100.0f};
  std::vector<float> d_x(6);
  DotInteractionBackward(1, 3, 2, x.data(), d_z.data(), 3, d_x.data());
  // d x0 = 1 x1 + 10 x2; d x1 = 1 x0 + 100 x2; d x2 = 10 x0 + 100 x1.
  EXPECT_EQ(d_x, (std::vector<float>{8.0f, 39.0f, 51.0f, 402.0f, 310.0f, -80.0f}));
}

TEST(DotInteraction, TwoVectors) { CheckDot(5, 2, 3, 1); }
TEST(DotInteraction, OddShapes) { CheckDot(7, 9, 5, 2); }
TEST(DotInteraction, CriteoShape) { CheckDot(3, 27, 16, 3); }  // 26 categorical fields + the bottom output
TEST(DotInteraction, WideK) { CheckDot(2, 4, 129, 4); }

TEST(DotInteraction, FlopCount) {
  EXPECT_EQ(DotInteractionPairs(27), 351);
  EXPECT_EQ(DotInteractionFlops(27, 16), 6.0 * 351 * 16);
}

}  // namespace
}  // namespace ctrain::model
