// The monitoring a launched run left behind (docs/launch.md#monitoring), as
// `ctrain report` reads it: every directory under RUN_DIR holding a metrics.jsonl
// (monitor/monitor.h) and a role.json beside it or one level up (mpirun ranks:
// <role>/rank<R>/), written by `ctrain launch`:
//   {"host": "algo-1", "role": "trainer"|"data-worker"|"dispatcher",
//    "instance_group": "train", "instance_type": "ml.g5.xlarge", "group_hosts": 1, "ranks": 1}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::report {

struct Sample {
  double time = 0;  // unix seconds
  int64_t step = 0;
  std::map<std::string, double> values;  // null values are left out
};

struct RoleSeries {
  std::string dir;
  std::string host, role, instance_group, instance_type;
  int32_t group_hosts = 1;
  int32_t rank = 0;                 // mpirun rank (from rank<R>), 0 otherwise
  std::vector<Sample> system;       // kind "system"
  std::vector<Sample> train;        // kind "train"
  std::vector<Sample> eval;         // kind "eval"
};

struct RunData {
  std::string dir;
  std::string name;  // the directory's last component
  std::vector<RoleSeries> roles;  // sorted by host, role, rank
  double start_time = 0;          // earliest sample
};

// Errors: NotFound when RUN_DIR holds no metrics.jsonl; InvalidArgument naming
// the file and line of a malformed JSON line or role.json.
StatusOr<RunData> LoadRun(const std::string& dir);

}  // namespace ctrain::report
