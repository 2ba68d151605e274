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
#include "ctrain/launch/entry_point.h"
#include "ctrain/launch/host_plan.h"
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

class Run {
 public:
  explicit Run(const LaunchOptions& o) : o_(o) {}

  // Returns the exit status; *reason is set on failure.
  int Go(std::string* reason);

 private:
  StatusOr<int> StartTrainer(const std::vector<std::string>& train_hosts, const std::string& data_service);
  // The user's script in the trainer role (launch/entry_point.h), under mpirun for several ranks.
  StatusOr<int> StartScript(const std::vector<std::string>& train_hosts, const std::string& data_service);
  // mpirun and its arguments for `hosts` x processes_per_host ranks (empty for one rank).
  // Errors: no MPI in this build, no mpirun on PATH.
  StatusOr<std::vector<std::string>> MpirunArgv(const std::vector<std::string>& hosts);
  // Asks the data service to shut down (its workers exit, then the dispatcher); false when it
  // did not answer (logged).
  bool ShutdownDataService(const std::string& dispatcher);
  // A parameter-server job: this host's server and worker (launch/ps_layout.h).
  int RunPs(const PsLayout& layout, std::string* reason);
  // Prints the role's command line, then starts it.
  StatusOr<int> Start(const std::string& role, const std::vector<std::string>& argv,
                      const Supervisor::StartOptions& options = {});
  // Waits until every child has exited, forwarding a stop signal once; with stop_on_failure, a
  // role that fails stops the others (SIGTERM), which would otherwise wait for it.
  void WaitAll(bool stop_on_failure = false);
  // A host mpirun reaches: waits for the Open MPI daemon to appear, then to end.
  int WaitForMpiRanks(const std::string& leader, std::string* reason);
  // Multi-host MPI with --sshd: this host's sshd (a helper role, stopped when the host's part is
  // over), and on the first host the wait for every other training host's sshd.
  Status StartSshd();
  Status WaitForSshd(const std::vector<std::string>& hosts);
  // A helper that exited by itself (not stopped by StopHelpers), or -1.
  int FailedHelper();
  void StopHelpers();
  int Finish(std::string* reason);

  const LaunchOptions& o_;
  Contract c_;
  MappedHyperparameters hp_;
  std::string training_job_;  // --training-job-name of every data role and the trainer (training_job_name.h)
  std::string ckpt_;
  Supervisor sup_;
  int trainer_ = -1;
  std::vector<int> helpers_;     // roles that serve the others (sshd): stopped when those end
  bool helpers_stopped_ = false;
  std::vector<int> died_;        // helpers that had exited by themselves when StopHelpers ran
  bool ps_job_ = false;    // a parameter-server job: the chief exports the model to model_dir itself
  bool exported_ = false;  // this host's trainer is that chief
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
  StatusOr<MappedHyperparameters> hp = MapHyperparameters(
      c_.hyperparameters, o_.sm_root + "/input/config/hyperparameters.json", !o_.entry_point.empty());
  if (!hp.ok()) return fail(hp.status());
  hp_ = std::move(*hp);
  Say("hyperparameters (decoded as the SageMaker training toolkit does): " + hp_.decoded_json);
  if (!hp_.user_script)
    Say("training options from the hyperparameters (typed as ctrain train reads them): " + hp_.values.dump());
  if (hp_.user_script)
    Say("a user entry point (" + (o_.entry_point.empty() ? "sagemaker_program " + hp_.program : "--entry-point " +
                                  o_.entry_point[0]) + "): the hyperparameters are its arguments");
  if (hp_.user_script && hp_.parameter_server)
    return fail(InvalidArgumentError("a user entry point with distribution parameter_server: the parameter-server "
                                     "layout runs ctrain's own workers; leave one out"));
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
  if (plan->role == HostPlan::kPs) return RunPs(*plan->ps, reason);
  if (plan->role == HostPlan::kMpiPeer) {
    Say(me + (plan->data == nullptr ? ": homogeneous cluster of " + n + " hosts: " + plan->leader +
                                          " runs mpirun over every host; nothing to start here"
                                    : ": one of " + n + " training hosts: " + plan->leader +
                                          " runs mpirun over them; nothing to start here"));
    if (Status s = StartSshd(); !s.ok()) return fail(s);
    const int rc = WaitForMpiRanks(plan->leader, reason);
    StopHelpers();
    return rc != 0 ? rc : Finish(reason);
  }
  if (plan->role == HostPlan::kTrainer) {
    Say(me + (plan->data == nullptr ? ": homogeneous cluster of " + n + " host(s): training"
                                    : ": heterogeneous cluster: training through the data service at " +
                                          plan->dispatcher));
    if (plan->train_hosts.size() > 1) {  // mpirun reaches the other training hosts through ssh
      if (Status s = StartSshd(); !s.ok()) return fail(s);
      if (Status s = WaitForSshd(plan->train_hosts); !s.ok()) {
        StopHelpers();
        stopped_by_ = PendingInterrupt();
        if (stopped_by_ != 0 || FailedHelper() >= 0) return Finish(reason);
        return fail(s);
      }
    }
    const std::string service = plan->data == nullptr ? "" : plan->dispatcher;
    StatusOr<int> t = hp_.user_script ? StartScript(plan->train_hosts, service) : StartTrainer(plan->train_hosts, service);
    if (!t.ok()) {
      StopHelpers();
      if (hp_.user_script && !service.empty()) ShutdownDataService(service);  // the data hosts serve it only
      return fail(t.status());
    }
    trainer_ = *t;
    WaitAll();
    // A script's data hosts serve until it ends (its jobs are its own business): then they stop.
    if (hp_.user_script && !service.empty()) ShutdownDataService(service);
    return Finish(reason);
  }
  const InstanceGroup* data = plan->data;
  const std::string& dispatcher = plan->dispatcher;

