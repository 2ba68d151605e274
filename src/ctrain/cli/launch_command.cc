// `ctrain launch`: the SageMaker training-container entry point
// (docs/launch.md). The work is in the library (launch/launch.h,
// launch/local_cluster.h); this file parses flags.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/cli/commands.h"
#include "ctrain/launch/launch.h"
#include "ctrain/launch/local_cluster.h"

namespace ctrain::cli {
namespace {

struct LaunchFlags {
  launch::LaunchOptions o;
  std::vector<std::string> host_addresses;
  std::string local_cluster, work_dir;
  bool print_environment = false;
  bool entry_point_help = false;  // never set: --entry-point is taken out before parsing
};

std::vector<std::string>& EntryPointArgs() {
  static std::vector<std::string> args;  // set once, before parsing (TakeLaunchEntryPoint)
  return args;
}

}  // namespace

std::string TakeLaunchEntryPoint(std::vector<std::string>* args) {
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a != "--entry-point" && a != "--entry_point" && !a.starts_with("--entry-point=") &&
        !a.starts_with("--entry_point="))
      continue;
    std::vector<std::string> mine;
    if (const size_t eq = a.find('='); eq != std::string::npos) mine.push_back(a.substr(eq + 1));
    mine.insert(mine.end(), args->begin() + static_cast<std::ptrdiff_t>(i) + 1, args->end());
    if (mine.empty() || mine[0].empty()) return "--entry-point: give the script to run (--entry-point SCRIPT [ARGS...])";
    args->resize(i);
    EntryPointArgs() = std::move(mine);
    return "";
  }
  return "";
}

Command AddLaunchCommand(CLI::App& app) {
  auto fl = std::make_shared<LaunchFlags>();  // owned by the run function (CLI11 points into it)
  CLI::App* sub = app.add_subcommand(
      "launch", "Run as a SageMaker training container: read /opt/ml, start this host's roles (docs/launch.md)");
  sub->add_option("--sm-root,--sm_root", fl->o.sm_root, "The SageMaker container root")->capture_default_str();
  sub->add_option("--checkpoint-dir,--checkpoint_dir", fl->o.checkpoint_dir,
                  "Checkpoints (resumed when present; default: <sm-root>/checkpoints, /opt/ml/checkpoints in a container)");
  sub->add_option("--host-address,--host_address", fl->host_addresses,
                  "NAME=ADDR: reach host NAME at ADDR instead of its name (local runs); repeatable");
  sub->add_option("--dispatcher-port,--dispatcher_port", fl->o.dispatcher_port,
                  "Data-service dispatcher port on the data group's first host")
      ->capture_default_str();
  sub->add_option("--ps-port,--ps_port", fl->o.ps_port,
                  "distribution parameter_server: every host's parameter server port (TF_CONFIG gives its own)")
      ->capture_default_str();
  sub->add_option("--worker-port,--worker_port", fl->o.worker_port, "Data-service worker port on every data host")
      ->capture_default_str();
  sub->add_option("--monitor-interval-ms,--monitor_interval_ms", fl->o.monitor_interval_ms,
                  "Every role samples its CPU, RSS (and GPU) this often")
      ->capture_default_str();
  sub->add_option("--mpirun", fl->o.mpirun, "mpirun for multi-host training")->capture_default_str();
  sub->add_option("--mpirun-arg,--mpirun_arg", fl->o.mpirun_args, "An extra mpirun argument; repeatable");
  sub->add_option("--sshd", fl->o.sshd,
                  "Multi-host MPI: start this sshd (-D) on every training host, as SageMaker's framework containers "
                  "do, and wait for the other hosts' before mpirun (scripts/train passes /usr/sbin/sshd when the "
                  "image has it)");
  sub->add_option("--sshd-arg,--sshd_arg", fl->o.sshd_args, "An extra sshd argument; repeatable");
  sub->add_option("--ssh-port,--ssh_port", fl->o.ssh_port, "--sshd: the port the other hosts' sshd listens on")
      ->capture_default_str();
  sub->add_option("--mpi-host-wait-s,--mpi_host_wait_s", fl->o.mpi_host_wait_s,
                  "Homogeneous cluster, hosts after the first: wait this long for mpirun's daemon (0 = exit at once)")
      ->capture_default_str();
  sub->add_flag("--insecure", fl->o.insecure,
               "Data hosts: let the data service listen beyond loopback without a token (CTRAIN_SERVICE_TOKEN) on "
               "a network only the job's hosts reach (refused otherwise)");
  sub->add_flag("--print-environment,--print_environment", fl->print_environment,
               "Print this host's view of the contract (hosts, groups, channels, hyperparameters, role) as "
               "JSON and exit: nothing starts, no file is written");
  sub->add_option("--local-cluster,--local_cluster", fl->local_cluster,
                  "SPEC.toml: simulate a SageMaker cluster on this machine (needs --work-dir)");
  sub->add_option("--work-dir,--work_dir", fl->work_dir, "--local-cluster: where the hosts' /opt/ml trees go");
  sub->add_option("--python", fl->o.python, "The interpreter of a .py entry point (on PATH)")->capture_default_str();
  // Parsed before CLI11 (TakeLaunchEntryPoint); listed here for --help.
  sub->add_flag("--entry-point,--entry_point", fl->entry_point_help,
                "SCRIPT [ARGS...] (last: everything after it is the script's): run this script in the trainer role "
                "instead of ctrain train, with the SageMaker environment and the data service's address "
                "(docs/launch.md#entry-points); the hyperparameter sagemaker_program does the same");
  Command c;
  c.app = sub;
  c.run = [fl, &app]() -> int {
    for (const std::string& ha : fl->host_addresses) {
      const size_t eq = ha.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == ha.size()) {
        Logf("--host-address %s: expected NAME=ADDR\n", ha.c_str());
        return 2;
      }
      fl->o.host_addresses[ha.substr(0, eq)] = ha.substr(eq + 1);
    }
#if CTRAIN_HAVE_MPI
    fl->o.have_mpi = true;
#endif
    fl->o.getenv = [](const char* name) -> const char* { return std::getenv(name); };
    fl->o.entry_point = EntryPointArgs();
    if (fl->print_environment && !fl->local_cluster.empty()) {
      Logf("--print-environment reads one host's tree (--sm-root); a local cluster has one per host: give "
           "--sm-root <work-dir>/algo-N instead of --local-cluster\n");
      return 2;
    }
    if (!fl->local_cluster.empty()) return launch::RunLocalCluster(fl->local_cluster, fl->work_dir, fl->o);
    if (!fl->work_dir.empty()) {
      Logf("--work-dir is for --local-cluster\n");
      return 2;
    }
    if (fl->print_environment) return launch::PrintEnvironment(fl->o);
    return launch::RunLaunch(fl->o);
  };
  return c;
}

}  // namespace ctrain::cli
