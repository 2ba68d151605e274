// Data flags shared by every subcommand that reads examples (inspect, convert,
// train, eval, predict): --format, --compression, --field-size, --id-base,
// --feature-size, --feature-map, --skip-corrupt-records, --pipe-timeout-ms, --max-line-bytes. Each flag also accepts
// the seed's underscore spelling (--field_size).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"

namespace ctrain::cli {

struct DataFlags {
  std::string format = "auto";
  std::string compression = "auto";
  int32_t field_size = 39;
  int32_t id_base = 0;
  int64_t feature_size = 117581;
  std::string feature_map;           // Criteo: vocabulary from a feature map instead of hashing
  bool skip_corrupt_records = false;
  uint64_t max_skipped_records = 1000;
  int64_t max_line_bytes = static_cast<int64_t>(io::kDefaultMaxLineBytes);  // text: longest line
  int64_t pipe_timeout_ms = 60000;   // FIFOs / pipe: channels (data/pipe_mode.h); 0 = no limit

  // Adds the flags to `app`. `with_feature_size` = false when the subcommand
  // defines --feature-size itself (train).
  // `compression_flag` names the input-compression flag ("--compression" except
  // in convert, where --compression is the output's).
  void Register(CLI::App* app, bool with_feature_size = true,
                const std::string& compression_flag = "--compression");
  // Builds reader options; loads the feature map if one was given (kept alive
  // by this object until feature_map changes; earlier options then dangle).
  StatusOr<data::ExampleReaderOptions> ReaderOptions();

 private:
  std::unique_ptr<io::CriteoVocabulary> vocab_;
  std::string vocab_path_;  // the feature_map vocab_ was loaded from
};

// Prints "ctrain: <status>" to stderr and returns 1.
int ReportError(const Status& s);

// Largest --field-size: F ids and values are held per example (and per batch row).
inline constexpr int32_t kMaxFieldSize = 1 << 20;

// --max-line-bytes range: [1, 2^40]; InvalidArgument naming the flag otherwise.
Status CheckMaxLineBytes(int64_t n);

}  // namespace ctrain::cli