  // A data host. (A user's script names the files its jobs read; ctrain's trainer reads the train channel.)
  if (!hp_.user_script)
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
                                 "--worker-address=" + service::JoinHostPort(addr, o_.worker_port),
                                 "--monitor-dir=" + mon + "data-worker", interval, "--training-job-name=" + training_job_};
  // ctrain's trainer: the worker exits once its job has finished. A user's script may run several
  // jobs one after another: its host shuts the service down when the script ends.
  if (!hp_.user_script) wargv.push_back("--exit-when-idle");
  wargv.insert(wargv.end(), exposure.begin(), exposure.end());
  StatusOr<int> w = Start("data-worker", wargv);
  if (!w.ok()) return fail(w.status());
  Say(me + ": data worker of group " + data->name + (runs_dispatcher ? " (and the dispatcher)" : ""));
  // The worker exits 0 once every job has finished (a script's: once the service shuts down); then the
  // dispatcher host shuts the service down.
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
      const bool asked = ShutdownDataService(dispatcher);
      if (!asked || sup_.Wait(disp, std::chrono::seconds(30)) < 0) sup_.Signal(disp, SIGTERM);
    } else if (stopped_by_ == 0) {  // (after a stop signal it has had its SIGTERM: a second would kill it)
      sup_.Signal(disp, SIGTERM);
    }
  } else if (disp >= 0 && !sup_.Exited(*w) && stopped_by_ == 0) {
    sup_.Signal(*w, SIGTERM);  // the dispatcher is gone: the worker would wait for it forever
  }
  WaitAll();
  return Finish(reason);
}

StatusOr<std::vector<std::string>> Run::MpirunArgv(const std::vector<std::string>& hosts) {
  const int32_t per_host = hp_.processes_per_host;
  const size_t ranks = hosts.size() * static_cast<size_t>(per_host);
  std::vector<std::string> argv;
  if (ranks <= 1) return argv;
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
  // Open MPI binds each rank to one core when -np <= 2 (to a socket above): a trainer would then see one CPU of
  // its host. As SageMaker's own MPI runner, the ranks are not bound unless the user binds them.
  const auto binds = [](const std::string& a) { return a == "--bind-to" || a == "-bind-to" || a.starts_with("--bind-to="); };
  if (std::none_of(o_.mpirun_args.begin(), o_.mpirun_args.end(), binds) &&
      std::none_of(hp_.custom_mpi_options.begin(), hp_.custom_mpi_options.end(), binds))
    argv.insert(argv.end(), {"--bind-to", "none"});
  argv.insert(argv.end(), o_.mpirun_args.begin(), o_.mpirun_args.end());
  argv.insert(argv.end(), hp_.custom_mpi_options.begin(), hp_.custom_mpi_options.end());
  argv.insert(argv.end(), {"-np", std::to_string(ranks), "--host", list});
  // mpirun is found on PATH: resolve it so that execv can run it.
  StatusOr<std::string> found = FindOnPath(o_.mpirun);
  if (!found.ok())
    return FailedPreconditionError(std::to_string(ranks) + " training ranks need " + o_.mpirun +
                                   " (Open MPI, docs/distributed.md), which is not on PATH");
  argv[0] = *found;
  return argv;
}

