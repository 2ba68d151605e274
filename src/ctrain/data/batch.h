// Batch: a mini-batch of CTR examples, the unit that flows from the input
// pipeline to the trainer — and, later, across a process boundary (data
// service, parameter server), so it is plain contiguous memory with a
// documented wire format.
//
// Layout (the seed's feat_ids / feat_vals, Guo et al. 2017 DeepFM code):
//   labels  float[B]            click label in {0, 1}
//   ids     int64[B * F]        row-major; ids[b * F + f] is field f of example b
//   values  float[B * F]        same shape as ids
// where B = size() and F = field_size. Variable-length rows (fields that
// differ per example) use CSR: row_splits int64[B + 1] with row b's features at
// [row_splits[b], row_splits[b+1]); row_splits is empty for fixed-length batches.
// Multi-hot batches (fields holding 0..n ids each: tags, histories; DeepCTR's
// VarLenSparseFeat) keep F fields per row but carry ragged fields without
// padding: field_splits int64[B * F + 1], field f of row b holding the ids at
// [field_splits[b*F+f], field_splits[b*F+f+1]) of ids/values (nnz entries in
// all). The model pools each field as the weighted sum of its ids' embeddings
// (values are the weights; mean pooling is a 1/n weight set by the feature
// spec, data/feature_spec.h). field_splits is empty for one-hot batches, which
// keep the fixed layout above.
//
// Thread safety: a Batch is a value; move it between threads, don't share it mutably.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::data {

struct Batch {
  int32_t field_size = 0;            // F; for variable-length batches the maximum row length
  std::vector<float> labels;         // [B]
  std::vector<int64_t> ids;          // [B * F] or [nnz]
  std::vector<float> values;         // same as ids
  std::vector<int64_t> row_splits;   // [] (fixed) or [B + 1] (variable-length)
  std::vector<int64_t> field_splits; // [] (one-hot) or [B * F + 1] (multi-hot, see above)

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  bool empty() const { return labels.empty(); }
  bool variable_length() const { return !row_splits.empty(); }
  bool multi_hot() const { return !field_splits.empty(); }

  // Drops all rows, keeps capacity.
  void Clear();
  // Reserves room for `rows` fixed-length rows of `fields` fields.
  void Reserve(int64_t rows, int32_t fields);

  // Appends one fixed-length row. REQUIRES: ids.size() == values.size() == field_size.
  void AppendRow(float label, std::span<const int64_t> row_ids, std::span<const float> row_values);

  // Appends one multi-hot row: field f holds field_lengths[f] consecutive
  // entries of row_ids/row_values. REQUIRES: field_lengths.size() == field_size,
  // the lengths sum to row_ids.size() == row_values.size(), and the batch is
  // empty or already multi-hot (field_splits starts as {0} for the first row).
  void AppendMultiHotRow(float label, std::span<const int64_t> row_ids, std::span<const float> row_values,
                         std::span<const int32_t> field_lengths);

  // Row b's ids / values (fixed, variable length or multi-hot: all fields).
  std::span<const int64_t> row_ids(int64_t b) const;
  std::span<const float> row_values(int64_t b) const;

  // Checks shapes and invariants (labels finite, sizes consistent, splits
  // monotone; row_splits and field_splits are not both set).
  Status Validate() const;

  // Wire format, little-endian (docs/formats.md#batch):
  //   magic "CTB1" | u32 flags (bit0 = variable length, bit1 = multi-hot) | i64 B | i32 F
  //   | i64 nnz | f32 labels[B] | i64 ids[nnz] | f32 values[nnz]
  //   | i64 row_splits[B+1] if variable | i64 field_splits[B*F+1] if multi-hot
  void SerializeTo(std::string* out) const;
  std::string Serialize() const;
  // Errors: DataLoss naming the byte offset when the buffer is short, has a bad
  // magic or inconsistent sizes. Never allocates more than the buffer implies.
  static StatusOr<Batch> Deserialize(std::string_view bytes);
  // Same into *out, reusing its buffers' capacity (a receiver that recycles
  // batches allocates nothing in the steady state). On error *out is unspecified.
  static Status DeserializeInto(std::string_view bytes, Batch* out);

  bool operator==(const Batch&) const = default;
};

}  // namespace ctrain::data
