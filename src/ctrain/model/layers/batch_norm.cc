#include "ctrain/model/layers/batch_norm.h"

#include <algorithm>
#include <cmath>

namespace ctrain::model {

namespace {
constexpr int64_t kBlock = 32;  // channels per task: contiguous in a row, so rows stream through cache
}

void BatchNormForwardTraining(int64_t B, int64_t C, float eps, float momentum, const float* x, const float* gamma,
                              const float* beta, float* xhat, float* inv_std, float* y, float* moving_mean,
                              float* moving_var) {
  const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock), w = c1 - c0;
    double sum[kBlock] = {}, sq[kBlock] = {};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) sum[j] += x[b * C + c0 + j];
    float mean[kBlock], istd[kBlock];
    for (int64_t j = 0; j < w; ++j) mean[j] = static_cast<float>(sum[j] / B);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) {
        const double d = static_cast<double>(x[b * C + c0 + j]) - mean[j];
        sq[j] += d * d;
      }
    for (int64_t j = 0; j < w; ++j) {
      const double var = sq[j] / B;
      istd[j] = static_cast<float>(1.0 / std::sqrt(var + eps));
      inv_std[c0 + j] = istd[j];
      if (moving_mean != nullptr) {
        moving_mean[c0 + j] = momentum * moving_mean[c0 + j] + (1.0f - momentum) * mean[j];
        moving_var[c0 + j] = momentum * moving_var[c0 + j] + (1.0f - momentum) * static_cast<float>(var);
      }
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t i = b * C + c0 + j;
        const float h = (x[i] - mean[j]) * istd[j];
        xhat[i] = h;
        y[i] = gamma[c0 + j] * h + beta[c0 + j];
      }
  }
}

void BatchNormForwardInference(int64_t B, int64_t C, float eps, const float* x, const float* gamma,
                               const float* beta, const float* moving_mean, const float* moving_var, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const float s = gamma[c] / std::sqrt(moving_var[c] + eps);
      y[b * C + c] = (x[b * C + c] - moving_mean[c]) * s + beta[c];
    }
}

void BatchNormBackward(int64_t B, int64_t C, const float* xhat, const float* inv_std, const float* gamma,
                       const float* dy, float* dx, float* d_gamma, float* d_beta) {
  const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock), w = c1 - c0;
    double sb[kBlock] = {}, sg[kBlock] = {};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t i = b * C + c0 + j;
        sb[j] += dy[i];
        sg[j] += static_cast<double>(dy[i]) * xhat[i];
      }
    float db[kBlock], dg[kBlock], k[kBlock];
    for (int64_t j = 0; j < w; ++j) {
      db[j] = static_cast<float>(sb[j]);
      dg[j] = static_cast<float>(sg[j]);
      d_beta[c0 + j] = db[j];
      d_gamma[c0 + j] = dg[j];
      k[j] = gamma[c0 + j] * inv_std[c0 + j] / static_cast<float>(B);
    }
    const float fb = static_cast<float>(B);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t i = b * C + c0 + j;
        dx[i] = k[j] * (fb * dy[i] - db[j] - xhat[i] * dg[j]);
      }
  }
}

}  // namespace ctrain::model
