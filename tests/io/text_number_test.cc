// Text numbers (issue #7 item 6): every token ParseFloat / ParseDouble accepts
// reads to exactly the value strtof / strtod give (the nearest float/double,
// ties to even), and every token they refuse is one that strtof/strtod would
// not read in full as a finite, in-range number, or a spelling outside the
// documented syntax (hex floats, "inf"/"nan", infinity, underflow to zero).
#include "ctrain/io/text_number.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace ctrain::io {
namespace {

// Decimal tokens: optional sign, 0..30 integer digits, optional '.' and 0..30
// fraction digits, optional exponent: long mantissas, leading zeros, "+5",
// ".5", "5.", values beyond float range and below its subnormals.
std::string RandomToken(std::mt19937_64& rng) {
  std::string s;
  switch (rng() % 4) {
    case 1: s += '-'; break;
    case 2: s += '+'; break;
    default: break;
  }
  const int id = static_cast<int>(rng() % 31);
  for (int i = 0; i < id; ++i) s += static_cast<char>('0' + rng() % 10);
  if (rng() % 2) {
    s += '.';
    const int fd = static_cast<int>(rng() % 31);
    for (int i = 0; i < fd; ++i) s += static_cast<char>('0' + rng() % 10);
  }
  if (rng() % 4 == 0) {
    s += rng() % 2 ? 'e' : 'E';
    const int es = static_cast<int>(rng() % 3);
    if (es == 1) s += '-';
    if (es == 2) s += '+';
    const int ed = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < ed; ++i) s += static_cast<char>('0' + rng() % 10);
  }
  return s;
}

TEST(TextNumber, ParseFloatAgreesWithStrtof) {
  std::mt19937_64 rng(77);
  int accepted = 0;
  for (int it = 0; it < 400000; ++it) {
    const std::string s = RandomToken(rng);
    float v = 0;
    const NumParse st = ParseFloat(s.data(), s.data() + s.size(), &v);
    errno = 0;
    char* end = nullptr;
    const float w = std::strtof(s.c_str(), &end);
    const bool full = end != s.c_str() && *end == '\0';
    if (st == NumParse::kOk) {
      ++accepted;
      ASSERT_TRUE(full) << s;
      ASSERT_EQ(std::memcmp(&v, &w, sizeof v), 0) << s << ": " << v << " vs strtof " << w;
    } else {
      // Refused: strtof must not read it in full as a finite number without a range error.
      ASSERT_FALSE(full && errno == 0 && std::isfinite(w)) << s << " refused, strtof reads " << w;
    }
  }
  EXPECT_GT(accepted, 300000);
}

TEST(TextNumber, ParseDoubleAgreesWithStrtod) {
  std::mt19937_64 rng(78);
  for (int it = 0; it < 200000; ++it) {
    const std::string s = RandomToken(rng);
    double v = 0;
    const NumParse st = ParseDouble(s.data(), s.data() + s.size(), &v);
    errno = 0;
    char* end = nullptr;
    const double w = std::strtod(s.c_str(), &end);
    const bool full = end != s.c_str() && *end == '\0';
    if (st == NumParse::kOk) {
      ASSERT_TRUE(full) << s;
      ASSERT_EQ(std::memcmp(&v, &w, sizeof v), 0) << s;
    } else {
      ASSERT_FALSE(full && errno == 0 && std::isfinite(w)) << s;
    }
  }
}

TEST(TextNumber, EdgeSpellings) {
  float v = 0;
  auto parse = [&](const char* s) { return ParseFloat(s, s + std::strlen(s), &v); };
  EXPECT_EQ(parse("0x1p3"), NumParse::kSyntax);  // hex floats are not decimal
  EXPECT_EQ(parse("++1"), NumParse::kSyntax);
  EXPECT_EQ(parse("+-1"), NumParse::kSyntax);
  EXPECT_EQ(parse("1e39"), NumParse::kOutOfRange);
  EXPECT_EQ(parse("3.4028236e38"), NumParse::kOutOfRange);  // rounds past FLT_MAX
  EXPECT_EQ(parse("inf"), NumParse::kNotFinite);
  EXPECT_EQ(parse("nan"), NumParse::kNotFinite);
  ASSERT_EQ(parse("3.40282346e38"), NumParse::kOk);
  EXPECT_EQ(v, 3.40282347e38f);
  ASSERT_EQ(parse("+16777217"), NumParse::kOk);  // ties to even
  EXPECT_EQ(v, 16777216.0f);
  ASSERT_EQ(parse("0.10000000000000000000000001"), NumParse::kOk);
  EXPECT_EQ(v, 0.1f);
  ASSERT_EQ(parse("1e-45"), NumParse::kOk);  // smallest subnormal
  EXPECT_EQ(v, std::numeric_limits<float>::denorm_min());
}

}  // namespace
}  // namespace ctrain::io
