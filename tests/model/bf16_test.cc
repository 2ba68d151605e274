#include "ctrain/model/layers/bf16.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ctrain::model {
namespace {

float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

TEST(Bf16, ScalarRoundingRule) {
  EXPECT_EQ(F32ToBf16(0.0f), 0x0000);
  EXPECT_EQ(F32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBf16(-2.0f), 0xC000);
  // Ties to even: 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7.
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808000)), 0x3F80);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(F32ToBf16(FromBits(0x3F818000)), 0x3F82);
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(F32ToBf16(FromBits(0x3F807FFF)), 0x3F80);  // just below
  // Carry into the exponent: largest value below 2 rounds to 2.
  EXPECT_EQ(F32ToBf16(FromBits(0x3FFFFFFF)), 0x4000);
  // Overflow to infinity, infinities kept.
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(F32ToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  // Denormals become signed zero; the smallest normal stays.
  EXPECT_EQ(F32ToBf16(FromBits(0x00000001)), 0x0000);
  EXPECT_EQ(F32ToBf16(FromBits(0x807FFFFF)), 0x8000);
  EXPECT_EQ(F32ToBf16(FromBits(0x00800000)), 0x0080);
  // NaNs stay NaN (quiet), sign kept, even when the payload sits in the low bits only.
  EXPECT_EQ(F32ToBf16(FromBits(0x7FC00000)), 0x7FC0);
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(F32ToBf16(FromBits(0xFF800001)), 0xFFC0);
  EXPECT_EQ(F32ToBf16(FromBits(0x7FFFFFFF)), 0x7FFF);
  // Relative error <= 2^-8 on normal values.
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1e6f, 1e6f);
  for (int i = 0; i < 10000; ++i) {
    const float x = d(rng);
    EXPECT_LE(std::fabs(RoundToBf16(x) - x), std::ldexp(std::fabs(x), -8)) << x;
  }
  EXPECT_EQ(Bf16ToF32(0x3F80), 1.0f);
  EXPECT_EQ(RoundToBf16(0.5f), 0.5f);
}

// Every upper half with a set of lower halves (ties, ties±1, extremes, random),
// through the vectorised path (and its OpenMP split: n is large), against the scalar rule.
TEST(Bf16, VectorConversionMatchesScalarBitForBit) {
  std::mt19937 rng(7);
  std::vector<uint32_t> lows = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x4000, 0xC000};
  for (int i = 0; i < 8; ++i) lows.push_back(rng() & 0xFFFF);
  std::vector<float> src;
  src.reserve(65536 * lows.size());
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : lows) src.push_back(FromBits((hi << 16) | lo));
  std::vector<uint16_t> got(src.size(), 0x1234);
  ConvertF32ToBf16(src.data(), got.data(), static_cast<int64_t>(src.size()));
  int64_t mismatches = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], 4);
    if (got[i] != F32ToBf16(src[i]) && ++mismatches <= 10)
      ADD_FAILURE() << "input 0x" << std::hex << bits << ": vector 0x" << got[i] << ", scalar 0x" << F32ToBf16(src[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

// Every length 0..200 at an unaligned start: the masked tail writes exactly n values.
TEST(Bf16, VectorConversionTailsAndBounds) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> src(260);
  for (float& x : src) x = d(rng);
  for (int64_t n = 0; n <= 200; ++n) {
    std::vector<uint16_t> dst(n + 40, 0xABCD);
    ConvertF32ToBf16(src.data() + 3, dst.data() + 1, n);
    EXPECT_EQ(dst[0], 0xABCD) << "n=" << n;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dst[1 + i], F32ToBf16(src[3 + i])) << "n=" << n << " i=" << i;
    for (size_t i = n + 1; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xABCD) << "n=" << n << " wrote past the end";
  }
}

TEST(Bf16, SupportIsReportedWithTheIsa) {
  const std::string isa = DnnlCpuIsaName();
  EXPECT_FALSE(isa.empty());
  const Status s = Bf16GemmSupported();
  if (s.ok()) {
    EXPECT_TRUE(isa == "avx512_core_bf16" || isa == "avx512_core_amx") << isa;
  } else {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(s.message(), "bf16 GEMM needs a CPU with AVX512_BF16 (oneDNN's effective ISA here is " + isa + ")");
  }
}

}  // namespace
}  // namespace ctrain::model
