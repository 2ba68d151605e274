#include "ctrain/model/layers/fm_interaction.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

void CheckFm(int64_t B, int32_t F, int32_t K, uint32_t seed) {
  const std::string repro = "fm_interaction B=" + std::to_string(B) + " F=" + std::to_string(F) +
                            " K=" + std::to_string(K) + " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  auto e = RandomVector(B * F * K, seed);
  std::vector<float> sum(B * K), y(B);
  FmInteractionForward(B, F, K, e.data(), sum.data(), y.data());
  // Naive: sum over pairs f < g of <e_f, e_g>.
  for (int64_t b = 0; b < B; ++b) {
    double ref = 0;
    for (int32_t f = 0; f < F; ++f)
      for (int32_t g = f + 1; g < F; ++g)
        for (int32_t k = 0; k < K; ++k)
          ref += static_cast<double>(e[(b * F + f) * K + k]) * e[(b * F + g) * K + k];
    ASSERT_NEAR(y[b], ref, 1e-4 * (1 + std::fabs(ref))) << "b=" << b;
  }
  const auto r = RandomVector(B, seed + 1);
  std::vector<float> d_e(B * F * K, 0.5f);
  FmInteractionBackward(B, F, K, e.data(), sum.data(), r.data(), /*accumulate=*/false, d_e.data());
  auto f = [&] {
    FmInteractionForward(B, F, K, e.data(), sum.data(), y.data());
    return Dot(r, y.data(), B);
  };
  // y is quadratic in each single e entry: central differences are exact up to rounding.
  EXPECT_TRUE(CheckGradient(repro, &e, d_e, f, 0.25, 1e-3, 1e-3));
  // accumulate adds on top (recompute sum at the unperturbed e first).
  FmInteractionForward(B, F, K, e.data(), sum.data(), y.data());
  std::vector<float> acc(B * F * K, 0.5f);
  FmInteractionBackward(B, F, K, e.data(), sum.data(), r.data(), /*accumulate=*/true, acc.data());
  for (size_t i = 0; i < acc.size(); ++i) ASSERT_NEAR(acc[i], d_e[i] + 0.5f, 1e-6) << "i=" << i;  // may be fused (FMA)
}

TEST(FmInteraction, OneByOneIsZero) {
  std::vector<float> e = {3.0f}, sum(1), y(1, 7.0f);
  FmInteractionForward(1, 1, 1, e.data(), sum.data(), y.data());
  EXPECT_EQ(y[0], 0.0f);  // one field has no pairs
  CheckFm(1, 1, 1, 1);
}
TEST(FmInteraction, TwoFieldsIsDotProduct) {
  std::vector<float> e = {1, 2, 3, 4, 5, 6}, sum(3), y(1);
  FmInteractionForward(1, 2, 3, e.data(), sum.data(), y.data());
  EXPECT_EQ(y[0], 1 * 4 + 2 * 5 + 3 * 6);
  EXPECT_EQ(sum, (std::vector<float>{5, 7, 9}));
}
TEST(FmInteraction, OddShapes) { CheckFm(7, 13, 5, 2); }
TEST(FmInteraction, CriteoShape) { CheckFm(4, 39, 32, 3); }
TEST(FmInteraction, LargeK) { CheckFm(2, 3, 600, 4); }  // exercises the K > 512 path

}  // namespace
}  // namespace ctrain::model
