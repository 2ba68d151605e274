#include "ctrain/model/layers/embedding_lookup.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "ctrain/model/random.h"

namespace ctrain::model {

void ComputeUniqueIds(std::span<const int64_t> ids, std::vector<int64_t>* unique_ids, std::vector<int32_t>* index) {
  // Open-addressing table id -> first-seen number, then sort the unique ids and
  // renumber. Scratch survives across calls.
  thread_local std::vector<int64_t> keys;
  thread_local std::vector<int32_t> slots;
  thread_local std::vector<std::pair<int64_t, int32_t>> seen;  // (id, first-seen number)
  thread_local std::vector<int32_t> rank;

  const size_t n = ids.size();
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  const size_t mask = cap - 1;
  if (keys.size() < cap) {
    keys.resize(cap);
    slots.resize(cap);
  }
  std::fill(slots.begin(), slots.begin() + cap, -1);
  seen.clear();
  index->resize(n);
  int32_t* idx = index->data();
  for (size_t p = 0; p < n; ++p) {
    const int64_t id = ids[p];
    size_t h = SplitMix64(static_cast<uint64_t>(id)) & mask;
    while (true) {
      const int32_t s = slots[h];
      if (s < 0) {
        slots[h] = static_cast<int32_t>(seen.size());
        keys[h] = id;
        idx[p] = static_cast<int32_t>(seen.size());
        seen.emplace_back(id, static_cast<int32_t>(seen.size()));
        break;
      }
      if (keys[h] == id) {
        idx[p] = s;
        break;
      }
      h = (h + 1) & mask;
    }
  }
  std::sort(seen.begin(), seen.end());
  const size_t U = seen.size();
  rank.resize(U);
  unique_ids->resize(U);
  for (size_t i = 0; i < U; ++i) {
    (*unique_ids)[i] = seen[i].first;
    rank[seen[i].second] = static_cast<int32_t>(i);
  }
  for (size_t p = 0; p < n; ++p) idx[p] = rank[idx[p]];
}

void RowPositions::Build(std::span<const int32_t> index, int64_t num_rows) {
  offsets.assign(num_rows + 1, 0);
  positions.resize(index.size());
  for (int32_t u : index) ++offsets[u + 1];
  for (int64_t u = 0; u < num_rows; ++u) offsets[u + 1] += offsets[u];
  // Fill in ascending p using offsets[u] as a cursor, then shift back.
  for (size_t p = 0; p < index.size(); ++p) positions[offsets[index[p]]++] = static_cast<int32_t>(p);
  for (int64_t u = num_rows; u > 0; --u) offsets[u] = offsets[u - 1];
  offsets[0] = 0;
}

void EmbeddingLookupForward(int64_t n, int32_t dim, const int32_t* index, const float* values, const float* rows,
                            float* e) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < n; ++p) {
    const float* src = rows + static_cast<int64_t>(index[p]) * dim;
    float* dst = e + p * dim;
    const float v = values[p];
#pragma omp simd
    for (int32_t k = 0; k < dim; ++k) dst[k] = src[k] * v;
  }
}

void EmbeddingLookupBackward(const RowPositions& pos, int32_t dim, const float* values, const float* d_e,
                             float* d_rows) {
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
      const float* src = d_e + p * dim;
#pragma omp simd
      for (int32_t k = 0; k < dim; ++k) dst[k] += src[k] * v;
    }
  }
}

void FirstOrderForward(int64_t B, int32_t F, const int32_t* index, const float* values, const float* w_rows,
                       float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    float s = 0.0f;
    for (int32_t f = 0; f < F; ++f) s += w_rows[index[b * F + f]] * values[b * F + f];
    y[b] = s;
  }
}

void FirstOrderBackward(const RowPositions& pos, int32_t F, const float* values, const float* d_y, float* d_w) {
  const int64_t U = pos.num_rows();
  const int32_t* off = pos.offsets.data();
  const int32_t* ps = pos.positions.data();
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < U; ++u) {
    float s = 0.0f;
    for (int32_t i = off[u]; i < off[u + 1]; ++i) s += d_y[ps[i] / F] * values[ps[i]];
    d_w[u] = s;
  }
}

}  // namespace ctrain::model
