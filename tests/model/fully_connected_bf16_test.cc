// FullyConnected with DataType::kBF16 (mixed precision) against naive double
// references. Two references per product:
//   exact:   the f32 operands as given; the bf16 result may differ from it by
//            the operand rounding, |err| <= (2·2^-8 + 2^-16)·Σ|a||b|, plus the
//            f32 accumulation error;
//   rounded: the operands rounded to bf16 (RoundToBf16) first; the result may
//            differ from it only by f32 accumulation, |err| <= (k+2)·2^-24·(Σ|ã||b̃| + |bias|).
// Bounds are computed per output element from the inputs. The test also
// checks that the result is nearer the rounded reference than the exact one,
// i.e. that bf16 operands were really used (no silent f32).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/layers/bf16.h"
#include "ctrain/model/layers/fully_connected.h"
#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::RandomVector;

#define SKIP_WITHOUT_BF16()                                                                   \
  do {                                                                                        \
    const Status bf16_support = Bf16GemmSupported();                                          \
    if (!bf16_support.ok()) GTEST_SKIP() << "no bf16 on this CPU: " << bf16_support.message(); \
  } while (0)

constexpr double kBf16U = 1.0 / 256;               // 2^-8
constexpr double kF32U = 1.0 / (1 << 24);           // 2^-24
const double kOperandRel = 2 * kBf16U + kBf16U * kBf16U;  // |ãb̃ - ab| <= this · |ab|

// C[m, n] = sum_k A(m, k) B(k, n) (+ bias[n]) in double, with the per-element bounds.
// A(m, k) = a[m * sam + k * sak], B(k, n) = b[k * sbk + n * sbn].
struct Product {
  std::vector<double> exact, rounded, bound_exact, bound_rounded;
};
Product Reference(int64_t M, int64_t N, int64_t K, const float* a, int64_t sam, int64_t sak, const float* b,
                  int64_t sbk, int64_t sbn, const float* bias) {
  Product p;
  for (auto* v : {&p.exact, &p.rounded, &p.bound_exact, &p.bound_rounded}) v->assign(M * N, 0.0);
  const double gamma = (K + 2) * kF32U;  // f32 accumulation of K terms, plus bias and output rounding
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double e = bias ? bias[n] : 0.0, r = e, abs_e = 0, abs_r = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float x = a[m * sam + k * sak], w = b[k * sbk + n * sbn];
        e += static_cast<double>(x) * w;
        abs_e += std::fabs(static_cast<double>(x) * w);
        const double xr = RoundToBf16(x), wr = RoundToBf16(w);
        r += xr * wr;
        abs_r += std::fabs(xr * wr);
      }
      const double babs = bias ? std::fabs(bias[n]) : 0.0;
      p.exact[m * N + n] = e;
      p.rounded[m * N + n] = r;
      p.bound_rounded[m * N + n] = gamma * (abs_r + babs) + 1e-30;
      p.bound_exact[m * N + n] = kOperandRel * abs_e + gamma * (abs_r + babs) + 1e-30;
    }
  return p;
}

// Checks got against both references; returns (sum |got - exact|, sum |got - rounded|).
std::pair<double, double> Check(const std::string& what, const std::vector<float>& got, const Product& p) {
  double d_exact = 0, d_rounded = 0;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double ee = std::fabs(got[i] - p.exact[i]), er = std::fabs(got[i] - p.rounded[i]);
    d_exact += ee;
    d_rounded += er;
    if ((ee > p.bound_exact[i] || er > p.bound_rounded[i]) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ": exact " << p.exact[i] << " (err " << ee
                    << ", bound " << p.bound_exact[i] << "), bf16-rounded " << p.rounded[i] << " (err " << er
                    << ", bound " << p.bound_rounded[i] << ")";
  }
  return {d_exact, d_rounded};
}

