// Loads labelled examples into memory for a job (train --input-mode memory,
// --valid, eval, predict) and logs what was read: examples, files, CTR, and
// the records skipped or dropped (counted, never silent).
#pragma once

#include <string>
#include <vector>

#include "ctrain/base/path.h"
#include "ctrain/base/status.h"
#include "ctrain/job/data_options.h"
#include "ctrain/train/dataset.h"

namespace ctrain::job {

// `what` is the flag the paths came from without dashes ("train", "valid",
// "input"): errors of --valid and --input carry it as context; the log lines
// start with it. `model_fixed`: feature_size is the trained model's, so an id
// beyond it says so. `stats_out` (optional) receives the load statistics.
// `labels`: whether text records start with a label (io/label_mode.h; predict
// reads kAuto or kAbsent, unlabelled examples have label NaN).
Status LoadExamples(const std::vector<std::string>& paths, DataOptions& data, int64_t feature_size,
                    train::Dataset* out, const char* what, train::LoadStats* stats_out = nullptr,
                    bool model_fixed = false, io::LabelMode labels = io::LabelMode::kRequired);

// LoadExamples for data read through a feature spec (train::LoadSpecDataset),
// with the same log line and error context.
Status LoadSpecExamples(const std::vector<std::string>& paths, const data::FeatureSpec& spec, train::Dataset* out,
                        const char* what, train::LoadStats* stats_out = nullptr);

// The absolute path of a --feature-map (as recorded in checkpoints); "" stays "".

}  // namespace ctrain::job
