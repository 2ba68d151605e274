#include "ctrain/io/feature_hash.h"

#include <cstddef>

namespace ctrain::io {
namespace {

inline uint64_t LoadLE(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint64_t Hash64(std::string_view s, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  uint64_t h = Mix64(seed ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ULL));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) h = Mix64(h ^ LoadLE(p + i, 8));  // compilers fuse this into one load
  if (i < n) h = Mix64(h ^ LoadLE(p + i, n - i));
  return h;
}

}  // namespace ctrain::io