StatusOr<int> Run::StartScript(const std::vector<std::string>& hosts, const std::string& data_service) {
  const std::string& me = c_.resources.current_host;
  CTRAIN_ASSIGN_OR_RETURN(EntryPoint e, ResolveEntryPoint(c_, hp_, o_));
  if (!e.dir.empty() && fs::exists(e.dir + "/requirements.txt"))
    Say(me + ": " + e.dir + "/requirements.txt is not installed by ctrain launch: the image must hold those packages");
  const std::string train_path = data_service.empty() ? "" : ChannelDir(c_.root, "train", o_.getenv);
  std::vector<std::pair<std::string, std::string>> env =
      ScriptEnvironment(c_, hp_, e, training_job_, data_service, train_path);
  const size_t ranks = hosts.size() * static_cast<size_t>(hp_.processes_per_host);
  // The package's data-service client monitors the script's steps there (what `ctrain report` reads).
  const std::string mon = c_.output_data_dir + "/monitor/" + me + "/trainer";
  CTRAIN_RETURN_IF_ERROR(WriteRoleJson(mon, c_, "trainer", static_cast<int32_t>(ranks)));
  env.emplace_back("CTRAIN_MONITOR_DIR", mon);
  env.emplace_back("CTRAIN_MONITOR_INTERVAL_MS", std::to_string(o_.monitor_interval_ms));
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> argv, MpirunArgv(hosts));
  if (!argv.empty()) {
    // As the training toolkit's MPI runner: every rank gets the job's variables (-x NAME: mpirun's own
    // value; SM_CURRENT_HOST is then the first host's on every rank, as with the toolkit) and the
    // script's working directory.
    for (const auto& [name, value] : env) argv.insert(argv.end(), {"-x", name});
    for (const char* name : {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "CTRAIN_SERVICE_TOKEN"})
      if (std::getenv(name) != nullptr) argv.insert(argv.end(), {"-x", name});
    if (!e.dir.empty()) argv.insert(argv.end(), {"--wdir", e.dir});
  }
  argv.insert(argv.end(), e.argv.begin(), e.argv.end());
  Supervisor::StartOptions start;
  start.env = env;
  start.dir = e.dir;
  start.any_stderr_line = true;
  return Start(e.name, argv, start);
}

StatusOr<int> Run::StartTrainer(const std::vector<std::string>& hosts, const std::string& data_service) {
  const std::string& me = c_.resources.current_host;
  std::vector<std::string> inputs, notes;
  if (data_service.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(inputs, LocalInputArgs(c_, hp_.processes_per_host));
  } else {
    CTRAIN_ASSIGN_OR_RETURN(inputs, TrainerInputArgs(c_, o_.getenv, &notes));
  }
  for (const std::string& n : notes) Say(me + ": " + n);
  const int32_t per_host = hp_.processes_per_host;
  const size_t ranks = hosts.size() * static_cast<size_t>(per_host);
  const std::string mon = c_.output_data_dir + "/monitor/" + me + "/trainer";
  CTRAIN_RETURN_IF_ERROR(WriteRoleJson(mon, c_, "trainer", static_cast<int32_t>(ranks)));
  std::error_code ec;
  fs::create_directories(ckpt_, ec);
  if (ec) return IOError(ckpt_ + ": cannot create the checkpoint directory: " + ec.message());
  const std::string exe = o_.exe.empty() ? SelfExe() : o_.exe;
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> argv, MpirunArgv(hosts));
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

