// The parameter-server layout of a launch (docs/launch.md#parameter-servers):
// which parameter servers the job has, how many workers, and which of them
// this host runs.
//
// Two sources, as the platforms describe a PS job:
//   TF_CONFIG (TensorFlow's cluster spec; Kubeflow's TFJob and other operators
//   set it in every replica's environment):
//     {"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", ...], "ps": ["h2:2222", ...]},
//      "task": {"type": "worker", "index": 0}}
//   "master" is read as "chief" (at most one); this process runs its task alone:
//     ps I      `ctrain ps --shard I --num-shards len(ps)`, listening on its own entry's port
//     chief     worker 0;  worker J: worker J + len(chief)   (num_workers = len(chief) + len(worker))
//   an "evaluator" task, a cluster without "ps" or without any worker is refused by name.
//   resourceconfig.json (SageMaker's distribution={"parameter_server": {"enabled": True}},
//   as SageMaker's TensorFlow containers lay it out): every host runs one parameter server
//   (shard = its index in `hosts`, at <its address>:ps_port) and one worker (worker index =
//   the same index); the first host's worker is the chief.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

struct PsLayout {
  std::string source;                // "TF_CONFIG" or "resourceconfig.json"
  std::vector<std::string> servers;  // HOST:PORT, shard order
  int32_t num_workers = 0;
  // This host's (or, with TF_CONFIG, this task's) roles.
  int32_t shard = -1;          // runs parameter server `shard` (-1: none)
  std::string listen_host;     // its host as the cluster names it (bound after resolving)
  int32_t listen_port = 0;
  int32_t worker_index = -1;   // runs this worker (-1: none); 0 is the chief
};

// TF_CONFIG's layout (nullopt when TF_CONFIG is unset or empty). Errors: InvalidArgument naming
// TF_CONFIG and the problem: unreadable JSON, no "cluster" or "task", a task type it does not
// know or an evaluator, an index outside its list, more than one chief, no ps, no worker, an
// address that is not HOST:PORT.
StatusOr<std::optional<PsLayout>> ReadTfConfig(const EnvLookup& getenv);

// SageMaker's layout for `current_host` of `hosts` (their addresses in `addresses`, same order),
// servers on `port`. REQUIRES: current_host is one of hosts.
PsLayout SageMakerPsLayout(const std::vector<std::string>& hosts, const std::vector<std::string>& addresses,
                           const std::string& current_host, int32_t port);

}  // namespace ctrain::launch