void CompareWithReference(int64_t B, int64_t in, int64_t out, uint32_t seed) {
  const std::string repro = "fully_connected bf16 mb" + std::to_string(B) + "ic" + std::to_string(in) + "oc" +
                            std::to_string(out) + " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  FullyConnected fc(in, out, DataType::kBF16);
  ASSERT_TRUE(fc.Prepare(B).ok()) << fc.Prepare(B).ToString();
  const auto src = RandomVector(B * in, seed), wei = RandomVector(in * out, seed + 1),
             bia = RandomVector(out, seed + 2), diff_dst = RandomVector(B * out, seed + 3);
  std::vector<float> dst(B * out);
  fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
  const Product fwd = Reference(B, out, in, src.data(), in, 1, wei.data(), out, 1, bia.data());
  const auto [fe, fr] = Check("dst", dst, fwd);
  EXPECT_LT(fr, fe) << "forward is not nearer the bf16-rounded product: were bf16 operands used?";

  std::vector<float> ds(B * in), dw(in * out), db(out);
  fc.Backward(B, src.data(), wei.data(), diff_dst.data(), ds.data(), dw.data(), db.data());
  // diff_src [B, in] = diff_dst [B, out] · weiᵀ
  const Product bd = Reference(B, in, out, diff_dst.data(), out, 1, wei.data(), 1, out, nullptr);
  const auto [de, dr] = Check("diff_src", ds, bd);
  EXPECT_LT(dr, de) << "backward data is not nearer the bf16-rounded product";
  // diff_wei [in, out] = srcᵀ · diff_dst
  const Product bw = Reference(in, out, B, src.data(), 1, in, diff_dst.data(), out, 1, nullptr);
  const auto [we, wr] = Check("diff_wei", dw, bw);
  EXPECT_LT(wr, we) << "backward weights is not nearer the bf16-rounded product";
  // diff_bia: f32 column sums of the f32 diff_dst (no bf16 rounding).
  std::vector<float> rds(B * in), rdw(in * out), rdb(out);
  FullyConnectedReferenceBackward(B, in, out, src.data(), wei.data(), diff_dst.data(), rds.data(), rdw.data(),
                                  rdb.data());
  for (int64_t j = 0; j < out; ++j) {
    double abs_sum = 0;
    for (int64_t b = 0; b < B; ++b) abs_sum += std::fabs(diff_dst[b * out + j]);
    EXPECT_LE(std::fabs(db[j] - rdb[j]), (B + 1) * kF32U * abs_sum + 1e-30) << "diff_bia[" << j << "]";
  }

  // Backward on copies of src and wei (other pointers: converted afresh) gives the same bits.
  const std::vector<float> src2 = src, wei2 = wei;
  std::vector<float> ds2(B * in), dw2(in * out), db2(out);
  fc.Backward(B, src2.data(), wei2.data(), diff_dst.data(), ds2.data(), dw2.data(), db2.data());
  EXPECT_EQ(ds2, ds);
  EXPECT_EQ(dw2, dw);
  EXPECT_EQ(db2, db);
  // Null diff_src skips backward data and gives the same weights gradient.
  std::vector<float> dw3(in * out), db3(out);
  fc.Backward(B, src.data(), wei.data(), diff_dst.data(), nullptr, dw3.data(), db3.data());
  EXPECT_EQ(dw3, dw);
  EXPECT_EQ(db3, db);
  // Same inputs, same bits; no bias.
  std::vector<float> dst2(B * out);
  fc.Forward(B, src.data(), wei.data(), bia.data(), dst2.data());
  EXPECT_EQ(dst2, dst);
  fc.Forward(B, src.data(), wei.data(), nullptr, dst2.data());
  const Product nob = Reference(B, out, in, src.data(), in, 1, wei.data(), out, 1, nullptr);
  Check("dst (no bias)", dst2, nob);
}

