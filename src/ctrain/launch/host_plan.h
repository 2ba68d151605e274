// How `ctrain launch` plans this host's part of a job, and the helpers its
// roles share (launch/launch.cc runs the plan, `--print-environment` prints
// it). Internal to launch/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/launch.h"
#include "ctrain/launch/ps_layout.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

// "launch: <line>" on stderr.
void Say(const std::string& line);
// A host's address: its --host-address, else its name.
std::string Address(const LaunchOptions& o, const std::string& host);
// `argv` as one shell line: arguments with characters the shell reads are single-quoted.
std::string ShellLine(const std::vector<std::string>& argv);
// role.json beside a role's monitoring files: what `ctrain report` groups by.
Status WriteRoleJson(const std::string& dir, const Contract& c, const std::string& role, int32_t ranks);
// A host that reads its channels itself (homogeneous cluster): the `ctrain train` input flags of
// every channel of this host, for `ranks_per_host` ranks on it (distribution mpi
// processes_per_host). Pipe channels: `train` with one rank per host; train_0 .. train_{N-1}
// (one per local rank, read as pipe:DIR/train_{local_rank}) with N ranks. Errors:
// InvalidArgument naming the channel.
StatusOr<std::vector<std::string>> LocalInputArgs(const Contract& c, int32_t ranks_per_host = 1);
// The trainer host of a heterogeneous job: its input flags; *notes gets what it says about them.
StatusOr<std::vector<std::string>> TrainerInputArgs(const Contract& c, const EnvLookup& getenv,
                                                    std::vector<std::string>* notes);
// A data host's channel checks. Errors: InvalidArgument / NotFound naming the channel.
Status CheckDataHostChannels(const Contract& c, const std::string& data_group);
// Copies the newest checkpoint of `from` into `to`. Errors: IOError naming the files.
Status CopyCheckpointTo(const std::string& from, const std::string& to);
// Processes of this machine named like an Open MPI daemon (orted: Open MPI 4, prted: 5).
int CountMpiDaemons();
// The OpenMP threads of each rank when a host runs several and the hyperparameters do not say
// (0: the trainer's own default).
int32_t RankThreads(const MappedHyperparameters& hp);

// This host's part of the job (docs/launch.md#roles).
struct HostPlan {
  enum Role { kTrainer, kMpiPeer, kData, kPs } role = kTrainer;
  std::vector<std::string> train_hosts;  // the hosts the trainer spans (mpirun over them when several)
  std::string leader;                    // kMpiPeer: the host that runs mpirun
  const InstanceGroup* data = nullptr;   // heterogeneous: the data group (points into the contract)
  std::string dispatcher;                // heterogeneous: the address the trainers dial
  bool runs_dispatcher = false;          // kData: the data group's first host
  std::optional<PsLayout> ps;            // kPs: the parameter-server layout
};

const char* RoleName(HostPlan::Role r);

// Errors: InvalidArgument for a data_group that names no group or holds every host, a
// parameter-server job with a data_group or more than one process per host, TF_CONFIG's errors
// (launch/ps_layout.h).
StatusOr<HostPlan> PlanHost(const Contract& c, const MappedHyperparameters& hp, const LaunchOptions& o);

}  // namespace ctrain::launch
