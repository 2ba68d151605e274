#include "ctrain/base/clock.h"
#include "ctrain/launch/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <thread>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/dataservice/admin.h"
#include "ctrain/io/file.h"
#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/supervisor.h"
#include "ctrain/launch/training_job_name.h"
#include "ctrain/service/auth.h"
#include "ctrain/service/server.h"
#include "ctrain/train/threads.h"

namespace ctrain::launch {
namespace fs = std::filesystem;
namespace {

constexpr auto kListenTimeout = std::chrono::seconds(120);

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


struct Role {
  std::string name;  // "trainer", "dispatcher", "data-worker"
  std::string monitor_dir;
};

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

// The `ctrain train` flag a channel feeds: train -> --train, validation (or valid) -> --valid;
// any other channel is an error naming it.
StatusOr<std::string> ChannelFlag(const Channel& ch) {
  if (ch.name == "train") return std::string("--train");
  if (ch.name == "validation" || ch.name == "valid") return std::string("--valid");
  return InvalidArgumentError("inputdataconfig.json: channel \"" + ch.name +
                              "\" has no ctrain input (channels: train, validation)");
}

Status RefusePipeValidation(const Channel& ch) {
  return InvalidArgumentError("inputdataconfig.json: channel \"" + ch.name +
                              "\" is in Pipe mode; the validation set is read into memory: use File or FastFile");
}

// A host that reads its channels itself (homogeneous cluster): every channel of this host.
StatusOr<std::vector<std::string>> LocalInputArgs(const Contract& c) {
  std::vector<std::string> args;
  bool have_train = false;
  for (const Channel& ch : c.channels) {
    CTRAIN_ASSIGN_OR_RETURN(std::string flag, ChannelFlag(ch));
    if (ch.mode == InputMode::kPipe) {
      if (flag == "--valid") return RefusePipeValidation(ch);
      args.push_back(flag);
      args.push_back("pipe:" + ch.dir);
    } else {
      CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, ChannelFiles(ch));
      args.push_back(flag);
      args.insert(args.end(), files.begin(), files.end());
    }
    have_train |= flag == "--train";
  }
  if (!have_train) return InvalidArgumentError("inputdataconfig.json: no \"train\" channel (nothing to train on)");
  return args;
}

const Channel* FindChannel(const Contract& c, std::initializer_list<const char*> names) {
  for (const Channel& ch : c.channels)
    for (const char* n : names)
      if (ch.name == n) return &ch;
  return nullptr;
}

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

// distribution mpi processes_per_host > 1: the trainer's inputs must be files a rank can read
// beside the others. Errors: InvalidArgument naming the Pipe channel.
Status CheckRanksPerHost(const MappedHyperparameters& hp, const std::vector<std::string>& inputs) {
  if (hp.processes_per_host <= 1) return Status::OK();
  for (const std::string& a : inputs)
    if (a.starts_with("pipe:"))
      return InvalidArgumentError("distribution mpi processes_per_host " + std::to_string(hp.processes_per_host) +
                                  ": " + a.substr(5) + " is a Pipe channel, and SageMaker gives each host one FIFO "
                                  "per channel and epoch, which " + std::to_string(hp.processes_per_host) +
                                  " ranks cannot share: use File or FastFile mode, or processes_per_host 1");
  return Status::OK();
}

// The OpenMP threads of each rank when a host runs several and the hyperparameters do not say:
// the host's CPUs shared out (train/threads.h AvailableCpus; the training hosts are one instance
// type). 0: the trainer's own default (one rank per host, or set by the user).
int32_t RankThreads(const MappedHyperparameters& hp) {
  if (hp.processes_per_host <= 1 || hp.values.contains("intra_op_parallelism_threads")) return 0;
  return std::max(1, train::AvailableCpus() / hp.processes_per_host);
}

// This host's part of the job (docs/launch.md#roles).
struct HostPlan {
  enum Role { kTrainer, kMpiPeer, kData } role = kTrainer;
  std::vector<std::string> train_hosts;  // the hosts the trainer spans (mpirun over them when several)
  std::string leader;                    // kMpiPeer: the host that runs mpirun
  const InstanceGroup* data = nullptr;   // heterogeneous: the data group (points into the contract)
  std::string dispatcher;                // heterogeneous: the address the trainers dial
  bool runs_dispatcher = false;          // kData: the data group's first host
};

const char* RoleName(HostPlan::Role r) {
  return r == HostPlan::kTrainer ? "trainer" : r == HostPlan::kMpiPeer ? "mpi-peer" : "data";
}

// Errors: InvalidArgument for a data_group that names no group or holds every host.
StatusOr<HostPlan> PlanHost(const Contract& c, const MappedHyperparameters& hp, const LaunchOptions& o) {
  const ResourceConfig& rc = c.resources;
  HostPlan p;
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

class Run {
 public:
  explicit Run(const LaunchOptions& o) : o_(o) {}

  // Returns the exit status; *reason is set on failure.
  int Go(std::string* reason);

 private:
  StatusOr<int> StartTrainer(const std::vector<std::string>& train_hosts, const std::string& data_service);
  // Prints the role's command line, then starts it.
  StatusOr<int> Start(const std::string& role, const std::vector<std::string>& argv);
  // Waits until every child has exited, forwarding a stop signal once.
  void WaitAll();
  // A host mpirun reaches: waits for the Open MPI daemon to appear, then to end.
  int WaitForMpiRanks(const std::string& leader, std::string* reason);
  int Finish(std::string* reason);

  const LaunchOptions& o_;
  Contract c_;
  MappedHyperparameters hp_;
  std::string training_job_;  // --training-job-name of every data role and the trainer (training_job_name.h)
  std::string ckpt_;
  Supervisor sup_;
  int trainer_ = -1;
  int stopped_by_ = 0;
};

int Run::Go(std::string* reason) {
  auto fail = [&](const Status& s) {
    *reason = s.ToString();
    return 1;
  };
  StatusOr<Contract> c = LoadContract(o_.sm_root, o_.getenv);
  if (!c.ok()) return fail(c.status());
  c_ = std::move(*c);
  training_job_ = TrainingJobName(c_, o_.getenv);
  StatusOr<MappedHyperparameters> hp =
      MapHyperparameters(c_.hyperparameters, o_.sm_root + "/input/config/hyperparameters.json");
  if (!hp.ok()) return fail(hp.status());
  hp_ = std::move(*hp);
  Say("hyperparameters (decoded as the SageMaker training toolkit does): " + hp_.decoded_json);
  Say("training options from the hyperparameters (typed as ctrain train reads them): " + hp_.values.dump());
  if (hp_.skipped_platform_keys > 0) {
    std::string names;
    for (const std::string& k : hp_.skipped_keys) names += (names.empty() ? "" : ", ") + k;
    Say("skipped " + std::to_string(hp_.skipped_platform_keys) +
        " platform hyperparameter(s) (SageMaker's own, no ctrain train flags): " + names);
  }
  ckpt_ = o_.checkpoint_dir.empty() ? o_.sm_root + "/checkpoints" : o_.checkpoint_dir;
  const ResourceConfig& rc = c_.resources;
  const std::string& me = rc.current_host;

  StatusOr<HostPlan> plan = PlanHost(c_, hp_, o_);
  if (!plan.ok()) return fail(plan.status());
  InterruptDeferral defer("stopping every role (the trainer checkpoints first)");  // forwarded (WaitAll)
  const std::string n = std::to_string(plan->train_hosts.size());
  if (plan->role == HostPlan::kMpiPeer) {
    Say(me + (plan->data == nullptr ? ": homogeneous cluster of " + n + " hosts: " + plan->leader +
                                          " runs mpirun over every host; nothing to start here"
                                    : ": one of " + n + " training hosts: " + plan->leader +
                                          " runs mpirun over them; nothing to start here"));
    return WaitForMpiRanks(plan->leader, reason);
  }
  if (plan->role == HostPlan::kTrainer) {
    Say(me + (plan->data == nullptr ? ": homogeneous cluster of " + n + " host(s): training"
                                    : ": heterogeneous cluster: training through the data service at " +
                                          plan->dispatcher));
    StatusOr<int> t = StartTrainer(plan->train_hosts, plan->data == nullptr ? "" : plan->dispatcher);
    if (!t.ok()) return fail(t.status());
    trainer_ = *t;
    WaitAll();
    return Finish(reason);
  }
  const InstanceGroup* data = plan->data;
  const std::string& dispatcher = plan->dispatcher;

  // A data host.
  if (Status s = CheckDataHostChannels(c_, hp_.data_group); !s.ok()) return fail(s);
  // The servers listen on this host's own address (its --host-address, else its name resolved)
  // and the worker advertises that address; beyond loopback they need a token (the roles inherit
  // CTRAIN_SERVICE_TOKEN) or --insecure.
  const std::string addr = Address(o_, me);
  StatusOr<std::string> bind_addr = service::ResolveBindAddress(addr);
  if (!bind_addr.ok()) return fail(bind_addr.status());
  const std::string bind = *bind_addr;
  std::vector<std::string> exposure;
  if (o_.insecure) exposure.push_back("--insecure");
  const bool runs_dispatcher = plan->runs_dispatcher;
  const std::string mon = c_.output_data_dir + "/monitor/" + me + "/";
  const std::string interval = "--monitor-interval-ms=" + std::to_string(o_.monitor_interval_ms);
  const std::string exe = o_.exe.empty() ? SelfExe() : o_.exe;
  int disp = -1;
  if (runs_dispatcher) {
    if (Status s = WriteRoleJson(mon + "dispatcher", c_, "dispatcher", 1); !s.ok()) return fail(s);
    std::vector<std::string> argv{exe, "data-service", "dispatcher", "--port=" + std::to_string(o_.dispatcher_port),
                                  "--bind=" + bind, "--monitor-dir=" + mon + "dispatcher", interval,
                                  "--training-job-name=" + training_job_};
    argv.insert(argv.end(), exposure.begin(), exposure.end());
    StatusOr<int> d = Start("dispatcher", argv);
    if (!d.ok()) return fail(d.status());
    disp = *d;
    StatusOr<std::string> where = sup_.WaitListening(disp, kListenTimeout, PendingInterruptFlag());
    if (!where.ok()) {
      stopped_by_ = PendingInterrupt();
      // It exited (its own reason is the root cause) or was stopped: Finish says which.
      return stopped_by_ != 0 || sup_.Exited(disp) ? Finish(reason) : fail(where.status());
    }
    Say(me + ": dispatcher listening on " + *where + " (trainers dial " + dispatcher + ")");
  }
  if (Status s = WriteRoleJson(mon + "data-worker", c_, "data-worker", 1); !s.ok()) return fail(s);
  std::vector<std::string> wargv{exe, "data-service", "worker", "--dispatcher=" + dispatcher,
                                 "--port=" + std::to_string(o_.worker_port), "--bind=" + bind,
                                 "--worker-address=" + service::JoinHostPort(addr, o_.worker_port), "--exit-when-idle",
                                 "--monitor-dir=" + mon + "data-worker", interval, "--training-job-name=" + training_job_};
  wargv.insert(wargv.end(), exposure.begin(), exposure.end());
  StatusOr<int> w = Start("data-worker", wargv);
  if (!w.ok()) return fail(w.status());
  Say(me + ": data worker of group " + data->name + (runs_dispatcher ? " (and the dispatcher)" : ""));
  // The worker exits 0 once every job has finished; then the dispatcher host shuts the service down.
  while (!sup_.Exited(*w)) {
    if (int sig = PendingInterrupt(); sig != 0 && stopped_by_ == 0) {
      stopped_by_ = sig;
      sup_.SignalAll(SIGTERM);
    }
    if (disp >= 0 && sup_.Exited(disp)) break;  // the dispatcher died: the worker cannot finish
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (disp >= 0 && !sup_.Exited(disp)) {
    if (sup_.status(*w) == 0 && stopped_by_ == 0) {
      service::ChannelConfig channel;  // the roles' token: CTRAIN_SERVICE_TOKEN, inherited from this process
      StatusOr<std::string> token = service::LoadToken("");
      channel.token = token.ok() ? *token : "";
      channel.training_job_name = training_job_;
      Status s = dataservice::ShutdownService(dispatcher, channel, 5000);
      if (!s.ok()) Say("shutting the data service down: " + s.ToString() + "; stopping the dispatcher");
      if (!s.ok() || sup_.Wait(disp, std::chrono::seconds(30)) < 0) sup_.Signal(disp, SIGTERM);
    } else if (stopped_by_ == 0) {  // (after a stop signal it has had its SIGTERM: a second would kill it)
      sup_.Signal(disp, SIGTERM);
    }
  } else if (disp >= 0 && !sup_.Exited(*w) && stopped_by_ == 0) {
    sup_.Signal(*w, SIGTERM);  // the dispatcher is gone: the worker would wait for it forever
  }
  WaitAll();
  return Finish(reason);
}

StatusOr<int> Run::StartTrainer(const std::vector<std::string>& hosts, const std::string& data_service) {
  const std::string& me = c_.resources.current_host;
  std::vector<std::string> inputs, notes;
  if (data_service.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(inputs, LocalInputArgs(c_));
  } else {
    CTRAIN_ASSIGN_OR_RETURN(inputs, TrainerInputArgs(c_, o_.getenv, &notes));
  }
  for (const std::string& n : notes) Say(me + ": " + n);
  CTRAIN_RETURN_IF_ERROR(CheckRanksPerHost(hp_, inputs));
  const int32_t per_host = hp_.processes_per_host;
  const size_t ranks = hosts.size() * static_cast<size_t>(per_host);
  const std::string mon = c_.output_data_dir + "/monitor/" + me + "/trainer";
  CTRAIN_RETURN_IF_ERROR(WriteRoleJson(mon, c_, "trainer", static_cast<int32_t>(ranks)));
  std::error_code ec;
  fs::create_directories(ckpt_, ec);
  if (ec) return IOError(ckpt_ + ": cannot create the checkpoint directory: " + ec.message());
  const std::string exe = o_.exe.empty() ? SelfExe() : o_.exe;
  std::vector<std::string> argv;
  if (ranks > 1) {
    if (!o_.have_mpi)
      return FailedPreconditionError(
          (per_host > 1 ? std::to_string(hosts.size()) + " training host(s) x " + std::to_string(per_host) +
                              " processes per host (distribution mpi processes_per_host) need training over MPI"
                        : std::to_string(hosts.size()) + " training hosts need multi-host training over MPI") +
          " (mpirun, docs/distributed.md), but this ctrain was built without MPI (-DCTRAIN_MPI=ON and libopenmpi-dev)");
    std::map<std::string, int> slots;
    std::vector<std::string> order;
    for (const std::string& h : hosts) {
      const std::string a = Address(o_, h);
      if (slots[a] == 0) order.push_back(a);
      slots[a] += per_host;
    }
    std::string list;
    for (const std::string& a : order) list += (list.empty() ? "" : ",") + a + ":" + std::to_string(slots[a]);
    argv = {o_.mpirun};
    if (::geteuid() == 0) argv.push_back("--allow-run-as-root");  // containers run as root
    argv.insert(argv.end(), o_.mpirun_args.begin(), o_.mpirun_args.end());
    argv.insert(argv.end(), hp_.custom_mpi_options.begin(), hp_.custom_mpi_options.end());
    argv.insert(argv.end(), {"-np", std::to_string(ranks), "--host", list});
    // mpirun is found on PATH: resolve it so that execv can run it.
    if (o_.mpirun.find('/') == std::string::npos) {
      std::string found;
      if (const char* path = std::getenv("PATH")) {
        std::string p = path;
        for (size_t a = 0; a <= p.size();) {
          size_t b = p.find(':', a);
          if (b == std::string::npos) b = p.size();
          const std::string cand = p.substr(a, b - a) + "/" + o_.mpirun;
          if (::access(cand.c_str(), X_OK) == 0) {
            found = cand;
            break;
          }
          a = b + 1;
        }
      }
      if (found.empty())
        return FailedPreconditionError(std::to_string(ranks) + " training ranks need " + o_.mpirun +
                                       " (Open MPI, docs/distributed.md), which is not on PATH");
      argv[0] = found;
    }
  }
  argv.insert(argv.end(), {exe, "train"});
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  argv.push_back("--model-dir=" + ckpt_);
  argv.push_back("--metrics-json=" + c_.output_data_dir + "/metrics.json");
  argv.push_back("--monitor-dir=" + mon);
  argv.push_back("--monitor-interval-ms=" + std::to_string(o_.monitor_interval_ms));
  if (!data_service.empty()) {
    argv.push_back("--data-service=" + data_service);
    argv.push_back("--training-job-name=" + training_job_);  // another job's service refuses it (B54)
  }
  if (const int32_t t = RankThreads(hp_); t > 0) {
    Say(me + ": " + std::to_string(per_host) + " ranks per host share its " + std::to_string(train::AvailableCpus()) +
        " CPUs: --intra-op-parallelism-threads=" + std::to_string(t) + " each");
    argv.push_back("--intra-op-parallelism-threads=" + std::to_string(t));
  }
  argv.insert(argv.end(), hp_.train_args.begin(), hp_.train_args.end());
  if (fs::exists(ckpt_ + "/checkpoint")) Say(me + ": " + ckpt_ + " holds a checkpoint: resuming from it");
  return Start(ranks > 1 ? "mpirun" : "trainer", argv);
}

StatusOr<int> Run::Start(const std::string& role, const std::vector<std::string>& argv) {
  Say(c_.resources.current_host + ": " + role + ": " + ShellLine(argv));
  return sup_.Start(role, argv);
}

int Run::WaitForMpiRanks(const std::string& leader, std::string* reason) {
  if (o_.mpi_host_wait_s <= 0) return 0;
  const Deadline deadline(std::chrono::seconds(o_.mpi_host_wait_s));
  bool seen = false;
  for (;;) {
    if (int sig = PendingInterrupt(); sig != 0) {
      *reason = c_.resources.current_host + ": stopped by signal " + std::to_string(sig) + " while serving mpirun";
      return 128 + sig;
    }
    const int daemons = CountMpiDaemons();
    if (!seen && daemons > 0) {
      seen = true;
      Say(c_.resources.current_host + ": mpirun's daemon is here; waiting for it to end");
    }
    if (seen && daemons == 0) return 0;
    if (!seen && deadline.expired()) {
      *reason = c_.resources.current_host + ": the mpirun of " + leader + " did not reach this host within " +
                std::to_string(o_.mpi_host_wait_s) + " s (mpirun starts its daemon through ssh: does the image run sshd?)";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void Run::WaitAll() {
  for (;;) {
    bool all = true;
    for (int i = 0; i < sup_.size(); ++i) all &= sup_.Exited(i);
    if (int sig = PendingInterrupt(); sig != 0 && stopped_by_ == 0) {
      stopped_by_ = sig;
      if (all) return;
      Say("got signal " + std::to_string(sig) + ": stopping every role (the trainer checkpoints first)");
      sup_.SignalAll(SIGTERM);
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int Run::Finish(std::string* reason) {
  // The root cause is the role that failed first; the others' failures (stopped after it) are
  // its consequences and never name the job's failure.
  int root = -1;
  for (int i = 0; i < sup_.size(); ++i)
    if (sup_.status(i) != 0 && (root < 0 || sup_.exit_order(i) < sup_.exit_order(root))) root = i;
  if (root >= 0) {
    *reason = c_.resources.current_host + " " + sup_.name(root) + " " + sup_.Cause(root);
    return stopped_by_ != 0 ? 128 + stopped_by_ : 1;
  }
  if (stopped_by_ != 0) {
    *reason = c_.resources.current_host + ": stopped by signal " + std::to_string(stopped_by_);
    return 128 + stopped_by_;
  }
  if (trainer_ >= 0) {
    if (Status s = CopyCheckpointTo(ckpt_, c_.model_dir); !s.ok()) {
      *reason = s.ToString();
      return 1;
    }
    Say(c_.resources.current_host + ": training done; model in " + c_.model_dir);
  }
  return 0;
}

}  // namespace

std::string FailureLine(const std::string& reason) {
  std::string line = reason;
  std::replace(line.begin(), line.end(), '\n', ' ');
  if (line.size() + 1 <= kFailureReasonMaxBytes) return line + "\n";
  const std::string marker = " ... [truncated: " + std::to_string(line.size()) + " bytes]";
  size_t keep = kFailureReasonMaxBytes - 1 - marker.size();
  while (keep > 0 && (static_cast<unsigned char>(line[keep]) & 0xC0) == 0x80) --keep;  // a UTF-8 boundary
  return line.substr(0, keep) + marker + "\n";
}

Status WriteFailure(const std::string& path, const std::string& reason) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST)
    return AlreadyExistsError(path + ": holds the first failure of this launch; kept (later: " + reason + ")");
  if (fd < 0) return ErrnoError(path, "create", errno);
  const std::string line = FailureLine(reason);
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (::close(fd) != 0 || !ok) return IOError(path + ": cannot write the failure reason");
  return Status::OK();
}

StatusOr<std::vector<std::string>> ChannelFiles(const Channel& ch) {
  std::error_code ec;
  if (!fs::is_directory(ch.dir, ec))
    return NotFoundError("channel \"" + ch.name + "\": " + ch.dir + " is not a directory");
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(ch.dir, fs::directory_options::follow_directory_symlink, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (fs::is_regular_file(it->path())) files.push_back(it->path().string());
  }
  if (ec) return IOError(ch.dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) return InvalidArgumentError("channel \"" + ch.name + "\": " + ch.dir + " holds no file");
  return files;
}

int PrintEnvironment(const LaunchOptions& o) {
  auto fail = [](const Status& s) {
    Logf("launch: %s\n", s.ToString().c_str());
    return 1;
  };
  StatusOr<Contract> c = LoadContract(o.sm_root, o.getenv);
  if (!c.ok()) return fail(c.status());
  StatusOr<MappedHyperparameters> hp =
      MapHyperparameters(c->hyperparameters, o.sm_root + "/input/config/hyperparameters.json");
  if (!hp.ok()) return fail(hp.status());
  StatusOr<HostPlan> plan = PlanHost(*c, *hp, o);
  if (!plan.ok()) return fail(plan.status());
  // The channel checks of this host's role, as the launch makes them.
  std::vector<std::string> inputs, notes;
  if (plan->role == HostPlan::kTrainer && plan->data == nullptr) {
    StatusOr<std::vector<std::string>> a = LocalInputArgs(*c);
    if (!a.ok()) return fail(a.status());
    inputs = std::move(*a);
  } else if (plan->role == HostPlan::kTrainer) {
    StatusOr<std::vector<std::string>> a = TrainerInputArgs(*c, o.getenv, &notes);
    if (!a.ok()) return fail(a.status());
    inputs = std::move(*a);
  }
  if (Status s = CheckRanksPerHost(*hp, inputs); !s.ok()) return fail(s); else if (plan->role == HostPlan::kData) {
    if (Status s = CheckDataHostChannels(*c, hp->data_group); !s.ok()) return fail(s);
  }
  std::string bind;  // a data host's servers listen there
  if (plan->role == HostPlan::kData) {
    StatusOr<std::string> b = service::ResolveBindAddress(Address(o, c->resources.current_host));
    if (!b.ok()) return fail(b.status());
    bind = *b;
  }
  const ResourceConfig& rc = c->resources;
  using json = nlohmann::ordered_json;
  json groups = json::array();
  for (const InstanceGroup& g : rc.groups)
    groups.push_back({{"instance_group_name", g.name}, {"instance_type", g.instance_type}, {"hosts", g.hosts}});
  json channels = json::object();
  for (const Channel& ch : c->channels)
    channels[ch.name] = {{"TrainingInputMode", InputModeName(ch.mode)},
                         {"dir", ch.dir},
                         {"InstanceGroupNames", ch.instance_group_names}};
  json decoded = json::parse(hp->decoded_json);
  json user = json::object();
  for (auto it = decoded.begin(); it != decoded.end(); ++it)
    if (std::find(hp->skipped_keys.begin(), hp->skipped_keys.end(), it.key()) == hp->skipped_keys.end())
      user[it.key()] = it.value();
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  json out{{"sm_root", o.sm_root},
           {"current_host", rc.current_host},
           {"hosts", rc.hosts},
           {"current_group_name", rc.current_group},
           {"current_instance_type", rc.current_instance_type},
           {"instance_groups", groups},
           {"is_hetero", rc.groups.size() > 1},
           {"channels", channels},
           {"hyperparameters", decoded},
           {"user_hyperparameters", user},
           {"platform_hyperparameters", hp->skipped_keys},
           {"training_options", hp->values},
           {"data_group", hp->data_group},
           {"role", RoleName(plan->role)},
           {"train_hosts", plan->train_hosts},
           {"mpi_leader", plan->leader},
           {"processes_per_host", hp->processes_per_host},
           {"world_size", plan->role == HostPlan::kData ? 0 : plan->train_hosts.size() * hp->processes_per_host},
           {"custom_mpi_options", hp->custom_mpi_options},
           {"rank_intra_op_threads", RankThreads(*hp)},
           {"dispatcher", plan->dispatcher},
           {"runs_dispatcher", plan->runs_dispatcher},
           {"bind_address", bind},
           {"insecure", o.insecure},
           {"trainer_inputs", inputs},
           {"notes", notes},
           {"num_cpus", cpus > 0 ? cpus : 1},
           {"model_dir", c->model_dir},
           {"output_data_dir", c->output_data_dir},
           {"checkpoint_dir", o.checkpoint_dir.empty() ? o.sm_root + "/checkpoints" : o.checkpoint_dir}};
  std::printf("%s\n", out.dump(2).c_str());
  std::fflush(stdout);
  return 0;
}

int RunLaunch(const LaunchOptions& options) {
  std::string reason;
  int rc;
  std::error_code ec;
  fs::remove(options.sm_root + "/output/failure", ec);  // a relaunch starts clean; written once below
  {
    Run run(options);
    rc = run.Go(&reason);
  }
  if (rc != 0) {
    if (reason.empty()) reason = "failed with status " + std::to_string(rc);
    Logf("launch: %s\n", reason.c_str());
    if (Status s = WriteFailure(options.sm_root + "/output/failure", reason); !s.ok())
      Logf("launch: %s\n", s.ToString().c_str());
  }
  return rc;
}

}  // namespace ctrain::launch
