// SpecColumns: rows read through a feature spec (data/feature_spec.h) as one
// array per spec entry, the layout Python's ctrain.read / Pipeline(...,
// feature_spec=) return and `ctrain convert --output-format npz` writes
// (docs/feature-spec.md#arrays).
//
// Per entry (B = rows):
//   kDense  numeric entries: float32 [B] (length 1) or [B, length], the value
//           the trainer sees (after log1p; a missing key's default).
//   kIds    one-hot categorical entries: int64 [B] or [B, length], the id.
//   kBag    multi-hot entries (tf.Example var_len, every LibSVM field-map and
//           libFFM field): torch.nn.EmbeddingBag's input layout, the rows
//           concatenated:
//             ids      int64 [nnz]
//             offsets  int64 [B], offsets[b] = the start of row b in ids (row b
//                      is ids[offsets[b] : offsets[b+1]], the last row runs to nnz)
//             weights  float32 [nnz], EmbeddingBag's per_sample_weights (use
//                      mode="sum"): the pooled weights the trainer uses (1/n
//                      for pooling mean; the values as written for LibSVM and
//                      libFFM). Present (`weighted`) unless the entry is a
//                      tf.Example var_len field with pooling sum (all 1).
// Ids are the spec's ids, the rows of the trainer's embedding tables: in
// [0, feature_size), each entry in its block [offset, offset + size) (the
// checkpoint's spec JSON lists the offsets); subtract the offset for a table
// per feature.
//
// Thread safety: a builder is used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/data/spec_row_builder.h"

namespace ctrain::data {

struct SpecColumn {
  enum class Kind { kDense, kIds, kBag };
  std::string name;  // the spec entry's name
  Kind kind = Kind::kDense;
  int32_t width = 1;       // kDense/kIds: values per row; 1 = shape [B], else [B, width]
  bool weighted = false;   // kBag: weights are returned
  std::vector<float> values;     // kDense: [B * width]; kBag (weighted): the weights [nnz]
  std::vector<int64_t> ids;      // kIds: [B * width]; kBag: [nnz]
  std::vector<int64_t> offsets;  // kBag: [B]
};

struct SpecColumns {
  std::vector<float> labels;        // [B]
  std::vector<SpecColumn> columns;  // in spec order
  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

class SpecColumnsBuilder {
 public:
  explicit SpecColumnsBuilder(const FeatureSpec& spec);
  // Appends a row built by a SpecRowBuilder of the same spec. Errors:
  // Internal when the row does not have the spec's layout.
  Status Append(const SpecRow& row);
  // Appends every row of a batch in the trainer's layout for this spec (one-hot
  // [B, F] for a one-hot spec, multi-hot field_splits for a multi-hot one: what
  // the data service carries, dataservice/split_source.h). Errors:
  // InvalidArgument when the batch's field_size is not the spec's, or a row
  // does not have the spec's layout (nothing of the batch is appended then).
  Status AppendBatch(const Batch& batch);
  int64_t rows() const { return cols_.rows(); }
  // The rows appended since the last Take (empty columns of the same layout remain).
  SpecColumns Take();

 private:
  SpecColumns Empty() const;
  FeatureSpec spec_;
  SpecColumns cols_;
};

// Every row of `inputs` (in order) through `spec`, as columns; `records`
// (optional) gets the rows per input. Errors: SpecReader's (file and record
// named); InvalidArgument "<file>: no records" for an input without rows.
StatusOr<SpecColumns> ReadSpecColumns(const std::vector<std::string>& inputs, const FeatureSpec& spec,
                                      std::vector<uint64_t>* records = nullptr);

}  // namespace ctrain::data
