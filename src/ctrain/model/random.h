// Counter-based random numbers for the model layer.
//
// Every random draw is a pure function of (seed, stream, counter), so results do
// not depend on thread count, scheduling or call order: dropout masks are a
// function of (seed, step, layer, element) and initial embedding rows of
// (seed, row), which lets a parameter-server shard initialise its rows alone and
// still produce the same table as a single process.
//
// The mixer is SplitMix64 (Steele, Lea, Flood 2014), the finaliser used to seed
// xoshiro; it passes BigCrush when used as a counter hash.
#pragma once

#include <cmath>
#include <cstdint>

namespace ctrain::model {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A key for one stream of draws; combine once, then hash counters with CounterBits.
inline uint64_t StreamKey(uint64_t seed, uint64_t stream) { return SplitMix64(seed ^ SplitMix64(stream)); }

// 64 random bits for `counter` within the stream `key`.
inline uint64_t CounterBits(uint64_t key, uint64_t counter) { return SplitMix64(key ^ SplitMix64(counter)); }

// Two independent uniforms in [0, 1) with 24-bit resolution from one 64-bit draw.
inline float UniformHi(uint64_t bits) { return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f); }
inline float UniformLo(uint64_t bits) { return static_cast<float>((bits >> 8) & 0xFFFFFF) * (1.0f / 16777216.0f); }

// A uniform in (0, 1) with 53-bit resolution (never 0, safe for log).
inline double UniformOpen(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// Standard normal for `counter` (Box-Muller on two draws).
inline double NormalAt(uint64_t key, uint64_t counter) {
  const double u1 = UniformOpen(CounterBits(key, 2 * counter));
  const double u2 = UniformOpen(CounterBits(key, 2 * counter + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Normal truncated to [-2, 2] standard deviations by resampling, as TF's
// truncated_normal. `counter` must leave room: attempts use counters
// counter * 64 + a for a < 64 (the chance of 64 rejections is 0.0455^64).
inline double TruncatedNormalAt(uint64_t key, uint64_t counter) {
  for (uint64_t a = 0; a < 63; ++a) {
    const double z = NormalAt(key, counter * 64 + a);
    if (std::fabs(z) <= 2.0) return z;
  }
  return 0.0;
}

}  // namespace ctrain::model
