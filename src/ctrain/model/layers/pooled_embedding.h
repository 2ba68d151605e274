// Pooled (multi-hot) embedding lookup: a field of one example holds 0..n ids
// (tags, a click history) and its embedding is the weighted sum of their rows.
// This is tf.nn.embedding_lookup_sparse(params, sp_ids, sp_weights,
// combiner="sum") and DeepCTR's VarLenSparseFeat with SequencePoolingLayer; a
// "mean" combiner is the same sum with weights 1/n, which the feature spec
// (data/feature_spec.h) writes into the values when it builds the batch.
//
// Shapes: S slots (S = B*F, slot s = b*F + f), nnz occurrences p, U unique rows.
//   splits  int64[S + 1]   slot s holds occurrences [splits[s], splits[s+1]) (data::Batch::field_splits)
//   index   int32[nnz]     unique row of occurrence p (ComputeUniqueIds of the batch's ids)
//   values  float[nnz]     weight of occurrence p
//   rows    float[U, dim]  gathered table rows
//
//   forward   e[s, :]     = sum_{p in slot s} rows[index[p], :] * values[p]     e: [S, dim]
//                           (an empty slot gives a zero vector, as TF does)
//   backward  d_rows[u,:] = sum_{p: index[p] == u} d_e[slot(p), :] * values[p]
//   first order (dim 1, w): y[b] = sum_f sum_{p in slot b*F+f} w[index[p]] * values[p]
//                           d_w[u] = sum_{p: index[p] == u} d_y[slot(p) / F] * values[p]
//
// With exactly one occurrence per slot these equal embedding_lookup.h's
// one-hot kernels bit for bit (same products, same summation order).
// Determinism: every sum runs in ascending p, independent of the thread count.
// Thread safety: reentrant.
#pragma once

#include <cstdint>

#include "ctrain/model/layers/embedding_lookup.h"

namespace ctrain::model {

// slot_of[p] = the slot s with splits[s] <= p < splits[s+1], for p in [0, splits[S]).
void SlotOfOccurrence(int64_t S, const int64_t* splits, int32_t* slot_of);

// e [S, dim] (overwritten).
void PooledEmbeddingForward(int64_t S, const int64_t* splits, int32_t dim, const int32_t* index, const float* values,
                            const float* rows, float* e);

// d_rows [U, dim] (overwritten); pos built from index (RowPositions::Build).
void PooledEmbeddingBackward(const RowPositions& pos, const int32_t* slot_of, int32_t dim, const float* values,
                             const float* d_e, float* d_rows);

// y [B] (overwritten); splits has B*F+1 entries.
void PooledFirstOrderForward(int64_t B, int32_t F, const int64_t* splits, const int32_t* index, const float* values,
                             const float* w_rows, float* y);

// d_w [U] (overwritten).
void PooledFirstOrderBackward(const RowPositions& pos, const int32_t* slot_of, int32_t F, const float* values,
                              const float* d_y, float* d_w);

}  // namespace ctrain::model
