// Autotune: picks the fastest thread layout for this machine and model by
// measuring it. Each candidate (intra_op_threads x towers, and hogwild
// replicas) with replicas * intra_op_threads <= cores gets a scratch Trainer
// (fresh parameters, no model_dir) that runs a few steps on the real training
// data; the one with the highest examples/s wins. The real run then starts
// from scratch (or its checkpoint) with that layout, so autotuning never
// changes what is trained, only how fast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/train_config.h"

namespace ctrain::train {

struct AutotuneRow {
  ParallelOptions parallel;
  double examples_per_sec = 0;
  std::string error;  // non-empty if the candidate failed
};

// The candidates for `cores` CPUs: towers/hogwild in {1, 2, 4, ...} and intra
// threads in {1, 2, 4, ..., cores / replicas} (plus cores / replicas itself).
std::vector<ParallelOptions> AutotuneCandidates(int32_t cores, bool affinity);

// Measures every candidate for `steps` steps (after one warm-up step) and
// returns the rows in candidate order; *best is the fastest.
// Errors: the first candidate's error if every candidate fails.
StatusOr<std::vector<AutotuneRow>> Autotune(const TrainOptions& base, const Dataset& train, int64_t steps,
                                            ParallelOptions* best);

// A fixed-width table of the rows (one line per candidate, the best marked '*').
std::string FormatAutotuneTable(const std::vector<AutotuneRow>& rows, const ParallelOptions& best);

}  // namespace ctrain::train