int Run::RunPs(const PsLayout& l, std::string* reason) {
  auto fail = [&](const Status& s) {
    *reason = s.ToString();
    return 1;
  };
  const std::string& me = c_.resources.current_host;
  ps_job_ = true;
  std::string servers;
  for (const std::string& a : l.servers) servers += (servers.empty() ? "" : ",") + a;
  Say(me + ": parameter-server job (from " + l.source + "): servers " + servers + ", " + std::to_string(l.num_workers) +
      " worker(s); this host runs" + (l.shard >= 0 ? " server " + std::to_string(l.shard) : std::string()) +
      (l.worker_index >= 0 ? (l.shard >= 0 ? " and" : "") + std::string(" worker ") + std::to_string(l.worker_index) +
                                 (l.worker_index == 0 ? " (the chief)" : "")
                           : std::string()));
  const std::string exe = o_.exe.empty() ? SelfExe() : o_.exe;
  const std::string mon = c_.output_data_dir + "/monitor/" + me + "/";
  const std::string interval = "--monitor-interval-ms=" + std::to_string(o_.monitor_interval_ms);
  std::error_code ec;
  fs::create_directories(ckpt_, ec);
  if (ec) return fail(IOError(ckpt_ + ": cannot create the checkpoint directory: " + ec.message()));
  if (l.shard >= 0) {
    // The server listens on this host's own address (as the cluster names it, resolved); beyond loopback it needs
    // a token (CTRAIN_SERVICE_TOKEN, inherited) or --insecure. It keeps its shard's checkpoints in this host's
    // checkpoint directory and exits once every worker is done.
    StatusOr<std::string> bind = service::ResolveBindAddress(l.listen_host);
    if (!bind.ok()) return fail(bind.status());
    if (Status s = WriteRoleJson(mon + "ps", c_, "ps", 1); !s.ok()) return fail(s);
    std::vector<std::string> argv{exe, "ps", "--shard=" + std::to_string(l.shard),
                                  "--num-shards=" + std::to_string(l.servers.size()),
                                  "--port=" + std::to_string(l.listen_port), "--bind=" + *bind,
                                  "--model-dir=" + ckpt_, "--exit-when-workers-done",
                                  "--training-job-name=" + training_job_};
    if (o_.insecure) argv.push_back("--insecure");
    // One message size limit for servers and workers: the hyperparameter reaches both.
    if (hp_.values.contains("ps_max_message_bytes"))
      argv.push_back("--max-message-bytes=" + hp_.values["ps_max_message_bytes"].dump());
    StatusOr<int> ps = Start("ps", argv);
    if (!ps.ok()) return fail(ps.status());
    StatusOr<std::string> where = sup_.WaitListening(*ps, kListenTimeout, PendingInterruptFlag());
    if (!where.ok()) {
      stopped_by_ = PendingInterrupt();
      return stopped_by_ != 0 || sup_.Exited(*ps) ? Finish(reason) : fail(where.status());
    }
    Say(me + ": parameter server " + std::to_string(l.shard) + " listening on " + *where);
  }
  if (l.worker_index >= 0) {
    StatusOr<std::vector<std::string>> inputs = LocalInputArgs(c_);
    if (!inputs.ok()) return fail(inputs.status());
    if (Status s = WriteRoleJson(mon + "trainer", c_, "trainer", 1); !s.ok()) return fail(s);
    std::vector<std::string> argv{exe, "train"};
    argv.insert(argv.end(), inputs->begin(), inputs->end());
    argv.insert(argv.end(), {"--ps=" + servers, "--worker-index=" + std::to_string(l.worker_index),
                             "--num-workers=" + std::to_string(l.num_workers), "--training-job-name=" + training_job_,
                             "--metrics-json=" + c_.output_data_dir + "/metrics.json", "--monitor-dir=" + mon + "trainer",
                             interval});
    if (l.worker_index == 0) {  // the chief: checkpoints through the servers, and the model for model/
      argv.push_back("--model-dir=" + ckpt_);
      argv.push_back("--ps-export-dir=" + c_.model_dir);
      exported_ = true;
    }
    argv.insert(argv.end(), hp_.train_args.begin(), hp_.train_args.end());
    StatusOr<int> t = Start("trainer", argv);
    if (!t.ok()) return fail(t.status());
    trainer_ = *t;
  }
  WaitAll(/*stop_on_failure=*/true);
  return Finish(reason);
}

