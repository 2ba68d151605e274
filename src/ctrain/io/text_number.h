// Number parsing for the text formats (LibSVM, Criteo): exact, allocation
// free, no locale, no exceptions.
//
// ParseFloat / ParseDouble accept the decimal syntax of std::from_chars
// (chars_format::general) plus one optional leading '+': digits, optional
// fraction, optional exponent (1e-3, 1.5E+2). "inf"/"nan" are reported as
// kNotFinite. The result is the correctly rounded (nearest-even) value, i.e.
// exactly what from_chars gives.
//
// Fast path (ParseFloat): a plain decimal [-+]D+[.D+] with at most 10 fraction
// digits and an integer mantissa m <= 2^24 is computed as float(m) / 10^k in
// float arithmetic. Both operands are exact floats (m <= 2^24; 10^k <= 10^10
// = 2^10 * 5^10 and 5^10 < 2^24), and IEEE division is correctly rounded, so
// the quotient is the correctly rounded value of m / 10^k (Clinger 1990).
// Everything else goes to std::from_chars.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <limits>

namespace ctrain::io {

enum class NumParse { kOk, kSyntax, kOutOfRange, kNotFinite };

namespace text_internal {
inline constexpr double kPow10d[12] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11};
inline constexpr float kPow10f[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                      1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
inline bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

template <typename T>
inline NumParse FromChars(const char* p, const char* end, T* out) {
  if (p < end && *p == '+') {
    ++p;
    if (p < end && (*p == '-' || *p == '+')) return NumParse::kSyntax;
  }
  if (p == end) return NumParse::kSyntax;
  T v;
  auto r = std::from_chars(p, end, v, std::chars_format::general);
  if (r.ec == std::errc::invalid_argument || r.ptr != end) return NumParse::kSyntax;
  if (r.ec == std::errc::result_out_of_range) return NumParse::kOutOfRange;
  if (!std::isfinite(v)) return NumParse::kNotFinite;
  *out = v;
  return NumParse::kOk;
}
}  // namespace text_internal

// Parses all of [p, end) as a float.
inline NumParse ParseFloat(const char* p, const char* end, float* out) {
  using text_internal::IsDigit;
  const char* q = p;
  bool neg = false;
  if (q < end && (*q == '-' || *q == '+')) neg = (*q++ == '-');
  const char* digits = q;
  uint64_t m = 0;  // at most 8 + 11 digits: no overflow
  while (q < end && IsDigit(*q) && q - digits < 8) m = m * 10 + static_cast<unsigned>(*q++ - '0');
  if (q > digits && (q == end || *q == '.')) {
    int frac = 0;
    bool simple = true;
    if (q < end) {  // '.'
      const char* f = ++q;
      while (q < end && IsDigit(*q) && q - f < 11) m = m * 10 + static_cast<unsigned>(*q++ - '0');
      frac = static_cast<int>(q - f);
      simple = frac > 0;  // "5." goes to the slow path
    }
    if (simple && q == end && frac <= 10 && m <= (1u << 24)) {
      float v = static_cast<float>(m);
      if (frac) v /= text_internal::kPow10f[frac];
      *out = neg ? -v : v;
      return NumParse::kOk;
    }
    // Wider exact path (e.g. "4.0430512", 8+ significant digits): m and 10^frac
    // are exact doubles, so d = m / 10^frac is the correctly rounded double of
    // the decimal x (|x - d| <= 1/2 ulp_d). Rounding d to float gives the
    // correctly rounded float of x unless d lies exactly on a float rounding
    // midpoint (the 29 bits float drops == 1 << 28): then x may sit on either
    // side, and from_chars decides. Values here are >= 1e-11, far from float
    // subnormals, and < 2^53, inside float range.
    if (simple && q == end && m <= (uint64_t{1} << 53)) {
      const double d = static_cast<double>(m) / text_internal::kPow10d[frac];
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      if ((bits & ((uint64_t{1} << 29) - 1)) != (uint64_t{1} << 28)) {
        const float v = static_cast<float>(d);
        *out = neg ? -v : v;
        return NumParse::kOk;
      }
    }
  }
  return text_internal::FromChars(p, end, out);
}

// Parses all of [p, end) as a double (correctly rounded; from_chars).
inline NumParse ParseDouble(const char* p, const char* end, double* out) {
  return text_internal::FromChars(p, end, out);
}

// Parses all of [p, end) as a non-negative decimal integer that fits int64
// (no sign, no spaces). kSyntax on anything else, kOutOfRange on overflow.
inline NumParse ParseNonNegativeInt64(const char* p, const char* end, int64_t* out) {
  if (p == end) return NumParse::kSyntax;
  int64_t v = 0;
  for (; p < end; ++p) {
    if (!text_internal::IsDigit(*p)) return NumParse::kSyntax;
    const int d = *p - '0';
    if (v > (std::numeric_limits<int64_t>::max() - d) / 10) {
      for (++p; p < end; ++p)
        if (!text_internal::IsDigit(*p)) return NumParse::kSyntax;
      return NumParse::kOutOfRange;
    }
    v = v * 10 + d;
  }
  *out = v;
  return NumParse::kOk;
}

// Binary click label of the text formats (LibSVM, libFFM): a number equal to
// 1 -> 1; equal to 0 or -1 -> 0 ("0", "1", "-1", "+1", "1.0", "-1.0e0", ...).
// Anything else (2, 0.5, nan, text) returns false.
inline bool ParseBinaryLabel(const char* p, const char* e, float* label) {
  if (e - p == 1 && (*p == '0' || *p == '1')) {
    *label = static_cast<float>(*p - '0');
    return true;
  }
  double v;
  if (ParseDouble(p, e, &v) != NumParse::kOk) return false;
  if (v == 1.0) {
    *label = 1.0f;
    return true;
  }
  if (v == 0.0 || v == -1.0) {
    *label = 0.0f;
    return true;
  }
  return false;
}

// What is wrong with a token that ParseFloat (is_double false) or ParseDouble
// reported as kOutOfRange: "out of float range: it underflows (nonzero but
// smaller in magnitude than 1.4e-45, the smallest float)" or "... it overflows
// (larger in magnitude than 3.4e+38, the largest float)". Callers prefix "value 'tok' is ".
inline std::string OutOfRangeText(std::string_view tok, bool is_double) {
  const std::string s(tok);
  const double d = std::strtod(s.c_str(), nullptr);  // 0/denormal on underflow, inf or finite-but-huge on overflow
  const bool under = std::fabs(d) < 1.0;
  const std::string kind = is_double ? "double" : "float";
  char lim[32];
  if (under)
    std::snprintf(lim, sizeof lim, "%.2g", is_double ? std::numeric_limits<double>::denorm_min()
                                                       : static_cast<double>(std::numeric_limits<float>::denorm_min()));
  else
    std::snprintf(lim, sizeof lim, "%.2g", is_double ? std::numeric_limits<double>::max()
                                                       : static_cast<double>(std::numeric_limits<float>::max()));
  return "out of " + kind + " range: it " +
         (under ? "underflows (nonzero but smaller in magnitude than " + std::string(lim) + ", the smallest " + kind + ")"
                : "overflows (larger in magnitude than " + std::string(lim) + ", the largest " + kind + ")");
}

}  // namespace ctrain::io
