// SageMaker hyperparameters -> `ctrain train` flags (docs/launch.md#hyperparameters).
//
// Each key names the `ctrain train` flag of the same name, with hyphens or
// underscores ("learning_rate" and "learning-rate" are --learning-rate); the
// value (a string, as SageMaker passes them) becomes "--name=value".
// Keys the launcher reads itself:
//   data_group   the instance group whose hosts run the data service (heterogeneous cluster)
// Keys starting with "sagemaker_" (the SDK's own, e.g. sagemaker_region) are skipped and counted.
// Errors (InvalidArgument, naming the key and the file):
//   - a key that is no `ctrain train` flag ("unknown hyperparameter \"lerning_rate\"
//     (no ctrain train flag --lerning-rate; did you mean learning_rate?)");
//   - a key the launcher sets from the contract (train, valid, model_dir, metrics_json,
//     monitor_dir, data_service, ...): the message says where that value comes from.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

struct MappedHyperparameters {
  std::vector<std::string> train_args;  // "--learning-rate=0.001", ...
  std::string data_group;               // "" = homogeneous
  int64_t skipped_sagemaker_keys = 0;
  int32_t epochs = 1;                   // the "epochs" value when given (Pipe channels need it), else 1
};

// `train_flags`: the long flag names of `ctrain train` without "--" (every spelling).
// `source` names the file in errors.
StatusOr<MappedHyperparameters> MapHyperparameters(const Hyperparameters& hps, const std::set<std::string>& train_flags,
                                                   const std::string& source);

}  // namespace ctrain::launch
