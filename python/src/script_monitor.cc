#include "script_monitor.h"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <utility>

#include <nanobind/stl/string.h>

#include "convert.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace ctrain::python {
namespace {

struct Started {
  Status status;
  ScriptMonitor* monitor = nullptr;  // null with an ok status: CTRAIN_MONITOR_DIR unset
};

ScriptMonitor* g_monitor = nullptr;  // the started one (the atexit handler closes it)

}  // namespace

StatusOr<ScriptMonitor*> ScriptMonitor::Start(const std::string& role) {
  // A bad role is this call's mistake, not the process's: checked before the one start.
  if (role.empty() || role.find('/') != std::string::npos)
    return InvalidArgumentError("monitor role \"" + role + "\": a name such as trainer or data-worker");
  static const Started started = [&role]() -> Started {
    const char* dir = std::getenv("CTRAIN_MONITOR_DIR");
    if (dir == nullptr || *dir == '\0') return {};
    monitor::MonitorOptions o;
    o.dir = monitor::RankDir(dir);
    o.role = role;
    if (const char* ms = std::getenv("CTRAIN_MONITOR_INTERVAL_MS"); ms != nullptr && *ms != '\0') {
      int64_t v = 0;
      const char* end = ms + std::strlen(ms);
      if (std::from_chars(ms, end, v).ptr != end || v < 1)
        return {InvalidArgumentError("CTRAIN_MONITOR_INTERVAL_MS=\"" + std::string(ms) +
                                     "\": a whole number of milliseconds >= 1")};
      o.interval_ms = v;
    }
    StatusOr<std::unique_ptr<monitor::Monitor>> m = monitor::Monitor::Start(o);
    if (!m.ok()) return {Status(m.status().code(), "CTRAIN_MONITOR_DIR: " + std::string(m.status().message()))};
    g_monitor = new ScriptMonitor(std::move(*m), role);  // lives until exit
    return {Status::OK(), g_monitor};
  }();
  if (!started.status.ok()) return started.status;
  if (started.monitor != nullptr && started.monitor->role() != role)
    return InvalidArgumentError("this process is monitored as \"" + started.monitor->role() + "\", not \"" + role +
                                "\" (one role per process)");
  return started.monitor;
}

ScriptMonitor* ScriptMonitor::Current() { return g_monitor; }

ScriptMonitor::ScriptMonitor(std::unique_ptr<monitor::Monitor> m, std::string role)
    : monitor_(std::move(m)), role_(std::move(role)), observer_(monitor_.get(), 1) {
  std::atexit([] {
    if (g_monitor != nullptr) (void)g_monitor->monitor_->Close();
  });
}

void ScriptMonitor::Begin() {
  std::lock_guard<std::mutex> l(mu_);
  have_last_ = false;
}

void ScriptMonitor::OnBatch(double wait_seconds, int64_t examples) {
  std::lock_guard<std::mutex> l(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (have_last_) {
    train::StepInfo s;
    s.global_step = ++steps_;
    s.examples = examples;
    s.step_seconds = std::chrono::duration<double>(now - last_).count();
    s.input_wait_seconds = wait_seconds;
    s.has_loss = false;
    observer_.OnStep(s);
  }
  last_ = now;
  have_last_ = true;
}

void BindScriptMonitor(nb::module_& m) {
  m.def(
      "monitor_start",
      [](const std::string& role) {
        StatusOr<ScriptMonitor*> s = ScriptMonitor::Start(role);
        ThrowIfError(s.status());
        return *s != nullptr;
      },
      "role"_a);
  m.def("monitor_begin", [] {
    if (ScriptMonitor* s = ScriptMonitor::Current()) s->Begin();
  });
  m.def(
      "monitor_step",
      [](double wait_seconds, int64_t examples) {
        if (ScriptMonitor* s = ScriptMonitor::Current()) s->OnBatch(wait_seconds, examples);
      },
      "wait_seconds"_a, "examples"_a);
}

}  // namespace ctrain::python
