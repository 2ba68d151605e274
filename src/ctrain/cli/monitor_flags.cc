#include "ctrain/cli/monitor_flags.h"

namespace ctrain::cli {

void MonitorFlags::Register(CLI::App* sub) {
  sub->add_option("--monitor-dir,--monitor_dir", dir,
                  "Sample this process (CPU total and per core, RSS, GPU via NVML) and the role's own figures into "
                  "TensorBoard event files and metrics.jsonl here");
  sub->add_option("--monitor-interval-ms,--monitor_interval_ms", interval_ms, "Sampling interval of --monitor-dir")
      ->capture_default_str();
}

StatusOr<std::unique_ptr<monitor::Monitor>> MonitorFlags::Start(const std::string& role) const {
  if (dir.empty()) return std::unique_ptr<monitor::Monitor>();
  monitor::MonitorOptions o;
  o.dir = monitor::RankDir(dir);
  o.role = role;
  o.interval_ms = interval_ms;
  return monitor::Monitor::Start(o);
}

}  // namespace ctrain::cli
