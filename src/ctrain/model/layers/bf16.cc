#include "ctrain/model/layers/bf16.h"

#include <algorithm>

#include <immintrin.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace ctrain::model {

namespace {

void ConvertScalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = F32ToBf16(src[i]);
}

// 32 values per VCVTNE2PS2BF16; the tail (< 32) through the masked one-vector form.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void ConvertAvx512Bf16(const float* src,
                                                                                        uint16_t* dst,
                                                                                        int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 lo = _mm512_loadu_ps(src + i);
    const __m512 hi = _mm512_loadu_ps(src + i + 16);
    const __m512bh r = _mm512_cvtne2ps_pbh(hi, lo);  // elements 0..15 from lo, 16..31 from hi
    _mm512_storeu_si512(dst + i, reinterpret_cast<const __m512i&>(r));
  }
  while (i < n) {
    const int64_t m = std::min<int64_t>(16, n - i);
    const __mmask16 k = static_cast<__mmask16>((1u << m) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(k, src + i);
    const __m256bh r = _mm512_cvtneps_pbh(v);
    _mm256_mask_storeu_epi16(dst + i, k, reinterpret_cast<const __m256i&>(r));
    i += m;
  }
}

bool CpuHasAvx512Bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}

}  // namespace

void ConvertF32ToBf16(const float* src, uint16_t* dst, int64_t n) {
  void (*kernel)(const float*, uint16_t*, int64_t) = CpuHasAvx512Bf16() ? ConvertAvx512Bf16 : ConvertScalar;
  constexpr int64_t kChunk = 16 * 1024;  // values per task; a multiple of 32
  if (n < 4 * kChunk) {
    kernel(src, dst, n);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    kernel(src + b, dst + b, std::min(kChunk, n - b));
  }
}

std::string DnnlCpuIsaName() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::all: return "all";
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
  }
  return "isa#" + std::to_string(static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
}

Status Bf16GemmSupported() {
  static const Status status = [] {
    const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const unsigned need = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);  // ISA values are bit sets
    if ((isa & need) == need && CpuHasAvx512Bf16()) return Status::OK();
    return FailedPreconditionError("bf16 GEMM needs a CPU with AVX512_BF16 (oneDNN's effective ISA here is " +
                                   DnnlCpuIsaName() + ")");
  }();
  return status;
}

}  // namespace ctrain::model
