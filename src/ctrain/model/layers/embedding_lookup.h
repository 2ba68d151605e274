// Embedding lookup for the batch's unique rows: forward gather and sparse backward.
//
// The tables themselves live elsewhere (in the trainer, later a parameter
// server). A batch of n = B*F feature occurrences is first reduced to its U
// unique ids (sorted ascending) and, for each occurrence p, `index[p]`, the
// position of its id in that list. The caller gathers the U table rows; these
// kernels work on the gathered rows only:
//
//   forward   e[p, :]     = rows[index[p], :] * values[p]            e: [n, dim]
//   backward  d_rows[u,:] = sum over p with index[p] == u of d_e[p, :] * values[p]
//
// This is tf.nn.embedding_lookup followed by tf.multiply(.., feat_vals) in the
// seed (lambdaji/tf_repos DeepFM.py); the sparse gradient matches TF's
// IndexedSlices gradient after summing duplicates.
//
// Determinism: the backward pass sums each row's contributions in ascending
// occurrence order p, independent of the thread count.
// Thread safety: the free functions are reentrant; a RowPositions is used by
// one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ctrain::model {

// Unique ids of `ids` in ascending order and, for each occurrence, its position
// in that list: unique_ids[(*index)[p]] == ids[p]. Handles duplicates within a
// row and across rows. One hash pass plus a sort of the U unique ids; scratch is
// thread-local and reused, so steady-state calls do not allocate (the output
// vectors keep their capacity). REQUIRES: ids.size() < 2^31.
void ComputeUniqueIds(std::span<const int64_t> ids, std::vector<int64_t>* unique_ids, std::vector<int32_t>* index);

// Inverse of `index` as CSR: the occurrences of unique row u are
// positions[offsets[u] .. offsets[u+1]), ascending. Built by a counting sort.
struct RowPositions {
  std::vector<int32_t> offsets;    // [U + 1]
  std::vector<int32_t> positions;  // [n]
  // REQUIRES: 0 <= index[p] < num_rows for all p.
  void Build(std::span<const int32_t> index, int64_t num_rows);
  int64_t num_rows() const { return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1; }
};

// e[p, :] = rows[index[p], :] * values[p] for p in [0, n).   rows: [U, dim], e: [n, dim].
void EmbeddingLookupForward(int64_t n, int32_t dim, const int32_t* index, const float* values, const float* rows,
                            float* e);

// d_rows[u, :] = sum_{p in rows_of(u)} d_e[p, :] * values[p]  (overwrites d_rows: [U, dim]).
void EmbeddingLookupBackward(const RowPositions& pos, int32_t dim, const float* values, const float* d_e,
                             float* d_rows);

// First-order (linear) term on scalar rows w: y[b] = sum_f w_rows[index[b*F+f]] * values[b*F+f].
//   index, values: [B, F]; w_rows: [U]; y: [B].
void FirstOrderForward(int64_t B, int32_t F, const int32_t* index, const float* values, const float* w_rows,
                       float* y);

// d_w[u] = sum_{p in rows_of(u)} d_y[p / F] * values[p]   (overwrites d_w: [U]).
void FirstOrderBackward(const RowPositions& pos, int32_t F, const float* values, const float* d_y, float* d_w);

}  // namespace ctrain::model
