#include "ctrain/monitor/monitor.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "ctrain/monitor/nvml.h"
#include "ctrain/monitor/proc_sampler.h"

namespace ctrain::monitor {
namespace {
double Now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
}  // namespace

struct Monitor::Impl {
  MonitorOptions options;
  std::mutex mu;  // guards everything below except the thread control
  std::unique_ptr<EventFileWriter> events;
  std::ofstream jsonl;
  std::string jsonl_path;
  std::vector<std::function<std::vector<Scalar>()>> sources;
  int64_t step = -1;  // latest recorded step
  int64_t samples = 0;
  Status error;
  ProcSampler proc;
  std::unique_ptr<NvmlSampler> nvml;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false, close_called = false;  // under stop_mu
  bool closed = false;                          // under mu
  std::thread thread;

  // Flushes both files when `flush` (the sampler's writes; Record's wait for the next sample).
  void WriteLocked(const std::string& kind, int64_t at, const std::vector<Scalar>& scalars, bool flush) {
    const double t = Now();
    if (Status s = events->Write(t, at, scalars); !s.ok() && error.ok()) error = s;
    if (flush)
      if (Status s = events->Flush(); !s.ok() && error.ok()) error = s;
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [tag, value] : scalars) v[tag] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
    jsonl << nlohmann::json{{"time", t}, {"step", at}, {"kind", kind}, {"values", v}}.dump() << '\n';
    if (flush) jsonl.flush();
    if (!jsonl && error.ok()) error = IOError(jsonl_path + ": write failed");
  }

  void SampleOnce() {
    std::vector<Scalar> s = proc.Sample();
    if (nvml) {
      std::vector<Scalar> g = nvml->Sample();
      s.insert(s.end(), g.begin(), g.end());
    }
    std::vector<std::function<std::vector<Scalar>()>> src;
    {
      std::lock_guard<std::mutex> l(mu);
      src = sources;
    }
    for (auto& f : src) {
      std::vector<Scalar> x = f();
      s.insert(s.end(), x.begin(), x.end());
    }
    std::lock_guard<std::mutex> l(mu);
    ++samples;
    WriteLocked("system", step >= 0 ? step : samples, s, true);
  }

  void Loop() {
    std::unique_lock<std::mutex> l(stop_mu);
    while (!stopping) {
      if (stop_cv.wait_for(l, std::chrono::milliseconds(options.interval_ms), [&] { return stopping; })) break;
      l.unlock();
      SampleOnce();
      l.lock();
    }
  }
};

Monitor::Monitor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Monitor::~Monitor() { Close().IgnoreError(); }

StatusOr<std::unique_ptr<Monitor>> Monitor::Start(const MonitorOptions& options) {
  if (options.dir.empty()) return InvalidArgumentError("--monitor-dir is empty");
  if (options.interval_ms < 10)
    return InvalidArgumentError("--monitor-interval-ms must be >= 10, got " + std::to_string(options.interval_ms));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  CTRAIN_ASSIGN_OR_RETURN(impl->events, EventFileWriter::Open(options.dir));
  impl->jsonl_path = options.dir + "/metrics.jsonl";
  impl->jsonl.open(impl->jsonl_path, std::ios::app);
  if (!impl->jsonl) return IOError(impl->jsonl_path + ": cannot open for appending");
  std::string why;
  if (options.gpu) impl->nvml = NvmlSampler::Open(&why);
  impl->jsonl << nlohmann::json{{"kind", "start"},
                                {"time", Now()},
                                {"role", options.role},
                                {"pid", ::getpid()},
                                {"cores", impl->proc.cores()},
                                {"gpus", impl->nvml ? impl->nvml->devices() : 0},
                                {"interval_ms", options.interval_ms}}
                     .dump()
              << '\n';
  impl->jsonl.flush();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<Monitor>(new Monitor(std::move(impl)));
}

void Monitor::Record(const std::string& kind, int64_t step, const std::vector<Scalar>& scalars) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (impl_->closed) return;
  impl_->step = std::max(impl_->step, step);
  impl_->WriteLocked(kind, step, scalars, false);
}

void Monitor::AddSource(std::function<std::vector<Scalar>()> source) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->sources.push_back(std::move(source));
}

const std::string& Monitor::event_file() const { return impl_->events->path(); }

Status Monitor::Close() {
  {
    std::lock_guard<std::mutex> l(impl_->stop_mu);
    if (impl_->close_called) {
      std::lock_guard<std::mutex> e(impl_->mu);
      return impl_->error;
    }
    impl_->close_called = impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->SampleOnce();  // the last interval
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->closed = true;
  if (Status s = impl_->events->Close(); !s.ok() && impl_->error.ok()) impl_->error = s;
  impl_->jsonl.close();
  return impl_->error;
}

std::string RankDir(const std::string& dir) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (size == nullptr || rank == nullptr || std::atoi(size) <= 1) return dir;
  return dir + "/rank" + rank;
}

}  // namespace ctrain::monitor
