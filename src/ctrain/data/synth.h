// SynthGenerator: a deterministic, Criteo-shaped synthetic click data set, in
// the seed's layout (ids[field_size], values[field_size], label in {0,1}).
//
// Shape:
//   * Numeric fields f = 0..num_numeric-1: id f, value log1p(x) with x a
//     heavy-tailed count (discrete Pareto, per-field tail index and scale,
//     10-40% zeros), like Criteo's I1..I13 after the seed's log transform.
//   * Categorical fields c = 0..num_cat-1 (field num_numeric + c): each owns
//     the disjoint id range field_range(f) of [num_numeric, feature_size)
//     (an even split, the first (feature_size - num_numeric) % num_cat fields
//     one id larger). Inside it, id = lo + k - 1 with rank k ~ Zipf(zipf_s) on
//     {1..range size} (rejection-inversion, Hörmann & Derflinger 1996): the
//     lowest id of a field is its most frequent. Value 1.
//   * Label ~ Bernoulli(sigmoid(logit)), logit = bias + sum of hidden
//     first-order weights of the row's ids (uniform, sd 0.3) + low-rank (k=4)
//     interactions between the categorical field pairs (0,1), (2,3), ...
//     (up to 6 pairs, sd 0.4 each) + per-field numeric slopes * value. The
//     bias is calibrated at construction (rows 0..4095) so that the mean
//     click probability is target_ctr. A DeepFM or LR can learn this model;
//     the true logit ranks rows with AUC ~0.86 (default options).
//
// Determinism: row r is a pure function of (options, r): every random number
// is Mix64-hashed from (seed, r, stream) (counter-based, feature_hash.h), so
// rows do not depend on how the range is chunked or sharded, on the thread,
// or on the platform (up to libm's last-bit differences in log/pow/exp).
//
// Thread safety: Row() and AppendRows() are const and may be called from many
// threads; NextRow() mutates the cursor.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"

namespace ctrain::data {

struct SynthOptions {
  // Rows in the data set (for consumers such as a pipeline source; Row() and
  // NextRow() themselves accept any r >= 0). Must be >= 0.
  int64_t rows = 0;
  uint64_t seed = 2017;
  // Fields per row (numeric + categorical). Must be >= 1.
  int32_t field_size = 39;
  // Ids lie in [0, feature_size). Default: the seed config. Must be >=
  // field_size (each categorical field needs at least one id).
  int64_t feature_size = 117581;
  // Leading numeric fields, 0..field_size.
  int32_t num_numeric = 13;
  // Zipf exponent of categorical ids within a field. Must be > 0.
  double zipf_s = 1.1;
  // Mean click probability the bias is calibrated to; in (0, 1).
  double target_ctr = 0.25;
};

Status ValidateSynthOptions(const SynthOptions& options);

class SynthGenerator {
 public:
  // REQUIRES: ValidateSynthOptions(options).ok() (asserted); use Create to get
  // an error instead.
  explicit SynthGenerator(SynthOptions options);
  static StatusOr<std::unique_ptr<SynthGenerator>> Create(const SynthOptions& options);

  // Row r: *label in {0,1}, ids[field_size], values[field_size]; *logit (if
  // not null) gets the true logit the label was drawn from. REQUIRES: r >= 0.
  void Row(int64_t r, float* label, int64_t* ids, float* values, double* logit = nullptr) const;
  // Row(next_row()), then advances the cursor.
  void NextRow(float* label, int64_t* ids, float* values) { Row(next_++, label, ids, values); }
  int64_t next_row() const { return next_; }
  void Seek(int64_t r) { next_ = r; }

  // Appends rows [first, first + count) to a fixed-length batch.
  // REQUIRES: batch->field_size == field_size (or batch empty with field_size 0,
  // which is then set).
  void AppendRows(int64_t first, int64_t count, Batch* batch) const;

  // [lo, hi) id range of field f (numeric fields: [f, f + 1)).
  std::pair<int64_t, int64_t> field_range(int32_t f) const;
  double bias() const { return bias_; }
  const SynthOptions& options() const { return options_; }

 private:
  struct Zipf {
    int64_t n;
    double h_x1, h_n, s_const;
  };
  struct Numeric {
    double missing, alpha_inv, scale, slope;
  };
  uint64_t Rand(uint64_t row_key, uint64_t stream) const;
  int64_t SampleZipf(const Zipf& z, uint64_t row_key, uint64_t stream) const;
  // Everything but the label; returns the logit without bias.
  double Features(int64_t r, int64_t* ids, float* values) const;

  SynthOptions options_;
  int32_t num_cat_;
  uint64_t seed_key_;
  std::vector<int64_t> lo_;  // [field_size + 1]: field f owns [lo_[f], lo_[f+1])
  std::vector<Zipf> zipf_;   // [num_cat]
  std::vector<Numeric> numeric_;
  int32_t num_pairs_;
  double bias_ = 0;
  int64_t next_ = 0;
};

}  // namespace ctrain::data
