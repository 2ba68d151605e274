// SageMaker hyperparameters -> `ctrain train` flags (docs/launch.md#hyperparameters).
//
// Source: /opt/ml/input/config/hyperparameters.json, a JSON object whose values are all
// strings (the CreateTrainingJob API's HyperParameters: map<string, string>). What is in
// those strings depends on who wrote them (read in the SageMaker Python SDK 2.257.7 and
// sagemaker-training 5.1.4; tests/python/test_sagemaker_hyperparameters.py runs both):
//   - the SageMaker Python SDK's framework estimators (Framework.hyperparameters(), and
//     Estimator.set_hyperparameters with a source_dir) JSON-encode every value
//     (EstimatorBase._json_encode_hyperparameters: json.dumps(v) per value):
//       "adam" -> "\"adam\"", 3 -> "3", 0.001 -> "0.001", True -> "true", [400, 400] -> "[400, 400]";
//   - a plain Estimator (bring-your-own image, no source_dir) sends str(v):
//       "adam" -> "adam", True -> "True", [400, 400] -> "[400, 400]";
//   - a tuning job adds "_tuning_objective_metric" and sends the tuned values as text.
//
// Decoding: the rule of the SageMaker training toolkit (sagemaker_training.environment.
// read_hyperparameters): each value is parsed as JSON; a value that is not a JSON text is
// kept as the raw string. Then the value becomes the option's type through the option schema
// (job/option_schema.h CoerceOptionValue): "\"adam\"" and "adam" -> "adam"; "3", "\"3\"" -> 3;
// "true", "True" -> true; "[400, 400]" and "400,400" -> [400, 400] for deep_layers; a list for
// a string-list option (ps) -> one flag per element. The flags given to `ctrain train` are
// the typed values' texts (job::OptionTexts): --optimizer=adam --epochs=3 --batch-norm=true
// --deep-layers=400,400 --ps=a --ps=b.
//
// Keys:
//   - each names a `ctrain train` option (a name or alias, hyphens or underscores:
//     "learning_rate" and "learning-rate" are --learning-rate);
//   - data_group (decoded the same way): the instance group whose hosts run the data service;
//   - platform keys are skipped, counted, and listed in `skipped_keys` (never refused):
//     every key starting with "sagemaker_" (the SDK's: sagemaker_program, sagemaker_region,
//     sagemaker_submit_directory, ...) or with "_" (the service's: _tuning_objective_metric),
//     and the toolkit's default_user_module_name (its SAGEMAKER_HYPERPARAMETERS list);
//     except the SDK's distribution keys (Framework._distribution_configuration), which are
//     read: sagemaker_mpi_enabled (mpirun over the training hosts, what the launcher runs for
//     more than one rank), sagemaker_mpi_num_of_processes_per_host (ranks per host: a whole
//     number >= 1, else refused naming the value) and sagemaker_mpi_custom_mpi_options (extra
//     mpirun arguments, split at whitespace as the training toolkit's MPI runner does),
//     sagemaker_parameter_server_enabled (a parameter-server job); any other
//     sagemaker_*_enabled that is true (smdistributed, torch_distributed, ...) is refused by name.
// Errors (InvalidArgument, naming the file and the key, and the value where it is the cause):
//   - a key that is no `ctrain train` option ("unknown hyperparameter \"lerning_rate\"
//     (no ctrain train flag --lerning-rate; did you mean learning_rate?)");
//   - a key the launcher sets from the contract (the schema's set_by_launch: train, valid,
//     model_dir, metrics_json, monitor_dir, data_service, config): the message says where
//     that value comes from;
//   - a JSON object, null, an empty value, a list for an option that takes one value, an empty
//     list or a list holding a list or an object; a value that is not of the option's type;
//   - the same option under two spellings; epochs that is not a whole number >= 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

struct MappedHyperparameters {
  std::vector<std::string> train_args;  // "--learning-rate=0.001", ...
  std::string data_group;               // "" = homogeneous
  int64_t skipped_platform_keys = 0;    // sagemaker_* and _* keys
  std::vector<std::string> skipped_keys;  // their names, in file order
  int32_t epochs = 1;                   // the "epochs" value when given (Pipe channels need it), else 1
  // distribution={"mpi": {...}}: ranks per training host (processes_per_host) and extra mpirun
  // arguments (custom_mpi_options, split at whitespace).
  int32_t processes_per_host = 1;
  std::vector<std::string> custom_mpi_options;
  // distribution={"parameter_server": {"enabled": True}}: one parameter server and one worker per
  // host (launch/ps_layout.h).
  bool parameter_server = false;
  // Every key (skipped ones too) with its decoded value, as a compact JSON object in file
  // order: what the training toolkit's read_hyperparameters() returns for the same file.
  std::string decoded_json;
  // The options, typed ({"optimizer": "adam", "deep_layers": [400, 400]}), in file order.
  nlohmann::ordered_json values;
  // A user's own script (launch/entry_point.h): sagemaker_program and sagemaker_submit_directory
  // (decoded; "" when absent). With a program (or --entry-point), the keys that are not the
  // platform's are the script's: kept in `user` (decoded, file order), never mapped to `ctrain
  // train` flags; data_group is read as well (and stays in `user`, as the toolkit passes it on).
  std::string program, submit_directory;
  bool user_script = false;
  nlohmann::ordered_json user = nlohmann::ordered_json::object();
};

// The toolkit's decoding of one value as compact JSON: the value itself when it is a JSON
// text ("[400, 400]" -> "[400,400]", "\"adam\"" -> "\"adam\""), else the raw string as a
// JSON string ("adam" -> "\"adam\"").
std::string DecodeHyperparameterValue(const std::string& value);

// The flag text of one value (the table above): a JSON string's contents, a number's text,
// "true"/"false"; anything else (a list, an object, null, a raw string) is returned unchanged.
std::string HyperparameterText(const std::string& value);

// `source` names the file in errors.
// `entry_point`: `ctrain launch --entry-point` was given (the keys are a user script's, as with
// sagemaker_program).
StatusOr<MappedHyperparameters> MapHyperparameters(const Hyperparameters& hps, const std::string& source,
                                                   bool entry_point = false);

}  // namespace ctrain::launch
