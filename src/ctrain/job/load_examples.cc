#include "ctrain/job/load_examples.h"

#include <limits.h>
#include <stdlib.h>

#include <cstdio>

#include "ctrain/train/input_checks.h"
#include "ctrain/train/prediction_output.h"

namespace ctrain::job {

std::string AbsolutePath(const std::string& path) {
  if (path.empty()) return path;
  char abs[PATH_MAX];
  return ::realpath(path.c_str(), abs) != nullptr ? std::string(abs) : path;
}

Status LoadExamples(const std::vector<std::string>& paths, DataOptions& data, int64_t feature_size,
                    train::Dataset* out, const char* what, train::LoadStats* stats_out, bool model_fixed) {
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, data.ReaderOptions());
  ro.feature_size = feature_size;
  ro.id_limit = feature_size;  // the reader's located range error
  ro.id_limit_is_model = model_fixed;
  train::LoadStats local;
  train::LoadStats& stats = stats_out != nullptr ? *stats_out : local;
  StatusOr<train::Dataset> loaded = train::LoadDataset(paths, ro, &stats);
  // --valid / --input errors say which flag; --train errors read as in stream mode.
  if (!loaded.ok()) return std::string(what) == "train" ? loaded.status() : loaded.status().WithContext(std::string("--") + what);
  *out = std::move(loaded).value();
  if (std::string(what) != "input")  // eval/predict log them with the output line they affect
    for (const std::string& d : train::DescribeDropped(stats.dropped, false))
      std::fprintf(stderr, "ctrain: %s: %s\n", what, d.c_str());
  std::fprintf(stderr, "ctrain: %s: %lld examples from %lld file(s), CTR %.4f%s%s\n", what,
               static_cast<long long>(out->size()), static_cast<long long>(stats.files), out->PositiveRate(),
               stats.skipped.empty() ? "" : "; skipped: ", stats.skipped.c_str());
  return Status::OK();
}

}  // namespace ctrain::job
