// Second-order factorisation-machine term (Rendle 2010, eq. 5; Guo et al. 2017,
// DeepFM eq. 2) on value-scaled embeddings e = V[ids] * values:
//
//   sum[b, k] = sum_f e[b, f, k]
//   y[b]      = 1/2 * sum_k ( sum[b, k]^2 - sum_f e[b, f, k]^2 )
//   d e[b, f, k] = d_y[b] * (sum[b, k] - e[b, f, k])
//
// Shapes (row-major): e [B, F, K], sum [B, K], y and d_y [B].
// Matches the seed's "Second-order" block (sum_square - square_sum, times 0.5).
// Thread safety: reentrant. Deterministic: each output is a fixed-order sum.
#pragma once

#include <cstdint>

namespace ctrain::model {

// Writes sum [B, K] (kept for the backward pass) and y [B].
void FmInteractionForward(int64_t B, int32_t F, int32_t K, const float* e, float* sum, float* y);

// d_e[b, f, k] = d_y[b] * (sum[b, k] - e[b, f, k]); adds to d_e when `accumulate`, else overwrites.
void FmInteractionBackward(int64_t B, int32_t F, int32_t K, const float* e, const float* sum, const float* d_y,
                           bool accumulate, float* d_e);

}  // namespace ctrain::model
