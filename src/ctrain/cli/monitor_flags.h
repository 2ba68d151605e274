// --monitor-dir / --monitor-interval-ms of `data-service dispatcher|worker`
// (monitor/monitor.h; docs/launch.md#monitoring). `train` registers the same two
// flags onto job::TrainJobOptions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/monitor/monitor.h"

namespace ctrain::cli {

struct MonitorFlags {
  std::string dir;
  int64_t interval_ms = 1000;
  void Register(CLI::App* sub);
  // Null when --monitor-dir is not given. Under mpirun each rank gets dir/rank<R>.
  StatusOr<std::unique_ptr<monitor::Monitor>> Start(const std::string& role) const;
};

}  // namespace ctrain::cli
