// The SageMaker training-container contract (the files and variables SageMaker
// gives a bring-your-own container), read by `ctrain launch` (docs/launch.md):
//
//   <root>/input/config/resourceconfig.json   this host, every host, the instance groups
//   <root>/input/config/hyperparameters.json  {"name": "value", ...}: every value a JSON string
//   <root>/input/config/inputdataconfig.json  {"channel": {"TrainingInputMode": "File"|"Pipe"|"FastFile", ...}}
//   <root>/input/data/<channel>/              File / FastFile channel contents
//   <root>/input/data/<channel>_<epoch>       Pipe channel FIFOs (one per epoch)
//   <root>/model/                             the final model (uploaded at the end)
//   <root>/output/data/                       other outputs (metrics, monitoring)
//   <root>/output/failure                     the reason of a failed job (one line)
// root is /opt/ml in a container (`--sm-root` elsewhere).
//
// resourceconfig.json, as SageMaker writes it (heterogeneous clusters add the groups):
//   {"current_host": "algo-1", "hosts": ["algo-1", "algo-2"],
//    "current_group_name": "train", "current_instance_type": "ml.g5.xlarge",
//    "instance_groups": [{"instance_group_name": "train", "instance_type": "ml.g5.xlarge",
//                         "hosts": ["algo-1"]}, ...]}
// SageMaker local mode spells the current group "current_instance_group"; both are read.
// Without "instance_groups" the hosts form one group ("homogeneousCluster", the
// name SageMaker uses) of current_instance_type.
//
// SM_* environment variables (SageMaker's training toolkit sets them; a BYO
// container may not have them): where present, SM_MODEL_DIR, SM_OUTPUT_DATA_DIR
// and SM_CHANNEL_<NAME> replace the directories above, and SM_CURRENT_HOST /
// SM_HOSTS must agree with resourceconfig.json (or stand in for it when it is absent).
//
// Errors name the file and the key: InvalidArgument for malformed JSON (with its
// byte offset), a missing or mistyped key, a hyperparameter value that is not a
// string, an unknown TrainingInputMode, a current host that is not in `hosts`;
// NotFound for a missing resourceconfig.json without SM_CURRENT_HOST.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::launch {

struct InstanceGroup {
  std::string name;
  std::string instance_type;
  std::vector<std::string> hosts;
};

struct ResourceConfig {
  std::string current_host;
  std::vector<std::string> hosts;
  std::string current_group;          // current_group_name or current_instance_group
  std::string current_instance_type;
  std::vector<InstanceGroup> groups;  // never empty after parsing
  const InstanceGroup* FindGroup(const std::string& name) const;
  const InstanceGroup* GroupOf(const std::string& host) const;
};

enum class InputMode { kFile, kPipe, kFastFile };
const char* InputModeName(InputMode m);

struct Channel {
  std::string name;
  InputMode mode = InputMode::kFile;
  std::string dir;  // <root>/input/data/<name> (or SM_CHANNEL_<NAME>); Pipe: the FIFO prefix
  // "InstanceGroupNames" where the channel config has it (a heterogeneous job's channel given
  // to some instance groups only; the other groups' hosts do not see the channel at all);
  // empty = every group.
  std::vector<std::string> instance_group_names;
};

// Hyperparameters in file order (SageMaker writes a JSON object; its order is kept).
using Hyperparameters = std::vector<std::pair<std::string, std::string>>;

struct Contract {
  std::string root;
  ResourceConfig resources;
  Hyperparameters hyperparameters;
  std::vector<Channel> channels;
  std::string model_dir;        // <root>/model
  std::string output_data_dir;  // <root>/output/data
  std::string failure_path;     // <root>/output/failure
};

// `path` only names the source in errors.
StatusOr<ResourceConfig> ParseResourceConfig(std::string_view json, const std::string& path);
StatusOr<Hyperparameters> ParseHyperparameters(std::string_view json, const std::string& path);
// `data_dir`: <root>/input/data (each channel's dir is data_dir/<name>).
StatusOr<std::vector<Channel>> ParseInputDataConfig(std::string_view json, const std::string& path,
                                                    const std::string& data_dir);

using EnvLookup = std::function<const char*(const char*)>;

// Where channel `name` is read on a host with this root: SM_CHANNEL_<NAME> (upper case,
// '-' as '_') where set, else <root>/input/data/<name>. Also for a channel this host's
// inputdataconfig.json does not list (a heterogeneous job's trainer host names the data
// hosts' channel directory by it: the same path on every SageMaker host).
std::string ChannelDir(const std::string& root, const std::string& name, const EnvLookup& getenv);

// Reads the contract under `root`; `getenv` looks up SM_* variables (null = none set).
// hyperparameters.json and inputdataconfig.json may be absent (none given).
StatusOr<Contract> LoadContract(const std::string& root, const EnvLookup& getenv);

}  // namespace ctrain::launch
