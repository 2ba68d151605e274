// ExampleSchemaSummary: what features a stream of tf.train.Example records holds
// (for `ctrain inspect`). Feed it every record; it accumulates, per feature name,
// the kinds seen, how often the key is present or empty, and value-count ranges.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/example.h"

namespace ctrain::io {

// Statistics of one feature name over all records added so far.
struct FeatureSummary {
  std::string key;
  int64_t present = 0;         // records whose map holds the key (any content, Feature {} too)
  int64_t empty = 0;           // present records with zero values (Feature {} or an empty list)
  int64_t no_kind = 0;         // present records holding Feature {} (no kind set)
  int64_t bytes_records = 0;   // present records holding a bytes_list
  int64_t float_records = 0;   // ... a float_list
  int64_t int64_records = 0;   // ... an int64_list
  int64_t min_count = 0;       // fewest values in a present record (Feature {} counts 0)
  int64_t max_count = 0;       // most values in a present record
  int64_t total_values = 0;    // sum of value counts over present records

  // Number of distinct list kinds seen (0..3); > 1 means the feature is inconsistent.
  int kinds_seen() const {
    return (bytes_records > 0) + (float_records > 0) + (int64_records > 0);
  }
};

class ExampleSchemaSummary {
 public:
  // Decodes one serialized Example (every byte checked) and accumulates it.
  // A record that fails to decode is not counted. Errors: DataLoss (malformed bytes,
  // message as from DecodeExample; the caller adds file/record context).
  Status Add(std::string_view record);

  int64_t records() const { return records_; }
  int64_t duplicate_keys() const { return duplicate_keys_; }  // map entries overridden by a later one
  int64_t unknown_fields() const { return unknown_fields_; }  // skipped unknown fields

  // One summary per feature name, sorted by name (byte order).
  std::vector<FeatureSummary> Features() const;

  // Deterministic, human-readable table, e.g.
  //   records: 424  duplicate_keys: 0  unknown_fields: 0
  //   feature                  kind        present  missing  empty  no_kind  min  max
  //   company                  bytes_list      424        0    131      131    0    1
  // Non-printable key bytes (and backslash) print as \xNN.
  // `kind` lists every kind seen, joined by '|' ("none" when only Feature {} was seen).
  std::string ToText() const;

 private:
  int64_t records_ = 0;
  int64_t duplicate_keys_ = 0;
  int64_t unknown_fields_ = 0;
  std::map<std::string, FeatureSummary, std::less<>> features_;
  ExampleView view_;  // scratch, reused per record
};

}  // namespace ctrain::io
