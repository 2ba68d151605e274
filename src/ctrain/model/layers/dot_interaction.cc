#include "ctrain/model/layers/dot_interaction.h"

namespace ctrain::model {

void DotInteractionForward(int64_t B, int32_t T, int32_t K, const float* x, int64_t z_stride, float* z) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const float* xb = x + b * T * K;
    float* zb = z + b * z_stride;
    int64_t p = 0;  // == pair(i, j): j outer, i inner
    for (int32_t j = 1; j < T; ++j) {
      const float* xj = xb + static_cast<int64_t>(j) * K;
      for (int32_t i = 0; i < j; ++i) {
        const float* xi = xb + static_cast<int64_t>(i) * K;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (int32_t k = 0; k < K; ++k) s += xi[k] * xj[k];
        zb[p++] = s;
      }
    }
  }
}

void DotInteractionBackward(int64_t B, int32_t T, int32_t K, const float* x, const float* d_z, int64_t d_z_stride,
                            float* d_x) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const float* xb = x + b * T * K;
    const float* gb = d_z + b * d_z_stride;
    float* db = d_x + b * T * K;
    for (int64_t n = 0; n < static_cast<int64_t>(T) * K; ++n) db[n] = 0.0f;
    int64_t p = 0;
    for (int32_t j = 1; j < T; ++j) {
      const float* xj = xb + static_cast<int64_t>(j) * K;
      float* dj = db + static_cast<int64_t>(j) * K;
      for (int32_t i = 0; i < j; ++i) {
        const float g = gb[p++];
        const float* xi = xb + static_cast<int64_t>(i) * K;
        float* di = db + static_cast<int64_t>(i) * K;
#pragma omp simd
        for (int32_t k = 0; k < K; ++k) {
          di[k] += g * xj[k];
          dj[k] += g * xi[k];
        }
      }
    }
  }
}

}  // namespace ctrain::model
