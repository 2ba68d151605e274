#include "ctrain/model/layers/fm_interaction.h"

namespace ctrain::model {

void FmInteractionForward(int64_t B, int32_t F, int32_t K, const float* e, float* sum, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const float* eb = e + b * F * K;
    float* s = sum + b * K;
    // square_sum accumulated per k in float, like the seed's reduce_sum; the
    // final reduction over k in float too (K is small).
    float sq[512];
    float* sqp = K <= 512 ? sq : nullptr;
    for (int32_t k = 0; k < K; ++k) s[k] = 0.0f;
    if (sqp) {
      for (int32_t k = 0; k < K; ++k) sqp[k] = 0.0f;
      for (int32_t f = 0; f < F; ++f) {
        const float* ef = eb + f * K;
#pragma omp simd
        for (int32_t k = 0; k < K; ++k) {
          s[k] += ef[k];
          sqp[k] += ef[k] * ef[k];
        }
      }
      float acc = 0.0f;
      for (int32_t k = 0; k < K; ++k) acc += s[k] * s[k] - sqp[k];
      y[b] = 0.5f * acc;
    } else {
      float acc = 0.0f;
      for (int32_t k = 0; k < K; ++k) {
        float sk = 0.0f, qk = 0.0f;
        for (int32_t f = 0; f < F; ++f) {
          const float v = eb[f * K + k];
          sk += v;
          qk += v * v;
        }
        s[k] = sk;
        acc += sk * sk - qk;
      }
      y[b] = 0.5f * acc;
    }
  }
}

void FmInteractionBackward(int64_t B, int32_t F, int32_t K, const float* e, const float* sum, const float* d_y,
                           bool accumulate, float* d_e) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const float g = d_y[b];
    const float* s = sum + b * K;
    for (int32_t f = 0; f < F; ++f) {
      const float* ef = e + (b * F + f) * K;
      float* df = d_e + (b * F + f) * K;
      if (accumulate) {
#pragma omp simd
        for (int32_t k = 0; k < K; ++k) df[k] += g * (s[k] - ef[k]);
      } else {
#pragma omp simd
        for (int32_t k = 0; k < K; ++k) df[k] = g * (s[k] - ef[k]);
      }
    }
  }
}

}  // namespace ctrain::model
