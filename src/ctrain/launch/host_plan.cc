#include "ctrain/launch/host_plan.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/io/file.h"
#include "ctrain/train/threads.h"

namespace ctrain::launch {
namespace fs = std::filesystem;

void Say(const std::string& line) {
  Logf("launch: %s\n", line.c_str());
  std::fflush(stderr);
}

std::string Address(const LaunchOptions& o, const std::string& host) {
  auto it = o.host_addresses.find(host);
  return it != o.host_addresses.end() ? it->second : host;
}

// `argv` as one shell line: arguments with characters the shell reads are single-quoted.
std::string ShellLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_=./:,+@%") == std::string::npos;
    std::string q = a;
    if (!plain) {
      q = "'";
      for (char ch : a) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      q += "'";
    }
    line += (line.empty() ? "" : " ") + q;
  }
  return line;
}


// role.json beside a role's monitoring files: what `ctrain report` groups by.
Status WriteRoleJson(const std::string& dir, const Contract& c, const std::string& role, int32_t ranks) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IOError(dir + ": cannot create: " + ec.message());
  const InstanceGroup* g = c.resources.GroupOf(c.resources.current_host);
  nlohmann::json j{{"host", c.resources.current_host},
                   {"role", role},
                   {"instance_group", g ? g->name : ""},
                   {"instance_type", g ? g->instance_type : c.resources.current_instance_type},
                   {"group_hosts", g ? static_cast<int64_t>(g->hosts.size()) : 1},
                   {"ranks", ranks}};
  return io::WriteStringToFileAtomic(dir + "/role.json", j.dump(2) + "\n");
}

namespace {

// The `ctrain train` flag a channel feeds: train -> --train, validation (or valid) -> --valid;
// any other channel is an error naming it.
// "train_K" (K a whole number): local rank K's own Pipe channel under distribution mpi
// processes_per_host > 1, read as pipe:DIR/train_{local_rank}; -1 for any other name.
int32_t LocalRankChannel(const std::string& name) {
  if (!name.starts_with("train_") || name.size() == 6 || name.size() > 10) return -1;
  int32_t k = 0;
  for (char ch : std::string_view(name).substr(6)) {
    if (ch < '0' || ch > '9') return -1;
    k = k * 10 + (ch - '0');
  }
  return k;
}

StatusOr<std::string> ChannelFlag(const Channel& ch) {
  if (ch.name == "train") return std::string("--train");
  if (ch.name == "validation" || ch.name == "valid") return std::string("--valid");
  return InvalidArgumentError(
      "inputdataconfig.json: channel \"" + ch.name + "\" has no ctrain input (channels: train, validation" +
      (LocalRankChannel(ch.name) >= 0 ? "; train_0 .. train_{N-1} are the local ranks' Pipe channels of distribution "
                                        "mpi processes_per_host N, read by hosts that read their channels themselves)"
                                      : ")"));
}

Status RefusePipeValidation(const Channel& ch) {
  return InvalidArgumentError("inputdataconfig.json: channel \"" + ch.name +
                              "\" is in Pipe mode; the validation set is read into memory: use File or FastFile");
}

}  // namespace

