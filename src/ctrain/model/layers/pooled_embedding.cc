#include "ctrain/model/layers/pooled_embedding.h"

#include <cstring>

namespace ctrain::model {

void SlotOfOccurrence(int64_t S, const int64_t* splits, int32_t* slot_of) {
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s)
    for (int64_t p = splits[s]; p < splits[s + 1]; ++p) slot_of[p] = static_cast<int32_t>(s);
}

void PooledEmbeddingForward(int64_t S, const int64_t* splits, int32_t dim, const int32_t* index, const float* values,
                            const float* rows, float* e) {
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    float* dst = e + s * dim;
    std::memset(dst, 0, sizeof(float) * dim);
    for (int64_t p = splits[s]; p < splits[s + 1]; ++p) {
      const float* src = rows + static_cast<int64_t>(index[p]) * dim;
      const float v = values[p];
#pragma omp simd
      for (int32_t k = 0; k < dim; ++k) dst[k] += src[k] * v;
    }
  }
}

void PooledEmbeddingBackward(const RowPositions& pos, const int32_t* slot_of, int32_t dim, const float* values,
                             const float* d_e, float* d_rows) {
  const int64_t U = pos.num_rows();
  const int32_t* off = pos.offsets.data();
  const int32_t* ps = pos.positions.data();
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < U; ++u) {
    float* dst = d_rows + u * dim;
    std::memset(dst, 0, sizeof(float) * dim);
    for (int32_t i = off[u]; i < off[u + 1]; ++i) {
      const int64_t p = ps[i];
      const float v = values[p];
      const float* src = d_e + static_cast<int64_t>(slot_of[p]) * dim;
#pragma omp simd
      for (int32_t k = 0; k < dim; ++k) dst[k] += src[k] * v;
    }
  }
}

void PooledFirstOrderForward(int64_t B, int32_t F, const int64_t* splits, const int32_t* index, const float* values,
                             const float* w_rows, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    float s = 0.0f;
    for (int64_t p = splits[b * F]; p < splits[(b + 1) * F]; ++p) s += w_rows[index[p]] * values[p];
    y[b] = s;
  }
}

void PooledFirstOrderBackward(const RowPositions& pos, const int32_t* slot_of, int32_t F, const float* values,
                              const float* d_y, float* d_w) {
  const int64_t U = pos.num_rows();
  const int32_t* off = pos.offsets.data();
  const int32_t* ps = pos.positions.data();
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < U; ++u) {
    float s = 0.0f;
    for (int32_t i = off[u]; i < off[u + 1]; ++i) s += d_y[slot_of[ps[i]] / F] * values[ps[i]];
    d_w[u] = s;
  }
}

}  // namespace ctrain::model
