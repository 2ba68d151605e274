// Little-endian fixed-width loads and stores (TFRecord framing, CRC32C, checkpoints).
// memcpy-based, so unaligned pointers are fine; a no-op byte swap on x86.
#pragma once

#include <cstdint>
#include <cstring>

namespace ctrain::io {

inline uint64_t DecodeLE64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

inline uint32_t DecodeLE32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

inline void EncodeLE64(void* p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  std::memcpy(p, &v, 8);
}

inline void EncodeLE32(void* p, uint32_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  std::memcpy(p, &v, 4);
}

}  // namespace ctrain::io
