// `ctrain launch`: runs this host's part of a SageMaker training job
// (docs/launch.md). Reads the contract (launch/sagemaker_config.h), maps the
// hyperparameters onto `ctrain train` flags (launch/hyperparameters.h), finds
// this host's roles and runs them as child processes of this binary
// (launch/supervisor.h):
//
//   homogeneous, 1 host        trainer: ctrain train (reads the channels itself); with
//                              distribution mpi processes_per_host P > 1, under mpirun -np P
//   homogeneous, N hosts       the first host runs `mpirun [custom_mpi_options] -np N*P
//                              --host a:P,b:P,... ctrain train` (docs/distributed.md; P =
//                              processes_per_host, default 1); the others have
//                              nothing to start: mpirun reaches them through sshd; they
//                              wait for its Open MPI daemon to come and go, then exit 0.
//                              Without MPI built in: FailedPrecondition naming it.
//   heterogeneous (hyperparameter data_group = G)
//     hosts of G               data-service worker --exit-when-idle; the first host of G
//                              also runs the dispatcher, and when its worker has exited
//                              (every job finished) shuts the service down, so every data
//                              host and the dispatcher exit 0 by themselves
//     the other hosts          the trainer (the first of them runs mpirun over them all when
//                              there are several; the others wait as above), reading
//                              through --data-service <first host of G>:<dispatcher port>
//
// Before starting a role the launcher prints (stderr, "ctrain: launch: ") the
// hyperparameters as decoded (one JSON object), the platform keys it skipped, and
// each role's full command line: the trainer's is the `ctrain train` run that the
// same flags on the command line reproduce.
// Every role runs with --monitor-dir <output/data>/monitor/<host>/<role> (with a
// role.json beside: host, role, instance group and type) for `ctrain report`.
// Outputs: checkpoints in the checkpoint dir (a present checkpoint is resumed, as
// on a spot restart); after a successful training the latest checkpoint is copied
// to model/ (usable by `ctrain predict --model-dir`); metrics.json in output/data.
// SIGTERM/SIGINT: forwarded to every role (the trainer checkpoints, the data roles
// exit 0); the launcher then exits 143/130.
// Any failure: the one-line reason goes to output/failure (once: the root cause, the
// role that failed first, e.g. "algo-2 trainer killed by signal 9"; WriteFailure) and to
// stderr, and RunLaunch returns non-zero (1, or the signal status). Success leaves no
// output/failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/sagemaker_config.h"

