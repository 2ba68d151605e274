// DLRM's "dot" feature interaction (Naumov et al. 2019, section 2.1.3; the
// default --arch-interaction-op=dot of facebookresearch/dlrm, without
// self-interaction): the dot products of every distinct pair of T vectors.
//
//   z[b, pair(i, j)] = <x[b, i, :], x[b, j, :]>      for 0 <= i < j < T
//   pair(i, j)       = j * (j - 1) / 2 + i            (P = T * (T - 1) / 2 pairs)
//
// The pair order is the reference's: it flattens the strictly lower triangle
// of Z = X X^T row by row (Z[1,0], Z[2,0], Z[2,1], Z[3,0], ...), which is
// pair(i, j) above with j the larger index.
//
// Backward (z is bilinear in x):
//   d x[b, i, :] = sum_{j != i} d z[b, pair(min(i,j), max(i,j))] * x[b, j, :]
//
// Shapes (row-major): x and d_x [B, T, K]; z and d_z [B, P] rows with a row
// stride (so the caller may place z inside a wider row, e.g. DLRM's top-MLP
// input [bottom output | z]). T >= 1 (T = 1: P = 0, nothing is written).
// FLOPs per example: 2 P K forward, 4 P K backward (DotInteractionFlops).
// Thread safety: reentrant (OpenMP over b inside). Determinism: every output
// element is a fixed-order sum, independent of the thread count.
#pragma once

#include <cstdint>

namespace ctrain::model {

// Pairs of T vectors: T (T - 1) / 2.
inline int64_t DotInteractionPairs(int64_t T) { return T * (T - 1) / 2; }

// Forward + both backward passes (2 P K + 4 P K) per example.
inline double DotInteractionFlops(int64_t T, int64_t K) { return 6.0 * static_cast<double>(DotInteractionPairs(T)) * K; }

// z[b * z_stride + pair(i, j)] = <x[b, i, :], x[b, j, :]>. REQUIRES: z_stride >= P.
void DotInteractionForward(int64_t B, int32_t T, int32_t K, const float* x, int64_t z_stride, float* z);

// d_x [B, T, K] (overwritten) from d_z[b * d_z_stride + p] and the forward input x.
void DotInteractionBackward(int64_t B, int32_t T, int32_t K, const float* x, const float* d_z, int64_t d_z_stride,
                            float* d_x);

}  // namespace ctrain::model
