// The user's own training script in the trainer role of `ctrain launch` (docs/launch.md#entry-points):
// a PyTorch or TensorFlow job fed by ctrain's data service, or any program, started the way the
// SageMaker training toolkit (PyPI sagemaker-training 5.x, entry_point.run) starts a script-mode job.
//
// Where the script comes from:
//   - `ctrain launch --entry-point SCRIPT [ARGS...]` (every argument after SCRIPT is the script's),
//     or
//   - the hyperparameter sagemaker_program (what a framework estimator's entry_point sends), found
//     in the code directory: sagemaker_submit_directory when it is a directory here (local mode
//     sends "/opt/ml/code"; "file://DIR" is DIR), else <sm_root>/code (where the toolkit extracts
//     an s3:// source_dir; ctrain launch downloads nothing: the image must hold the code there).
// How it runs: a .py file with `python3` (found on PATH, or --python), a .sh file with /bin/sh,
// anything else as an executable; in the code directory (sagemaker_program) or the launcher's own
// (--entry-point); with ARGS, then the user hyperparameters as the toolkit's command-line arguments
// (mapping.to_cmd_args: sorted keys, "--key value", "-k value" for one-letter keys, Python's str()
// of each decoded value); with the launcher's environment plus ScriptEnvironment's variables.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/launch.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

struct EntryPoint {
  std::vector<std::string> argv;  // interpreter (resolved), script, ARGS, the hyperparameters' arguments
  std::string dir;                // the working directory ("" = the launcher's)
  std::string name;               // the script's file name: the role's name in the log and failure
  std::string user_entry_point;   // SM_USER_ENTRY_POINT: sagemaker_program, or SCRIPT as given
  std::string module_dir;         // SM_MODULE_DIR: sagemaker_submit_directory (or the code dir); SCRIPT's dir
  std::vector<std::string> user_args;  // the hyperparameters' arguments (SM_USER_ARGS)
};

// The entry point of this job, or none (nullopt-like: argv empty) for ctrain's own trainer.
// Errors: InvalidArgument for --entry-point beside sagemaker_program, or with a parameter-server
// job; NotFound naming the script, the code directory or the interpreter that is missing.
StatusOr<EntryPoint> ResolveEntryPoint(const Contract& c, const MappedHyperparameters& hp, const LaunchOptions& o);

// What the script's role is told about the job:
//   - the training toolkit's variables (Environment().to_env_vars(), same names and values; a
//     value that is not a string is JSON with sorted keys, no spaces, ASCII only): SM_HOSTS,
//     SM_CURRENT_HOST, SM_CURRENT_INSTANCE_TYPE, SM_CURRENT_INSTANCE_GROUP,
//     SM_CURRENT_INSTANCE_GROUP_HOSTS, SM_INSTANCE_GROUPS, SM_IS_HETERO, SM_NETWORK_INTERFACE_NAME,
//     SM_HPS, SM_HP_<KEY>, SM_USER_ARGS, SM_USER_ENTRY_POINT, SM_MODULE_DIR, SM_CHANNELS,
//     SM_CHANNEL_<NAME>, SM_MODEL_DIR, SM_INPUT_DIR, SM_INPUT_CONFIG_DIR, SM_OUTPUT_DIR,
//     SM_OUTPUT_DATA_DIR, SM_OUTPUT_INTERMEDIATE_DIR, SM_RESOURCE_CONFIG, SM_INPUT_DATA_CONFIG,
//     SM_NUM_CPUS, SM_NUM_GPUS, SM_LOG_LEVEL (not SM_TRAINING_ENV, SM_FRAMEWORK_PARAMS and the
//     toolkit's other derived ones);
//   - ctrain's: CTRAIN_TRAINING_JOB_NAME (the job identity the data service checks), and in a
//     heterogeneous job CTRAIN_DATA_SERVICE (the dispatcher, host:port) and
//     CTRAIN_DATA_SERVICE_TRAIN (the train channel's path on the data hosts, for --train or
//     DataService.pipeline(files)); CTRAIN_SERVICE_TOKEN is inherited when set.
// `dispatcher` and `train_path` are "" in a homogeneous job.
std::vector<std::pair<std::string, std::string>> ScriptEnvironment(const Contract& c, const MappedHyperparameters& hp,
                                                                   const EntryPoint& e, const std::string& training_job,
                                                                   const std::string& dispatcher,
                                                                   const std::string& train_path);

// Python's str() of a decoded hyperparameter value, as the toolkit puts it on a command line:
// "adam", 3, 0.001, True, [400, 400], ['a', 'b']; an object as "k=v,k2=v2" (sorted).
std::string PythonArgText(const nlohmann::json& v);

// `name` found on PATH (a name holding '/' is returned as it is). Errors: NotFound.
StatusOr<std::string> FindOnPath(const std::string& name);

}  // namespace ctrain::launch