// A host that reads its channels itself (homogeneous cluster): every channel of this host. With
// processes_per_host N > 1 a FIFO cannot be shared by the host's ranks, so a Pipe train channel
// is one channel per local rank, train_0 .. train_{N-1} (as SageMaker's Pipe mode with Horovod
// asks), given to the trainer as pipe:DIR/train_{local_rank}.
StatusOr<std::vector<std::string>> LocalInputArgs(const Contract& c, int32_t ranks_per_host) {
  std::vector<std::string> args;
  bool have_train = false;
  const std::string per_host = std::to_string(ranks_per_host);
  const std::string per_rank_names = "train_0 .. train_" + std::to_string(std::max(ranks_per_host, 2) - 1);
  std::vector<const Channel*> per_rank(std::max(ranks_per_host, 1), nullptr);
  bool any_per_rank = false;
  for (const Channel& ch : c.channels) {
    if (const int32_t k = LocalRankChannel(ch.name); k >= 0) {
      const std::string what = "inputdataconfig.json: channel \"" + ch.name + "\" is local rank " +
                               std::to_string(k) + "'s Pipe channel (" + per_rank_names +
                               " for distribution mpi processes_per_host " +
                               (ranks_per_host > 1 ? per_host : std::string("N")) + ")";
      if (ranks_per_host <= 1)
        return InvalidArgumentError(what + ", but processes_per_host is 1: name the channel train");
      if (k >= ranks_per_host)
        return InvalidArgumentError(what + ", but a host runs ranks 0 .. " + std::to_string(ranks_per_host - 1));
      if (ch.mode != InputMode::kPipe)
        return InvalidArgumentError(what + ", but it is in " + (ch.mode == InputMode::kFile ? "File" : "FastFile") +
                                    " mode: in File or FastFile mode give one train channel, which the ranks share "
                                    "out by rank");
      per_rank[static_cast<size_t>(k)] = &ch;
      any_per_rank = true;
      continue;
    }
    CTRAIN_ASSIGN_OR_RETURN(std::string flag, ChannelFlag(ch));
    if (ch.mode == InputMode::kPipe) {
      if (flag == "--valid") return RefusePipeValidation(ch);
      if (ranks_per_host > 1)
        return InvalidArgumentError(
            "distribution mpi processes_per_host " + per_host + ": channel \"" + ch.name + "\" is in Pipe mode, and "
            "SageMaker gives each host one FIFO per channel and epoch, which " + per_host + " ranks cannot share: give "
            "one Pipe channel per local rank (" + per_rank_names + "; each rank reads train_{local_rank}), use File "
            "or FastFile mode, or processes_per_host 1");
      args.push_back(flag);
      args.push_back("pipe:" + ch.dir);
    } else {
      CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, ChannelFiles(ch));
      args.push_back(flag);
      args.insert(args.end(), files.begin(), files.end());
    }
    have_train |= flag == "--train";
  }
  if (any_per_rank) {
    if (have_train)
      return InvalidArgumentError("inputdataconfig.json: channels \"train\" and " + per_rank_names +
                                  " both hold training data: give one or the other");
    for (size_t k = 0; k < per_rank.size(); ++k)
      if (per_rank[k] == nullptr)
        return InvalidArgumentError("inputdataconfig.json: no channel \"train_" + std::to_string(k) +
                                    "\": with distribution mpi processes_per_host " + per_host +
                                    " every local rank reads its own Pipe channel (" + per_rank_names + ")");
    args.push_back("--train");
    args.push_back("pipe:" + fs::path(per_rank[0]->dir).parent_path().string() + "/train_{local_rank}");
    have_train = true;
  }
  if (!have_train) return InvalidArgumentError("inputdataconfig.json: no \"train\" channel (nothing to train on)");
  return args;
}

namespace {
const Channel* FindChannel(const Contract& c, std::initializer_list<const char*> names) {
  for (const Channel& ch : c.channels)
    for (const char* n : names)
      if (ch.name == n) return &ch;
  return nullptr;
}
}  // namespace

