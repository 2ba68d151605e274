// Stable 64-bit hashing for feature ids (Criteo categoricals) and for
// counter-based random numbers (the synthetic generator).
//
// Both functions are fully specified below, independent of platform,
// endianness and compiler, and must never change: ids hashed into a trained
// model's embedding table depend on them (do not change the constants).
//
//   Mix64(x): the SplitMix64 output function (Steele, Lea & Flood 2014):
//     z = x + 0x9E3779B97F4A7C15
//     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//     z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//     return z ^ (z >> 31)                         (all arithmetic mod 2^64)
//
//   Hash64(s, seed), s = bytes s[0..n):
//     h = Mix64(seed ^ (n * 0x9E3779B97F4A7C15))
//     for each full 8-byte block b at offset i = 0, 8, 16, ...:
//       h = Mix64(h ^ LE64(s[i..i+8)))
//     if n % 8 != 0: h = Mix64(h ^ LE64(last n % 8 bytes, zero-padded high))
//     return h
//   where LE64 reads bytes as a little-endian unsigned integer. The length is
//   mixed in first, so zero padding of the tail is unambiguous. A Python
//   reference is in docs/formats/criteo.md.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace ctrain::io {

constexpr uint64_t Mix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t Hash64(std::string_view s, uint64_t seed);

// A double uniform in [0, 1) from the top 53 bits of h.
constexpr double UnitDouble(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace ctrain::io
