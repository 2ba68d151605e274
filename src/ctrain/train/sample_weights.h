// Sample weights for evaluation, read from an auxiliary file beside the data:
// one weight per example, one per line, in the examples' order (XGBoost's
// `<data>.weight` file). Weights are finite and >= 0; they enter every metric
// as sklearn's sample_weight (train/ctr_metrics.h).
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::train {

// Errors: the file's (NotFound naming it); InvalidArgument "<file>:<line>:
// weight 'x' is not a finite number >= 0" (a blank line too: every example
// has its weight).
StatusOr<std::vector<float>> ReadSampleWeights(const std::string& path);

// ReadSampleWeights, then the count: InvalidArgument "<file>: 4999 weights
// (lines) for 5000 examples of <data>; one weight per example, in order".
StatusOr<std::vector<float>> ReadSampleWeightsFor(const std::string& path, int64_t examples, const std::string& data);

}  // namespace ctrain::train
