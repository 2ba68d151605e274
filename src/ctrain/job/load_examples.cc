#include "ctrain/job/load_examples.h"

#include <limits.h>
#include <stdlib.h>

#include <cstdio>

#include "ctrain/base/log.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/prediction_output.h"

namespace ctrain::job {

Status LoadExamples(const std::vector<std::string>& paths, DataOptions& data, int64_t feature_size,
                    train::Dataset* out, const char* what, train::LoadStats* stats_out, bool model_fixed,
                    io::LabelMode labels) {
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, data.ReaderOptions());
  ro.labels = labels;
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
      Logf("%s: %s\n", what, d.c_str());
  char ctr[32] = "unlabelled";  // io/label_mode.h: read without labels (NaN)
  if (train::HasLabels(*out)) std::snprintf(ctr, sizeof ctr, "CTR %.4f", out->PositiveRate());
  char oov[96] = "";
  if (ro.oov_buckets)
    std::snprintf(oov, sizeof oov, "; %lld ids out of vocabulary (read as their field's OOV row)",
                  static_cast<long long>(stats.oov_ids));
  Logf("%s: %lld examples from %lld file(s), %s%s%s%s\n", what,
               static_cast<long long>(out->size()), static_cast<long long>(stats.files), ctr, oov,
               stats.skipped.empty() ? "" : "; skipped: ", stats.skipped.c_str());
  return Status::OK();
}

Status LoadSpecExamples(const std::vector<std::string>& paths, const data::FeatureSpec& spec, train::Dataset* out,
                        const char* what, train::LoadStats* stats_out) {
  train::LoadStats local;
  train::LoadStats& stats = stats_out != nullptr ? *stats_out : local;
  StatusOr<train::Dataset> loaded = train::LoadSpecDataset(paths, spec, &stats);
  if (!loaded.ok()) return std::string(what) == "train" ? loaded.status() : loaded.status().WithContext(std::string("--") + what);
  *out = std::move(loaded).value();
  Logf("%s: %lld examples from %lld file(s), CTR %.4f, %d fields%s (feature spec %s)%s%s\n",
               what, static_cast<long long>(out->size()), static_cast<long long>(stats.files), out->PositiveRate(),
               spec.field_size, spec.multi_hot ? " multi-hot" : "", spec.source.c_str(),
               stats.skipped.empty() ? "" : "; skipped: ", stats.skipped.c_str());
  return Status::OK();
}

}  // namespace ctrain::job
