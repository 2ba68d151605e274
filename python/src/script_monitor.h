// ScriptMonitor: the monitoring of a Python process under `ctrain launch`
// (CTRAIN_MONITOR_DIR and CTRAIN_MONITOR_INTERVAL_MS, set by launch/launch.cc
// for a user's script: docs/launch.md "Monitoring"). It writes what ctrain's own
// roles write (monitor/monitor.h: metrics.jsonl and TensorBoard events, the
// process's CPU and RSS every interval) into the role's directory
// (monitor::RankDir: rank<R>/ under mpirun), so `ctrain report` prices a
// script's job as it prices ctrain's.
//
// Steps: each batch the script takes is a step (monitor/train_monitor.h, a line
// per step, as `ctrain train` writes; `ctrain report` drops the first as warm-up): train/step_time_ms is the time from one batch handed out to the
// next, train/input_wait_percent the part of it spent waiting for the batch,
// train/examples_per_sec; no train/loss (ctrain never sees it). The first batch
// after Begin() is no step (the time before it is start-up, or another loop).
// python/ctrain/_monitor.py times the batches where the user's loop takes them:
// ctrain.monitor_steps() for any iterable (a DataLoader, a tf.data.Dataset), and
// a DataServicePipeline (and its .as_torch()) by itself.
//
// One per process, started by the first Start(); it lives until exit (an
// atexit handler closes its files). Thread safety: every member may be called
// from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nanobind/nanobind.h>

#include "ctrain/base/status.h"
#include "ctrain/monitor/monitor.h"
#include "ctrain/monitor/train_monitor.h"

namespace ctrain::python {

class ScriptMonitor {
 public:
  // The process's monitor, started by the first call with `role` (the role.json
  // role it stands for: "trainer", "data-worker", ...). Null when
  // CTRAIN_MONITOR_DIR is unset or empty. Errors: InvalidArgument for a bad
  // CTRAIN_MONITOR_INTERVAL_MS or a role other than the one it started with;
  // the monitor's own (an unwritable directory). A failed start is final.
  static StatusOr<ScriptMonitor*> Start(const std::string& role);
  // The started monitor (whatever its role), else null.
  static ScriptMonitor* Current();

  const std::string& role() const { return role_; }
  // A loop starts: the time since the last batch of another one is no step.
  void Begin();
  // A batch of `examples` handed out after `wait_seconds` spent getting it.
  void OnBatch(double wait_seconds, int64_t examples);

 private:
  ScriptMonitor(std::unique_ptr<monitor::Monitor> m, std::string role);

  std::unique_ptr<monitor::Monitor> monitor_;
  const std::string role_;
  std::mutex mu_;
  monitor::TrainMonitor observer_;
  std::chrono::steady_clock::time_point last_;
  bool have_last_ = false;
  int64_t steps_ = 0;
};

// _ctrain.monitor_start(role) -> bool (False: CTRAIN_MONITOR_DIR unset; ValueError: Start's errors),
// monitor_begin() and monitor_step(wait_seconds, examples) on the started monitor (no-ops without one).
void BindScriptMonitor(nanobind::module_& m);

}  // namespace ctrain::python