namespace ctrain::launch {

struct LaunchOptions {
  std::string sm_root = "/opt/ml";
  // "" = <sm_root>/checkpoints (/opt/ml/checkpoints in a container, SageMaker's
  // checkpoint_local_path default).
  std::string checkpoint_dir;
  std::map<std::string, std::string> host_addresses;  // --host-address NAME=ADDR; others: the name itself
  int32_t dispatcher_port = 5050;
  int32_t worker_port = 5051;
  // distribution parameter_server: every host's parameter server listens here (SageMaker's
  // TensorFlow containers use 2223 for theirs); TF_CONFIG gives its own ports.
  int32_t ps_port = 2223;
  int64_t monitor_interval_ms = 1000;
  std::string exe;                    // this binary; "" = /proc/self/exe
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirun_args;  // extra mpirun arguments (e.g. --oversubscribe)
  bool have_mpi = false;                 // built with CTRAIN_HAVE_MPI
  // A homogeneous cluster's other hosts wait this long for the first host's mpirun to
  // reach them (an Open MPI daemon, orted or prted, appears), then until it is gone,
  // as SageMaker's MPI containers do; 0 = exit at once (local clusters: one machine).
  int64_t mpi_host_wait_s = 300;
  // Multi-host MPI: this sshd is started on every training host (`<sshd> -D -e <sshd_args>`), as
  // SageMaker's framework containers start theirs, so that the first host's mpirun reaches the
  // others; the first host waits up to mpi_host_wait_s for every other training host's sshd to
  // accept connections on ssh_port before it runs mpirun, and each host stops its sshd when its
  // part is over. "" = none (the image runs its own; local clusters). scripts/train passes
  // /usr/sbin/sshd when the image has it (the Dockerfile installs it, with the image's key pair).
  std::string sshd;
  std::vector<std::string> sshd_args;
  int32_t ssh_port = 22;
  // The data roles listen on this host's own address; beyond loopback they need a token
  // (CTRAIN_SERVICE_TOKEN in every host's environment) unless this passes --insecure to them.
  bool insecure = false;
  EnvLookup getenv;                      // SM_* lookup (null: none)
  // A user's script in the trainer role instead of `ctrain train` (launch/entry_point.h):
  // --entry-point SCRIPT [ARGS...] (empty: none; the hyperparameter sagemaker_program also names
  // one). `python`: the interpreter of a .py script, found on PATH.
  std::vector<std::string> entry_point;
  std::string python = "python3";
};

// Runs this host's roles; returns the process exit status (0 = success).
int RunLaunch(const LaunchOptions& options);

// `ctrain launch --print-environment`: reads the contract and the hyperparameters, plans this
// host's role and makes that role's channel checks, as RunLaunch does, then prints ctrain's
// view as one JSON object on stdout (the SageMaker training toolkit's names where it has them):
//   sm_root, current_host, hosts, current_group_name, current_instance_type,
//   instance_groups [{instance_group_name, instance_type, hosts}] (one "homogeneousCluster" group
//   of every host when resourceconfig.json has none), is_hetero (more than one group),
//   channels {name: {TrainingInputMode, dir, InstanceGroupNames}}, hyperparameters (every key,
//   decoded as the toolkit's read_hyperparameters), user_hyperparameters (without the platform
//   keys: the toolkit's Environment().hyperparameters), platform_hyperparameters (their names),
//   training_options (typed), data_group, role ("trainer", "mpi-peer", "data", "ps"), train_hosts,
//   mpi_leader, dispatcher, runs_dispatcher, bind_address (a data host's servers listen there:
//   its --host-address or its name, resolved), insecure, trainer_inputs (the trainer's input flags),
//   entry_point (a user's script on a trainer host: {argv, dir, env}, env being the variables it
//   gets, launch/entry_point.h; {} otherwise),
//   notes, num_cpus (online CPUs, as the toolkit's multiprocessing.cpu_count()), model_dir,
//   output_data_dir, checkpoint_dir; processes_per_host, world_size (MPI ranks; 0: none),
//   custom_mpi_options, rank_intra_op_threads; parameter_servers, ps_source, ps_shard,
//   worker_index, num_workers (a parameter-server job; -1: not this host).
// Starts nothing and writes no file. Returns 0, or 1 with RunLaunch's error on stderr.
int PrintEnvironment(const LaunchOptions& options);

// SageMaker's limit on a training job's FailureReason (DescribeTrainingJob), in bytes.
inline constexpr size_t kFailureReasonMaxBytes = 1024;

// The failure file's content for `reason`: newlines folded to spaces, one line ending in
// "\n", at most kFailureReasonMaxBytes bytes in all; a longer reason is cut at a UTF-8
// character boundary and ends with " ... [truncated: N bytes]" (N: the reason's length).
std::string FailureLine(const std::string& reason);

// Writes FailureLine(reason) to `path` (output/failure), creating its directory. Written
// once: the first failure of a launch is its root cause, so an existing file is kept
// (AlreadyExists naming it); RunLaunch removes the file when it starts. Errors: IOError.
Status WriteFailure(const std::string& path, const std::string& reason);

// The files of a File/FastFile channel directory: regular files (symlinks followed),
// recursively, sorted; names starting with '.' skipped. Errors: NotFound for a missing
// directory, InvalidArgument for an empty one (naming the channel).
StatusOr<std::vector<std::string>> ChannelFiles(const Channel& channel);

}  // namespace ctrain::launch
