// Loads labelled examples into memory for a job (train --input-mode memory,
// --valid, eval, predict) and logs what was read: examples, files, CTR, and
// the records skipped or dropped (counted, never silent).
#pragma once

#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/job/data_options.h"
#include "ctrain/train/dataset.h"

namespace ctrain::job {

// `what` is the flag the paths came from without dashes ("train", "valid",
// "input"): errors of --valid and --input carry it as context; the log lines
// start with it. `model_fixed`: feature_size is the trained model's, so an id
// beyond it says so. `stats_out` (optional) receives the load statistics.
Status LoadExamples(const std::vector<std::string>& paths, DataOptions& data, int64_t feature_size,
                    train::Dataset* out, const char* what, train::LoadStats* stats_out = nullptr,
                    bool model_fixed = false);

// The absolute path of a --feature-map (as recorded in checkpoints); "" stays "".
std::string AbsolutePath(const std::string& path);

}  // namespace ctrain::job
