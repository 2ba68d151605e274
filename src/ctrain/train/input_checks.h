// Input checks: inputs DeepFM cannot learn from, named before they waste a run
// (docs/training.md#input-checks).
//
//   InputStats      one cheap pass over the first max_examples training
//                   examples (memory mode: the first rows of the Dataset;
//                   stream mode: the first batches of the first epoch):
//                   per field a data::FieldStat (value range, whether the id
//                   varies, whether the values are integers, distinct values
//                   up to a cap) and the row of the largest |value|.
//                   Warnings(), by the rules of data::FieldStats:
//                     * unscaled values (FieldStats::Unscaled): a field with
//                       |value| above unscaled_abs_value (DeepFM multiplies
//                       each value into its embedding; raw counts up to 1e8
//                       saturate every prediction). Fix: log1p / standardise.
//                     * category codes stored as values
//                       (FieldStats::LooksLikeCodes): a field whose id never
//                       varies while its value takes min_codes or more
//                       non-negative integer values: DeepFM turns it into a
//                       scale of one embedding. Fix: hash the code into the id.
//   SaturationWarning  validation predictions that are (almost) all < 0.001
//                   or > 0.999.
//   ExtremeRows / LocateRows  the rows of a batch whose values are extreme
//                   (|v| >= extreme_abs_value or not finite), and where they
//                   are in the input files ("file:line", TFRecord "file:
//                   record i at offset o"): the non-finite-loss error names
//                   them instead of blaming the learning rate.
//
// Cost: InputStats::Add is O(rows * F) until full, then O(1). LocateRows
// re-reads the inputs; it runs only on the error path.
//
// Thread safety: an InputStats is used by one thread; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/data/batch.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/field_stats.h"

namespace ctrain::train {

struct InputCheckOptions {
  int64_t max_examples = 100000;    // examples InputStats looks at
  // Larger |value| in a field: "unscaled" warning. Scaled Criteo data reaches
  // ~650 (criteo_deepfm_va10k.libsvm) and trains; raw counts reach 1e8.
  double unscaled_abs_value = data::FieldStats::kUnscaledAbs;
  // Distinct integer values under one id that look like codes.
  int32_t min_codes = static_cast<int32_t>(data::FieldStats::kMinCodes);
  double extreme_abs_value = 1e6;   // ExtremeRows threshold
  double saturated_fraction = 0.99; // SaturationWarning threshold
};

class InputStats {
 public:
  // What one field (column f of the [rows, F] layout) looked like: a summary
  // of stats().fields()[f].
  struct Field {
    int64_t count = 0;
    float min = 0, max = 0;         // of the values
    int64_t first_id = 0;
    bool id_varies = false;
    bool integral = true;           // every value a finite integer
    uint64_t distinct = 0;          // distinct values, counted up to kMaxDistinct
  };
  // Distinct values are counted up to this many per field (ids up to 2).
  static constexpr size_t kMaxDistinct = 64;

  explicit InputStats(int32_t field_size, const InputCheckOptions& options = {});

  // Adds up to `rows` rows (ids/values row-major [rows, field_size]; labels
  // [rows], may be null) until max_examples are in; the rest are ignored.
  // Per field, the row holding the largest |value| is kept (copied when a
  // new maximum appears) so that a warning can name its input line.
  void Add(const int64_t* ids, const float* values, int64_t rows, const float* labels = nullptr);
  bool full() const { return examples_ >= options_.max_examples; }
  int64_t examples() const { return examples_; }
  const data::FieldStats& stats() const { return stats_; }
  std::vector<Field> fields() const;

  // One sentence per problem (fields numbered from 1, as in the readers'
  // errors), each with the fix; empty when nothing looks wrong. `what` names
  // the examples ("in the first N <what>"). With `paths` (the inputs the rows
  // came from, read with `reader`), an unscaled field's largest value is
  // located by LocateRows ("largest at a.libsvm:71"), scanning at most
  // `max_scan` examples.
  std::vector<std::string> Warnings(const std::string& what = "training examples",
                                    const std::vector<std::string>* paths = nullptr,
                                    const data::ExampleReaderOptions* reader = nullptr,
                                    int64_t max_scan = 1000000) const;

 private:
  // The first row with the largest |value| of a field (not finite counts as largest).
  struct Peak {
    float label = 0;
    std::vector<int64_t> ids;
    std::vector<float> values;
  };

  int32_t field_size_;
  InputCheckOptions options_;
  int64_t examples_ = 0;
  data::FieldStats stats_;   // field f = column f
  std::vector<Peak> peaks_;  // per field
};

// Fraction of `probs` below 0.001 or above 0.999.
double SaturatedFraction(const float* probs, int64_t n);
// The warning for evaluation predictions at `step` when at least
// options.saturated_fraction of them saturate ("" otherwise).
std::string SaturationWarning(double fraction, int64_t examples, int64_t step, const InputCheckOptions& options = {});

// A row of a batch holding an extreme value: the row, its first such field
// (0-based) and that value.
struct ExtremeRow {
  int64_t row = 0;
  int32_t field = 0;
  float value = 0;
};
// Rows of `batch` (fixed-length) with a value that is not finite or has
// |value| >= options.extreme_abs_value, the largest first, at most `max_rows`.
std::vector<ExtremeRow> ExtremeRows(const data::Batch& batch, size_t max_rows, const InputCheckOptions& options = {});

// For each of `rows`, "<location>: field <f> value <v>" where location is
// where an example with exactly that row's label, ids and values first
// occurs in `paths` (ExampleReader::Location, e.g. "a.libsvm:71"), or "row
// <r> of the batch (label <l>): field <f> value <v>" when it is not found or
// the inputs cannot be re-read (stdin, FIFOs, pipe: channels).
// Reads at most `max_scan` examples (-1 = all) before giving up on a row.
std::vector<std::string> LocateRows(const std::vector<std::string>& paths, const data::ExampleReaderOptions& reader,
                                    const data::Batch& batch, const std::vector<ExtremeRow>& rows,
                                    int64_t max_scan = -1);

}  // namespace ctrain::train
