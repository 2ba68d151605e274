#include "ctrain/model/layers/relu.h"

namespace ctrain::model {

void ReluForward(int64_t n, const float* src, float* dst) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
}

void ReluBackward(int64_t n, const float* dst, const float* diff_dst, float* diff_src) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) diff_src[i] = dst[i] > 0.0f ? diff_dst[i] : 0.0f;
}

}  // namespace ctrain::model
