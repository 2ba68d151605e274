// Float arrays in the parameter-server protocol's `bytes` fields
// (ps/parameter_server.proto): little-endian f32, row-major, a memcpy on both
// ends (every ctrain host is little-endian).
#pragma once

#include <cstdint>
#include <string>

namespace ctrain::ps {

// `b` holds exactly n floats.
inline bool HasFloats(const std::string& b, int64_t n) { return static_cast<int64_t>(b.size()) == n * 4; }

// The floats of `b` (REQUIRES: HasFloats checked, or the size otherwise known).
inline const float* Floats(const std::string& b) { return reinterpret_cast<const float*>(b.data()); }

// out := the n floats at p.
inline void PutFloats(const float* p, int64_t n, std::string* out) {
  out->assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n) * sizeof(float));
}

}  // namespace ctrain::ps
