// Data flags shared by every subcommand that reads examples (inspect, convert,
// train, eval, predict): --format, --compression, --field-size, --id-base,
// --feature-size, --feature-map, --skip-corrupt-records, --pipe-timeout-ms, --max-line-bytes,
// --criteo-pad-missing-trailing. Each flag also accepts
// the seed's underscore spelling (--field_size).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/data_options.h"

namespace ctrain::cli {

struct DataFlags : job::DataOptions {
  // Adds the flags to `app`. `with_feature_size` = false when the subcommand
  // defines --feature-size itself (train).
  // `compression_flag` names the input-compression flag ("--compression" except
  // in convert, where --compression is the output's).
  void Register(CLI::App* app, bool with_feature_size = true,
                const std::string& compression_flag = "--compression");
};

// Prints "ctrain: <status>" to stderr and returns 1.
int ReportError(const Status& s);

using job::CheckMaxLineBytes;
using job::kMaxFieldSize;

}  // namespace ctrain::cli
