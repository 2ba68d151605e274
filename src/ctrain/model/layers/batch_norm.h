// Batch normalisation over the batch axis (Ioffe & Szegedy 2015), as
// tf.contrib.layers.batch_norm(center=True, scale=True) used by the seed:
//
// Training (batch statistics, biased variance):
//   mean[c] = 1/B sum_b x[b,c]           var[c] = 1/B sum_b (x[b,c] - mean[c])^2
//   inv_std[c] = 1 / sqrt(var[c] + eps)  xhat = (x - mean) * inv_std
//   y = gamma * xhat + beta
//   moving_mean = momentum * moving_mean + (1 - momentum) * mean      (same for moving_var with var)
// Inference: y = gamma * (x - moving_mean) / sqrt(moving_var + eps) + beta.
// Backward (training mode):
//   d_beta = sum_b dy,  d_gamma = sum_b dy * xhat,
//   dx = gamma * inv_std / B * (B * dy - d_beta - xhat * d_gamma)
//
// Defaults used by DeepFM: eps = 1e-3 (TF contrib default), momentum 0.99
// (TF's `decay`; the seed passes --batch_norm_decay). The moving variance is
// updated with the biased batch variance (TF's non-fused path).
// Shapes: x, y, xhat, dy, dx [B, C] row-major; per-channel arrays [C].
// Determinism: reductions run over b ascending, in double, per channel.
// Thread safety: reentrant.
#pragma once

#include <cstdint>

namespace ctrain::model {

// Writes y, xhat [B, C] and inv_std [C]; updates moving_mean / moving_var [C]
// (pass null for both to leave them alone, e.g. in gradient checks).
// REQUIRES: B >= 1.
void BatchNormForwardTraining(int64_t B, int64_t C, float eps, float momentum, const float* x, const float* gamma,
                              const float* beta, float* xhat, float* inv_std, float* y, float* moving_mean,
                              float* moving_var);

void BatchNormForwardInference(int64_t B, int64_t C, float eps, const float* x, const float* gamma,
                               const float* beta, const float* moving_mean, const float* moving_var, float* y);

// Writes dx [B, C] (may alias dy), d_gamma, d_beta [C] (overwrites).
void BatchNormBackward(int64_t B, int64_t C, const float* xhat, const float* inv_std, const float* gamma,
                       const float* dy, float* dx, float* d_gamma, float* d_beta);

}  // namespace ctrain::model