// The trainer host of a heterogeneous job. The data hosts read the training files: the
// train channel is usually given to the data group only (InstanceGroupNames), so this host
// may not list it, or list it without a local directory. --train is the channel's path,
// the same on every SageMaker host (SM_CHANNEL_TRAIN where set), expanded by the dispatcher
// on its host and never looked at here. The validation set is read by the trainer itself
// (into memory): a validation channel must be on this host; without one there is no
// validation, and the launcher says so. *notes gets those lines.
StatusOr<std::vector<std::string>> TrainerInputArgs(const Contract& c, const EnvLookup& getenv,
                                                    std::vector<std::string>* notes) {
  for (const Channel& ch : c.channels) CTRAIN_RETURN_IF_ERROR(ChannelFlag(ch).status());
  std::vector<std::string> args{"--train"};
  if (const Channel* train = FindChannel(c, {"train"})) {
    if (train->mode == InputMode::kPipe)
      return InvalidArgumentError("inputdataconfig.json: channel \"train\" is in Pipe mode, but with data_group the "
                                  "data hosts read the files: use File or FastFile");
    args.push_back(train->dir);
  } else {
    args.push_back(ChannelDir(c.root, "train", getenv));
    notes->push_back("channel \"train\" is not given to this host (instance group " + c.resources.current_group +
                     "): the data hosts read it; the dispatcher expands " + args.back() + " on its host");
  }
  if (const Channel* valid = FindChannel(c, {"validation", "valid"})) {
    if (valid->mode == InputMode::kPipe) return RefusePipeValidation(*valid);
    StatusOr<std::vector<std::string>> files = ChannelFiles(*valid);
    if (!files.ok())
      return Status(files.status().code(), std::string(files.status().message()) +
                                               " (the trainer reads the validation set itself: the channel must be "
                                               "on the trainer's hosts)");
    args.push_back("--valid");
    args.insert(args.end(), files->begin(), files->end());
  } else {
    notes->push_back("no validation channel on this host: training without validation (the trainer reads it "
                     "itself: give the channel to instance group " + c.resources.current_group + " to validate)");
  }
  return args;
}

// A data host of a heterogeneous job: its workers read the train channel's files, so the
// channel must be here, in File or FastFile mode, and hold files. A validation channel
// given to data groups only (InstanceGroupNames) never reaches the trainer: refused.
Status CheckDataHostChannels(const Contract& c, const std::string& data_group) {
  for (const Channel& ch : c.channels) CTRAIN_RETURN_IF_ERROR(ChannelFlag(ch).status());
  const Channel* train = FindChannel(c, {"train"});
  if (train == nullptr)
    return InvalidArgumentError("inputdataconfig.json: no \"train\" channel on data host " + c.resources.current_host +
                                " (instance group " + data_group + "): the data hosts read the training files: give "
                                "the channel to instance group " + data_group + " (InstanceGroupNames)");
  if (train->mode == InputMode::kPipe)
    return InvalidArgumentError("inputdataconfig.json: channel \"train\" is in Pipe mode, but with data_group the "
                                "data hosts read the files: use File or FastFile");
  CTRAIN_RETURN_IF_ERROR(ChannelFiles(*train).status());
  if (const Channel* valid = FindChannel(c, {"validation", "valid"}); valid && !valid->instance_group_names.empty()) {
    bool reaches_a_trainer = false;
    for (const std::string& g : valid->instance_group_names) reaches_a_trainer |= g != data_group;
    if (!reaches_a_trainer)
      return InvalidArgumentError("inputdataconfig.json: channel \"" + valid->name + "\" is given to instance group " +
                                  data_group + " only (InstanceGroupNames), but the trainer reads the validation "
                                  "set itself: give it to the trainer's instance group");
  }
  return Status::OK();
}

Status CopyCheckpointTo(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return IOError(to + ": cannot create: " + ec.message());
  int copied = 0;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    const std::string name = e.path().filename().string();
    const bool ckpt = name == "checkpoint" || (name.rfind("ckpt-", 0) == 0 && name.size() > 4 &&
                                               name.compare(name.size() - 4, 4, ".bin") == 0);
    if (!ckpt) continue;
    fs::copy_file(e.path(), fs::path(to) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return IOError(e.path().string() + " -> " + to + ": " + ec.message());
    ++copied;
  }
  if (ec) return IOError(from + ": " + ec.message());
  if (copied == 0) return NotFoundError(from + ": no checkpoint to copy to " + to);
  return Status::OK();
}

// Processes of this machine named like an Open MPI daemon (orted: Open MPI 4, prted: 5).
int CountMpiDaemons() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid[0] < '0' || pid[0] > '9') continue;
    std::ifstream in(e.path() / "comm");
    std::string comm;
    if (std::getline(in, comm) && (comm == "orted" || comm == "prted")) ++n;
  }
  return n;
}

