#include "ctrain/io/crc32c.h"
#include "ctrain/io/endian.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define CTRAIN_CRC32C_X86 1
#endif

namespace ctrain::io {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: kTable[k][b] is the CRC of byte b followed by k zero bytes.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    }
  }
};
constexpr Tables kTables;

inline uint64_t LoadLE64(const uint8_t* p) { return DecodeLE64(p); }

#ifdef CTRAIN_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t HwImpl(const uint8_t* p, size_t n, uint32_t crc) {
  uint64_t c = crc;
  // Align to 8 bytes so the 64-bit loads don't straddle cache lines.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  while (n >= 32) {
    c = _mm_crc32_u64(c, LoadLE64(p));
    c = _mm_crc32_u64(c, LoadLE64(p + 8));
    c = _mm_crc32_u64(c, LoadLE64(p + 16));
    c = _mm_crc32_u64(c, LoadLE64(p + 24));
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    c = _mm_crc32_u64(c, LoadLE64(p));
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --n;
  }
  return c32;
}

bool DetectHw() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

uint32_t SwImpl(const uint8_t* p, size_t n, uint32_t crc) {
  const auto& t = kTables.t;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    --n;
  }
  while (n >= 8) {
    uint64_t v = LoadLE64(p) ^ crc;
    crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff] ^
          t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^ t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    --n;
  }
  return crc;
}

}  // namespace

bool Crc32cHardwareAvailable() {
#ifdef CTRAIN_CRC32C_X86
  static const bool available = DetectHw();
  return available;
#else
  return false;
#endif
}

uint32_t Crc32cSoftware(const void* data, size_t n, uint32_t init) {
  return ~SwImpl(static_cast<const uint8_t*>(data), n, ~init);
}

uint32_t Crc32cHardware(const void* data, size_t n, uint32_t init) {
#ifdef CTRAIN_CRC32C_X86
  return ~HwImpl(static_cast<const uint8_t*>(data), n, ~init);
#else
  return Crc32cSoftware(data, n, init);
#endif
}

uint32_t Crc32c(const void* data, size_t n, uint32_t init) {
#ifdef CTRAIN_CRC32C_X86
  static const bool hw = Crc32cHardwareAvailable();
  if (hw) return ~HwImpl(static_cast<const uint8_t*>(data), n, ~init);
#endif
  return ~SwImpl(static_cast<const uint8_t*>(data), n, ~init);
}

}  // namespace ctrain::io