StatusOr<int> Run::Start(const std::string& role, const std::vector<std::string>& argv,
                         const Supervisor::StartOptions& options) {
  Say(c_.resources.current_host + ": " + role + ": " + ShellLine(argv) +
      (options.dir.empty() ? "" : " (in " + options.dir + ")"));
  return sup_.Start(role, argv, options);
}

bool Run::ShutdownDataService(const std::string& dispatcher) {
  service::ChannelConfig channel;  // the roles' token: CTRAIN_SERVICE_TOKEN, inherited from this process
  StatusOr<std::string> token = service::LoadToken("");
  channel.token = token.ok() ? *token : "";
  channel.training_job_name = training_job_;
  Status s = dataservice::ShutdownService(dispatcher, channel, 5000);
  if (!s.ok()) Say("shutting the data service down: " + s.ToString() + "; stopping the dispatcher");
  return s.ok();
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
    if (const int h = FailedHelper(); h >= 0) {  // e.g. the sshd mpirun needs could not listen
      *reason = c_.resources.current_host + " " + sup_.name(h) + " " + sup_.Cause(h);
      return 1;
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

Status Run::StartSshd() {
  if (o_.sshd.empty()) return Status::OK();
  std::vector<std::string> argv{o_.sshd, "-D", "-e"};
  argv.insert(argv.end(), o_.sshd_args.begin(), o_.sshd_args.end());
  CTRAIN_ASSIGN_OR_RETURN(int i, Start("sshd", argv));
  helpers_.push_back(i);
  return Status::OK();
}

Status Run::WaitForSshd(const std::vector<std::string>& hosts) {
  if (o_.sshd.empty()) return Status::OK();
  const std::string& me = c_.resources.current_host;
  const Deadline deadline(std::chrono::seconds(o_.mpi_host_wait_s));
  for (const std::string& h : hosts) {
    if (h == me) continue;
    const std::string at = service::JoinHostPort(Address(o_, h), o_.ssh_port);
    Say(me + ": waiting for the sshd of " + h + " at " + at + " (mpirun starts its ranks there through ssh)");
    for (;;) {
      if (PendingInterrupt() != 0) return CancelledError("stopped while waiting for the sshd of " + h);
      if (FailedHelper() >= 0) return FailedPreconditionError("this host's sshd exited");
      if (service::CanConnect(Address(o_, h), o_.ssh_port)) break;
      if (deadline.expired())
        return DeadlineExceededError(h + ": no sshd accepted connections at " + at + " within " +
                                     std::to_string(o_.mpi_host_wait_s) +
                                     " s (--mpi-host-wait-s): mpirun reaches the other training hosts through ssh; "
                                     "every host runs `ctrain launch --sshd` (scripts/train does) or its own sshd");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  return Status::OK();
}

int Run::FailedHelper() {
  if (helpers_stopped_) return -1;
  for (int i : helpers_)
    if (sup_.Exited(i)) return i;
  return -1;
}

void Run::StopHelpers() {
  if (helpers_stopped_) return;
  for (int i : helpers_)
    if (sup_.Exited(i)) died_.push_back(i);
  helpers_stopped_ = true;
  for (int i : helpers_) sup_.Signal(i, SIGTERM);
  for (int i : helpers_)
    if (sup_.Wait(i, std::chrono::seconds(5)) < 0) {
      sup_.Signal(i, SIGKILL);
      sup_.Wait(i, std::chrono::seconds(5));
    }
}

void Run::WaitAll(bool stop_on_failure) {
  bool stopping = false;
  for (;;) {
    bool all = true, failed = false;
    for (int i = 0; i < sup_.size(); ++i) {
      if (std::find(helpers_.begin(), helpers_.end(), i) != helpers_.end()) {
        failed |= FailedHelper() == i;
        continue;
      }
      all &= sup_.Exited(i);
      failed |= sup_.Exited(i) && sup_.status(i) != 0;
    }
    if (all) StopHelpers();  // the roles they served are over
    if (stop_on_failure && failed && !all && !stopping && stopped_by_ == 0) {
      stopping = true;
      Say(c_.resources.current_host + ": a role failed: stopping the others");
      sup_.SignalAll(SIGTERM);
    }
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
  for (int i = 0; i < sup_.size(); ++i) {
    const bool helper = std::find(helpers_.begin(), helpers_.end(), i) != helpers_.end();
    if (helper && helpers_stopped_ && std::find(died_.begin(), died_.end(), i) == died_.end())
      continue;  // stopped by this launcher when the roles it served ended
    if (sup_.status(i) != 0 && (root < 0 || sup_.exit_order(i) < sup_.exit_order(root))) root = i;
  }
  if (root >= 0) {
    *reason = c_.resources.current_host + " " + sup_.name(root) + " " + sup_.Cause(root);
    return stopped_by_ != 0 ? 128 + stopped_by_ : 1;
  }
  if (stopped_by_ != 0) {
    *reason = c_.resources.current_host + ": stopped by signal " + std::to_string(stopped_by_);
    return 128 + stopped_by_;
  }
  if (exported_) {
    Say(c_.resources.current_host + ": training done; model in " + c_.model_dir + " (exported from the servers)");
  } else if (trainer_ >= 0 && hp_.user_script) {
    Say(c_.resources.current_host + ": " + sup_.name(trainer_) + " done (it writes its own model to " + c_.model_dir +
        ")");
  } else if (trainer_ >= 0 && !ps_job_) {
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
  StatusOr<MappedHyperparameters> hp = MapHyperparameters(
      c->hyperparameters, o.sm_root + "/input/config/hyperparameters.json", !o.entry_point.empty());
  if (!hp.ok()) return fail(hp.status());
  if (hp->user_script && hp->parameter_server)
    return fail(InvalidArgumentError("a user entry point with distribution parameter_server: the parameter-server "
                                     "layout runs ctrain's own workers; leave one out"));
  StatusOr<HostPlan> plan = PlanHost(*c, *hp, o);
  if (!plan.ok()) return fail(plan.status());
  // The channel checks of this host's role, as the launch makes them (a user's script: its entry point).
  std::vector<std::string> inputs, notes;
  const bool ps_worker = plan->role == HostPlan::kPs && plan->ps->worker_index >= 0;
  nlohmann::ordered_json script = nlohmann::ordered_json::object();
  if (hp->user_script && plan->role == HostPlan::kTrainer) {
    StatusOr<EntryPoint> e = ResolveEntryPoint(*c, *hp, o);
    if (!e.ok()) return fail(e.status());
    const std::string train = plan->data == nullptr ? "" : ChannelDir(c->root, "train", o.getenv);
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const auto& [k, v] : ScriptEnvironment(*c, *hp, *e, TrainingJobName(*c, o.getenv), plan->dispatcher, train))
      env[k] = v;
    script = {{"argv", e->argv}, {"dir", e->dir}, {"env", env}};
  } else if (hp->user_script) {
  } else if ((plan->role == HostPlan::kTrainer && plan->data == nullptr) || ps_worker) {
    StatusOr<std::vector<std::string>> a = LocalInputArgs(*c, hp->processes_per_host);
    if (!a.ok()) return fail(a.status());
    inputs = std::move(*a);
  } else if (plan->role == HostPlan::kTrainer) {
    StatusOr<std::vector<std::string>> a = TrainerInputArgs(*c, o.getenv, &notes);
    if (!a.ok()) return fail(a.status());
    inputs = std::move(*a);
  }
  if (plan->role == HostPlan::kData && !hp->user_script) {
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
           {"world_size", plan->role == HostPlan::kData || plan->role == HostPlan::kPs ? 0 : plan->train_hosts.size() * hp->processes_per_host},
           {"custom_mpi_options", hp->custom_mpi_options},
           {"rank_intra_op_threads", RankThreads(*hp)},
           {"parameter_servers", plan->ps ? json(plan->ps->servers) : json::array()},
           {"ps_source", plan->ps ? plan->ps->source : ""},
           {"ps_shard", plan->ps ? plan->ps->shard : -1},
           {"worker_index", plan->ps ? plan->ps->worker_index : -1},
           {"num_workers", plan->ps ? plan->ps->num_workers : 0},
           {"dispatcher", plan->dispatcher},
           {"runs_dispatcher", plan->runs_dispatcher},
           {"bind_address", bind},
           {"insecure", o.insecure},
           {"trainer_inputs", inputs},
           {"entry_point", script},
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
