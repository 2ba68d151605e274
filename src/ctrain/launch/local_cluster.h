// `ctrain launch --local-cluster SPEC.toml --work-dir DIR`: SageMaker local mode
// without Docker (docs/launch.md#local-clusters). The spec:
//
//   [[group]]                      # one table per instance group, hosts numbered in this order
//   name = "data"                  # instance_group_name
//   instance_type = "ml.c5.xlarge"
//   count = 2
//   [hyperparameters]              # as hyperparameters.json (values written as JSON strings)
//   data_group = "data"
//   epochs = 2
//   [channels.train]               # as inputdataconfig.json + where the data comes from
//   mode = "File"                  # File | FastFile | Pipe
//   files = ["data/tr.tfrecords"]  # files or directories, relative to the spec's directory
//
// For each simulated host algo-1, algo-2, ... it writes DIR/algo-N/ as SageMaker
// would lay out /opt/ml (input/config/*.json with both group-name spellings,
// input/data/<channel>/ holding symlinks to the files, model/, output/,
// checkpoints/), then starts `ctrain launch --sm-root DIR/algo-N` for every host
// at once, on loopback (--host-address algo-N=127.0.0.1), with data-service
// ports picked free so that hosts do not collide. Pipe channels: a feeder
// thread per host and channel creates the FIFO <channel>_<epoch> for each epoch
// and writes the files into it, as SageMaker does.
// It waits for every host; when one fails the others are stopped (SIGTERM).
// Returns 0 when every host exited 0; otherwise prints each host's
// output/failure and returns 1 (or 128 + signal when stopped by one).
// A second run on the same DIR keeps the checkpoints (so it resumes) and
// replaces everything else.
#pragma once

#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/launch/launch.h"

namespace ctrain::launch {

struct LocalGroup {
  std::string name, instance_type;
  int32_t count = 1;
};
struct LocalChannel {
  std::string name;
  InputMode mode = InputMode::kFile;
  std::vector<std::string> files;  // absolute
};
struct LocalClusterSpec {
  std::vector<LocalGroup> groups;
  Hyperparameters hyperparameters;
  std::vector<LocalChannel> channels;
};

// `n` distinct free TCP ports of 127.0.0.1 (each bound to port 0, all held open until every
// one is chosen, then closed). Errors: the socket or bind failure.
StatusOr<std::vector<int>> FreePorts(int n);

// Errors name the spec file and the key (InvalidArgument), or the missing input (NotFound).
StatusOr<LocalClusterSpec> ParseLocalClusterSpec(const std::string& toml_text, const std::string& path);

// `base` gives the per-host launch settings (monitor interval, MPI); its sm_root,
// checkpoint_dir, host addresses and ports are set per host.
int RunLocalCluster(const std::string& spec_path, const std::string& work_dir, const LaunchOptions& base);

}  // namespace ctrain::launch
