// bfloat16 (bf16) numbers for the mixed-precision GEMMs of FullyConnected.
//
// bf16 is the upper half of an IEEE-754 binary32: 1 sign bit, the same 8
// exponent bits (same range as f32), 7 stored significand bits (8 with the
// implicit one). Unit roundoff u = 2^-8: for a finite, normal x whose bf16
// rounding does not overflow, |bf16(x) - x| <= 2^-8 |x|.
//
// Rounding is the one of the x86 instructions VCVTNEPS2BF16 / VCVTNE2PS2BF16
// (Intel SDM, "convert_fp32_to_bfloat16"), which oneDNN and TF also use:
//   * round to nearest, ties to even;
//   * f32 denormals (exponent field 0) become a zero of the same sign (the
//     instruction treats denormal inputs as zero; VDPBF16PS, which consumes
//     the result, does the same);
//   * NaN stays NaN (quieted: bit 6 of the bf16 set), infinities stay infinite,
//     finite values that round above the bf16 maximum become infinity.
// F32ToBf16 is that rule in scalar code; ConvertF32ToBf16 is the vectorised
// version and gives the same bits for every input.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "ctrain/base/status.h"

namespace ctrain::model {

// Scalar reference conversion (rule above).
inline uint16_t F32ToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)  // NaN
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  if ((u & 0x7f800000u) == 0) return static_cast<uint16_t>((u >> 16) & 0x8000u);  // zero / denormal
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Exact (every bf16 is an f32).
inline float Bf16ToF32(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}

// f32 rounded to bf16 and back: the value a bf16 GEMM operand actually has.
inline float RoundToBf16(float x) { return Bf16ToF32(F32ToBf16(x)); }

// dst[i] = F32ToBf16(src[i]) for i in [0, n), bit-identical to the scalar rule.
// Uses AVX512_BF16 (VCVTNE2PS2BF16, 32 values per instruction) when the CPU
// has it, else the scalar loop; splits over the OpenMP threads when n is large
// (>= 64 Ki values). n may be 0. src and dst must not overlap.
void ConvertF32ToBf16(const float* src, uint16_t* dst, int64_t n);

// Name of the instruction set oneDNN dispatches to on this machine
// ("avx512_core_bf16", "avx2", ...; honours DNNL_MAX_CPU_ISA).
std::string DnnlCpuIsaName();

// OK when bf16 GEMMs run natively here: oneDNN's effective ISA includes
// AVX512_BF16 (avx512_core_bf16 or avx512_core_amx) and the CPU reports
// avx512bf16. Otherwise FailedPrecondition
//   "bf16 GEMM needs a CPU with AVX512_BF16 (oneDNN's effective ISA here is <isa>)"
// (oneDNN could emulate bf16 on plain AVX-512, slower than f32, so ctrain refuses
// rather than run a slow or silently different path). The answer is computed once.
Status Bf16GemmSupported();

}  // namespace ctrain::model
