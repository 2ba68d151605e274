// Shared pieces of the DLRM model tests (tests/model/dlrm_test.cc, dlrm_step_test.cc): the caller's
// table, batches with dense and categorical fields, one step's buffers, a small config.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ctrain/model/dlrm.h"
#include "model/grad_check.h"

namespace ctrain::model::dlrm_testing {

using testing::RandomVector;

// The embedding table V as the caller holds it (DLRM reads no w).
struct Table {
  int32_t K;
  std::vector<float> V;
  Table(int64_t fs, int32_t k, uint64_t seed) : K(k), V(fs * k) { InitEmbeddings(seed, fs, k, nullptr, V.data()); }
  std::vector<float> Gather(const std::vector<int64_t>& u) const {
    std::vector<float> rows(u.size() * K);
    for (size_t i = 0; i < u.size(); ++i) std::memcpy(rows.data() + i * K, V.data() + u[i] * K, sizeof(float) * K);
    return rows;
  }
};

// Rows whose first N fields are dense (ids 0..N-1, one per field, values in (0, 1.5)) and the rest
// categorical (ids >= N, values 1 or random).
inline data::Batch RandomBatch(int64_t B, int32_t F, int32_t N, int64_t feature_size, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Batch batch;
  batch.field_size = F;
  std::vector<int64_t> ids(F);
  std::vector<float> vals(F);
  for (int64_t b = 0; b < B; ++b) {
    for (int32_t f = 0; f < F; ++f) {
      if (f < N) {
        ids[f] = f;
        vals[f] = 0.05f + 1.4f * (rng() % 1000) / 1000.0f;
      } else {
        ids[f] = N + rng() % (feature_size - N);
        vals[f] = (rng() % 3 == 0) ? 0.5f + (rng() % 1000) / 1000.0f : 1.0f;
      }
    }
    batch.AppendRow(static_cast<float>(rng() % 2), ids, vals);
  }
  return batch;
}

struct Step {
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  std::vector<float> v_rows;
  SparseGrad wg, vg;
  LossTerms loss;
};

inline Step Prepare(const data::Batch& batch, const Table& t) {
  Step s;
  UniqueIds(batch, &s.u, &s.idx);
  s.v_rows = t.Gather(s.u);
  return s;
}

inline ModelConfig SmallConfig(int32_t num_dense = 3) {
  ModelConfig c;
  c.kind = "dlrm";
  c.feature_size = 40;
  c.field_size = 7;
  c.num_dense_fields = num_dense;
  c.embedding_size = 3;
  c.bottom_mlp = {6, 5};
  c.top_mlp = {7, 4};
  c.dropout = 0.0f;
  c.l2_reg = 0.01f;
  return c;
}

// Adds U(-a, a) to every dense parameter, so no bias or BN term is an identity.
inline void Perturb(Dlrm* m, float a) {
  for (DenseParam& p : m->dense_params()) {
    auto r = RandomVector(p.value.size(), static_cast<uint32_t>(p.value.size() * 7 + p.name.size()), -a, a);
    for (size_t i = 0; i < r.size(); ++i) p.value[i] += r[i];
  }
}

}  // namespace ctrain::model::dlrm_testing
