#include "ctrain/model/layers/dropout.h"

#include "ctrain/model/random.h"

namespace ctrain::model {

uint64_t DropoutStream(int64_t step, int32_t layer) {
  return (static_cast<uint64_t>(step) << 8) ^ static_cast<uint64_t>(layer) ^ 0xD50F000000000000ULL;
}

void DropoutForward(int64_t n, float rate, uint64_t seed, uint64_t stream, const float* src, float* mask, float* dst) {
  const uint64_t key = StreamKey(seed, stream);
  const float scale = 1.0f / (1.0f - rate);
  const int64_t pairs = (n + 1) / 2;  // one 64-bit draw gives two uniforms
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < pairs; ++q) {
    const uint64_t bits = CounterBits(key, static_cast<uint64_t>(q));
    const int64_t i = 2 * q;
    mask[i] = UniformHi(bits) >= rate ? scale : 0.0f;
    dst[i] = src[i] * mask[i];
    if (i + 1 < n) {
      mask[i + 1] = UniformLo(bits) >= rate ? scale : 0.0f;
      dst[i + 1] = src[i + 1] * mask[i + 1];
    }
  }
}

void DropoutBackward(int64_t n, const float* mask, const float* diff_dst, float* diff_src) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) diff_src[i] = diff_dst[i] * mask[i];
}

}  // namespace ctrain::model
