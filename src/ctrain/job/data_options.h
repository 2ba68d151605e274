// How a job reads examples: the settings shared by every command that reads
// them (inspect, convert, train, eval, predict, and the Python package), with
// the CLI's names (--format, --compression, --field-size, --id-base,
// --feature-size, --feature-map, --skip-corrupt-records, --max-skipped-records,
// --pipe-timeout-ms, --max-line-bytes, --criteo-pad-missing-trailing). Validation errors name those flags.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"

namespace ctrain::job {

// Largest --field-size: F ids and values are held per example (and per batch row).
inline constexpr int32_t kMaxFieldSize = 1 << 20;

struct DataOptions {
  std::string format = "auto";       // auto|libsvm|tfrecord|criteo-tsv|criteo-csv|libffm
  std::string compression = "auto";  // auto|none|gzip|zlib
  int32_t field_size = 39;           // F, features per example
  int32_t id_base = 0;               // LibSVM: the file's first id
  int64_t feature_size = 117581;     // rows of the embedding tables (Criteo hash buckets)
  std::string feature_map;           // Criteo: vocabulary from a feature map instead of hashing
  bool skip_corrupt_records = false;
  uint64_t max_skipped_records = 1000;
  int64_t max_line_bytes = static_cast<int64_t>(io::kDefaultMaxLineBytes);  // text: longest line
  int64_t pipe_timeout_ms = 60000;   // FIFOs / pipe: channels (data/pipe_mode.h); 0 = no limit
  // Criteo text: rows whose trailing empty cells were stripped read the missing
  // cells as empty (counted); off = such a row is an error naming the flag.
  bool criteo_pad_missing_trailing = false;
  // --feature-spec: a JSON/TOML file mapping the input's keys to fields
  // (data/feature_spec.h, docs/feature-spec.md); "" = the seed layout. It
  // then decides field_size and feature_size.
  std::string feature_spec;
  // --oov: an id at or above --feature-size is an error naming the record
  // ("error"), or is read as its field's out-of-vocabulary row ("bucket":
  // data::ExampleReaderOptions::oov_buckets; the model then has feature_size +
  // field_size rows, model::ModelConfig::oov_buckets).
  std::string oov = "error";

  // Validated reader options (InvalidArgument naming the flag); loads the
  // feature map if one is set. The vocabulary is shared by copies of this
  // object and stays alive while any of them has the same feature_map.
  StatusOr<data::ExampleReaderOptions> ReaderOptions();

 private:
  std::shared_ptr<io::CriteoVocabulary> vocab_;
  std::string vocab_path_;  // the feature_map vocab_ was loaded from
};

// --max-line-bytes range: [1, 2^40]; InvalidArgument naming the flag otherwise.
Status CheckMaxLineBytes(int64_t n);

}  // namespace ctrain::job