TEST(FullyConnectedBf16, Ref1x1x1) {
  SKIP_WITHOUT_BF16();
  CompareWithReference(1, 1, 1, 1);
}
TEST(FullyConnectedBf16, Ref7x13x5) {
  SKIP_WITHOUT_BF16();
  CompareWithReference(7, 13, 5, 2);
}
TEST(FullyConnectedBf16, RefOutputLayer) {
  SKIP_WITHOUT_BF16();
  CompareWithReference(33, 400, 1, 3);
}
TEST(FullyConnectedBf16, RefDeepFmFirstLayer) {
  SKIP_WITHOUT_BF16();
  CompareWithReference(64, 1248, 400, 4);
}
TEST(FullyConnectedBf16, Ref251x511x1023) {
  SKIP_WITHOUT_BF16();
  CompareWithReference(251, 511, 1023, 5);
}

// W is converted at every Forward: an in-place update (as the optimizer does)
// is seen by the next step, and Backward uses the weights of the last Forward.
TEST(FullyConnectedBf16, WeightsUpdatedInPlaceAreReconverted) {
  SKIP_WITHOUT_BF16();
  const int64_t B = 5, in = 40, out = 9;
  FullyConnected fc(in, out, DataType::kBF16);
  ASSERT_TRUE(fc.Prepare(B).ok());
  const auto src = RandomVector(B * in, 31), dy = RandomVector(B * out, 33);
  auto wei = RandomVector(in * out, 32);
  std::vector<float> dst1(B * out), dst2(B * out), ds1(B * in), ds2(B * in), dw(in * out);
  fc.Forward(B, src.data(), wei.data(), nullptr, dst1.data());
  fc.Backward(B, src.data(), wei.data(), dy.data(), ds1.data(), dw.data(), nullptr);
  for (float& w : wei) w *= 2.0f;  // exact in bf16 and f32: every product doubles exactly
  fc.Forward(B, src.data(), wei.data(), nullptr, dst2.data());
  fc.Backward(B, src.data(), wei.data(), dy.data(), ds2.data(), dw.data(), nullptr);
  for (int64_t i = 0; i < B * out; ++i) EXPECT_EQ(dst2[i], 2.0f * dst1[i]) << i;
  for (int64_t i = 0; i < B * in; ++i) EXPECT_EQ(ds2[i], 2.0f * ds1[i]) << i;
}

TEST(FullyConnectedBf16, SeveralBatchSizesShareOneLayer) {
  SKIP_WITHOUT_BF16();
  FullyConnected fc(6, 4, DataType::kBF16);
  for (int64_t B : {3, 8, 3, 1}) {
    ASSERT_TRUE(fc.Prepare(B).ok());
    const auto src = RandomVector(B * 6, B), wei = RandomVector(24, 9), bia = RandomVector(4, 10);
    std::vector<float> dst(B * 4);
    fc.Forward(B, src.data(), wei.data(), bia.data(), dst.data());
    SCOPED_TRACE("B=" + std::to_string(B));
    Check("dst", dst, Reference(B, 4, 6, src.data(), 6, 1, wei.data(), 4, 1, bia.data()));
  }
}

// Without AVX512_BF16 (or with DNNL_MAX_CPU_ISA below it) Prepare refuses;
// with it, Prepare succeeds. Either way nothing silently runs in f32.
TEST(FullyConnectedBf16, PrepareReportsMissingIsa) {
  FullyConnected fc(2, 3, DataType::kBF16);
  EXPECT_EQ(fc.type(), DataType::kBF16);
  EXPECT_STREQ(DataTypeName(fc.type()), "bf16");
  const Status s = fc.Prepare(4);
  const Status support = Bf16GemmSupported();
  if (support.ok()) {
    EXPECT_TRUE(s.ok()) << s.ToString();
  } else {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), "fully_connected mb4ic2oc3 bf16: " + std::string(support.message()));
  }
  FullyConnected zero(0, 3, DataType::kBF16);
  s.IgnoreError();
  const Status z = zero.Prepare(4);
  EXPECT_EQ(z.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(z.message(), "fully_connected mb4ic0oc3 bf16: every dimension must be >= 1");
}

}  // namespace
}  // namespace ctrain::model
