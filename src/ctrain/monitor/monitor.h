// A role's monitor: samples this process every interval (monitor/proc_sampler.h,
// and monitor/nvml.h where NVML loads) plus any sources the role adds, and
// writes every scalar twice under `dir` (docs/launch.md#monitoring):
//   dir/events.out.tfevents.*   TensorBoard event file (monitor/event_file.h)
//   dir/metrics.jsonl           one JSON object per line:
//                               {"time": unix seconds, "step": N, "kind": "system"|<role's kind>,
//                                "values": {"cpu/process_percent": 37.5, ...}}
// The first line is {"kind": "start", "time", "role", "pid", "cores", "gpus", "interval_ms"}.
//
// Record()'s lines reach the files at the next sample (every interval) or Close.
// Steps: Record() names the step of its scalars (the trainer's global step);
// system samples take the latest step recorded, or the sample count when the role
// records none, so every tag's steps never decrease within one run.
//
// Thread safety: Record and AddSource may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/monitor/event_file.h"

namespace ctrain::monitor {

struct MonitorOptions {
  std::string dir;          // created if missing
  std::string role;         // "trainer", "data-worker", "dispatcher", ... (the start line)
  int64_t interval_ms = 1000;
  bool gpu = true;          // try NVML
};

class Monitor {
 public:
  // Opens both files and starts the sampling thread.
  // Errors: InvalidArgument for interval_ms < 10 or an empty dir; the file system's.
  static StatusOr<std::unique_ptr<Monitor>> Start(const MonitorOptions& options);
  ~Monitor();  // Close()

  // Writes `scalars` at `step` now, as `kind` ("train", "eval", ...).
  void Record(const std::string& kind, int64_t step, const std::vector<Scalar>& scalars);
  // Called on the sampling thread at every interval; its scalars join the system sample.
  void AddSource(std::function<std::vector<Scalar>()> source);

  // Takes a last sample, stops the thread, closes the files. Idempotent. Returns
  // the first write error of the run, if any (sampling goes on after one).
  Status Close();

  const std::string& event_file() const;

  struct Impl;

 private:
  explicit Monitor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `dir` + "/rank<R>" for rank R of an mpirun job of several ranks
// (OMPI_COMM_WORLD_SIZE > 1), else `dir`: every rank monitors its own process.
std::string RankDir(const std::string& dir);

}  // namespace ctrain::monitor
