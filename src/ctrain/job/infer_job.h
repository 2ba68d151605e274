// The eval and predict jobs: load a trained model from its model dir (the
// latest checkpoint, train/checkpoint.h), read the input as the training run
// read its files (the checkpoint's recorded data options; a flag that
// contradicts the model is an error naming it), refuse input encoded
// differently from the training data, then report AUC/logloss (eval) or write
// one click probability per input record (predict). What `ctrain eval`,
// `ctrain predict` and the Python package run.
#pragma once

#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/job/data_options.h"
#include "ctrain/job/explicit_options.h"
#include "ctrain/train/trainer.h"

namespace ctrain::job {

struct InferJobOptions {
  std::vector<std::string> input;  // files, globs or directories
  std::string model_dir;
  std::string output;                         // predict: one line per input record ("-" = stdout)
  std::string metrics_json;                   // eval: also write the metrics here ("" = no)
  std::string output_columns = "prediction";  // predict: prediction, label, index (tab-separated)
  DataOptions data;                           // field_size/feature_size: the model's unless given
  train::ParallelOptions parallel;            // only intra_op_parallelism_threads applies
  // Options set explicitly: field_size and feature_size must then agree with
  // the model; id_base, feature_map and format are otherwise the checkpoint's
  // (or detected).
  ExplicitOptions given;
};

// Both update `options` in place with what the run used (the model's
// field_size and feature_size, the checkpoint's id_base and feature_map, the
// expanded input list).

// eval: prints "auc A\nlogloss L\nexamples N" on stdout; `result` (optional)
// receives the metrics. Errors: the model dir's and the input's, located.
Status RunEval(InferJobOptions& options, train::EvalResult* result = nullptr);

// predict: writes options.output atomically; a record dropped by
// --skip-corrupt-records gets nan. Errors: as RunEval, and the output's.
Status RunPredict(InferJobOptions& options);

}  // namespace ctrain::job
