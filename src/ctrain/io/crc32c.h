// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78) and the
// TFRecord / LevelDB CRC mask.
//
// Source: RFC 3720 section 12.1 (iSCSI) for the polynomial and test vectors;
// tensorflow/core/lib/hash/crc32c.h (and leveldb/util/crc32c.h) for Mask/Unmask.
//
// Crc32c() uses the SSE4.2 CRC32 instruction when the running CPU has it
// (checked once at run time with __builtin_cpu_supports, so the binary does
// not need -msse4.2/-march=native) and a slicing-by-8 table otherwise. Both
// paths return identical values for every input.
//
// Thread safety: all functions are pure and safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ctrain::io {

// Returns the CRC-32C of data[0, n). `init` is the CRC of the bytes that
// precede `data` (0 for none), so Crc32c(b, nb, Crc32c(a, na)) == Crc32c(a+b).
// Standard values: Crc32c("123456789", 9) == 0xE3069283,
// Crc32c(32 zero bytes) == 0x8A9136AA.
uint32_t Crc32c(const void* data, size_t n, uint32_t init = 0);

// The two implementations, exposed for tests and benchmarks.
uint32_t Crc32cSoftware(const void* data, size_t n, uint32_t init = 0);
// REQUIRES: Crc32cHardwareAvailable().
uint32_t Crc32cHardware(const void* data, size_t n, uint32_t init = 0);
bool Crc32cHardwareAvailable();

// TFRecord stores masked CRCs: a CRC of data that itself contains CRCs is
// weak, so the stored value is rotated right by 15 bits and offset by a
// constant (exactly as TensorFlow's crc32c::Mask).
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

inline constexpr uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

inline constexpr uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace ctrain::io