// The OpenMP threads of each rank when a host runs several and the hyperparameters do not say:
// the host's CPUs shared out (train/threads.h AvailableCpus; the training hosts are one instance
// type). 0: the trainer's own default (one rank per host, or set by the user).
int32_t RankThreads(const MappedHyperparameters& hp) {
  if (hp.processes_per_host <= 1 || hp.values.contains("intra_op_parallelism_threads")) return 0;
  return std::max(1, train::AvailableCpus() / hp.processes_per_host);
}


const char* RoleName(HostPlan::Role r) {
  return r == HostPlan::kTrainer ? "trainer" : r == HostPlan::kMpiPeer ? "mpi-peer" : r == HostPlan::kPs ? "ps" : "data";
}

// Errors: InvalidArgument for a data_group that names no group or holds every host.
StatusOr<HostPlan> PlanHost(const Contract& c, const MappedHyperparameters& hp, const LaunchOptions& o) {
  const ResourceConfig& rc = c.resources;
  HostPlan p;
  // A parameter-server job: TF_CONFIG's layout when it is set, else SageMaker's (every host a server and a worker).
  CTRAIN_ASSIGN_OR_RETURN(p.ps, ReadTfConfig(o.getenv));
  if (p.ps.has_value() || hp.parameter_server) {
    const std::string what = p.ps.has_value() ? "TF_CONFIG (a parameter-server cluster)"
                                              : "distribution parameter_server";
    if (!hp.data_group.empty())
      return InvalidArgumentError(what + " with data_group \"" + hp.data_group +
                                  "\": parameter-server workers read their channels themselves, not through the "
                                  "data service; leave one of them out");
    if (hp.processes_per_host > 1)
      return InvalidArgumentError(what + " with distribution mpi processes_per_host " +
                                  std::to_string(hp.processes_per_host) + ": one worker per host; leave one out");
    // The layout gives every worker these: the same keys among the hyperparameters would contradict it.
    for (const char* key : {"ps", "worker_index", "num_workers", "ps_export_dir"})
      if (hp.values.contains(key))
        return InvalidArgumentError(std::string("hyperparameter \"") + key + "\" is set by ctrain launch from " + what +
                                    "; leave it out");
    if (!p.ps.has_value() && (o.ps_port < 1 || o.ps_port > 65535))
      return InvalidArgumentError("--ps-port " + std::to_string(o.ps_port) + " is not in [1, 65535]");
    if (!p.ps.has_value()) {
      std::vector<std::string> addresses;
      for (const std::string& h : rc.hosts) addresses.push_back(Address(o, h));
      p.ps = SageMakerPsLayout(rc.hosts, addresses, rc.current_host, o.ps_port);
    }
    p.role = HostPlan::kPs;
    p.train_hosts = rc.hosts;
    return p;
  }
  if (hp.data_group.empty()) {
    p.train_hosts = rc.hosts;
  } else {
    p.data = rc.FindGroup(hp.data_group);
    if (p.data == nullptr) {
      std::string names;
      for (const auto& g : rc.groups) names += (names.empty() ? "" : ", ") + g.name;
      return InvalidArgumentError("hyperparameter data_group \"" + hp.data_group +
                                  "\" names no instance group of resourceconfig.json (groups: " + names + ")");
    }
    for (const std::string& h : rc.hosts)
      if (std::find(p.data->hosts.begin(), p.data->hosts.end(), h) == p.data->hosts.end()) p.train_hosts.push_back(h);
    if (p.train_hosts.empty())
      return InvalidArgumentError("hyperparameter data_group \"" + hp.data_group +
                                  "\" holds every host: no host is left to train");
    p.dispatcher = Address(o, p.data->hosts[0]) + ":" + std::to_string(o.dispatcher_port);
    if (rc.current_group == hp.data_group) {
      p.role = HostPlan::kData;
      p.runs_dispatcher = rc.current_host == p.data->hosts[0];
      return p;
    }
  }
  if (rc.current_host != p.train_hosts[0]) {
    p.role = HostPlan::kMpiPeer;
    p.leader = p.train_hosts[0];
  }
  return p;
}

}  // namespace ctrain::launch
