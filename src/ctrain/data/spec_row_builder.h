// SpecRowBuilder: turns one input record into a row through a feature spec
// (data/feature_spec.h): a tf.train.Example, a parsed LibSVM line or libFFM
// triples. Multi-hot fields get their ids in field order with mean pooling
// applied (values 1/n).
//
// Thread safety: one builder per thread (it owns parser scratch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/io/example.h"
#include "ctrain/io/libffm.h"

namespace ctrain::data {

// One row built by a SpecRowBuilder: field f holds lengths[f] entries of
// ids/values (one-hot specs: exactly one each).
struct SpecRow {
  float label = 0;
  std::vector<int64_t> ids;
  std::vector<float> values;
  std::vector<int32_t> lengths;
  void Clear() {
    ids.clear();
    values.clear();
    lengths.clear();
  }
};

// Turns one input record into a row. One per thread (owns parser scratch).
// Errors are record-relative (the caller adds file/record context):
// InvalidArgument "feature 'C1': ...", "label 2 is not 0 or 1",
// "libsvm id 250 is in no field of the feature spec", ...
class SpecRowBuilder {
 public:
  static StatusOr<SpecRowBuilder> Create(const FeatureSpec& spec);
  Status FromExample(std::string_view record, SpecRow* row);
  // A parsed LibSVM line (ids as written minus id_base, in line order).
  Status FromLibSvm(float label, const int64_t* ids, const float* values, int32_t n, SpecRow* row);
  Status FromLibFfm(float label, const std::vector<io::FfmTriple>& triples, SpecRow* row);
  const FeatureSpec& spec() const { return spec_; }

 private:
  SpecRowBuilder() = default;
  Status Finish(SpecRow* row);  // bucket scratch_ into row (multi-hot), apply mean pooling
  FeatureSpec spec_;
  std::optional<io::ExampleParser> parser_;
  std::vector<io::ParsedFeature> parsed_;
  std::vector<std::vector<std::pair<int64_t, float>>> scratch_;  // per model field
  std::vector<std::pair<int64_t, int32_t>> libsvm_ranges_;       // (ids_lo - id_base, entry) sorted
  std::vector<int32_t> ffm_entry_;                               // ffm field number -> entry (-1)
  std::vector<std::unordered_map<std::string, int64_t>> vocab_;  // per entry (mapping vocabulary)
  std::string int_text_;                                         // scratch for int64 vocabulary keys
};

}  // namespace ctrain::data
