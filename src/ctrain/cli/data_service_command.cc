// `ctrain data-service dispatcher | worker | read | status | shutdown`
// (docs/data-service.md). The processes live in the library
// (dataservice/dispatcher.h, worker.h, client.h, admin.h); this file parses flags.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/cli/monitor_flags.h"
#include "ctrain/cli/service_flags.h"
#include "ctrain/dataservice/admin.h"
#include "ctrain/dataservice/dispatcher.h"
#include "ctrain/dataservice/worker.h"
#include "ctrain/io/file.h"
#include "ctrain/train/threads.h"

namespace ctrain::cli {
namespace {

// Says where a server listens: one line on stdout (scripts and tests read it),
// and the exposure warning on stderr.
void Announce(const char* what, const std::string& address, const service::ServerConfig& config) {
  std::printf("ctrain: %s listening on %s\n", what, address.c_str());
  std::fflush(stdout);
  if (const std::string w = service::ExposureWarning(config); !w.empty())
    Warnf("%s\n", w.c_str());
}

struct DispatcherFlags {
  ServerFlags server;
  std::string work_dir;
  int64_t worker_timeout_ms = 5000;
  MonitorFlags monitor;
};

Status RunDispatcher(const DispatcherFlags& fl) {
  dataservice::DispatcherOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.server, fl.server.Config());
  o.work_dir = fl.work_dir;
  if (fl.worker_timeout_ms < 100) return InvalidArgumentError("--worker-timeout-ms must be >= 100");
  o.worker_timeout = std::chrono::milliseconds(fl.worker_timeout_ms);
  InterruptDeferral defer("stopping the data-service dispatcher");  // stop serving, close the journal, exit 0
  CTRAIN_ASSIGN_OR_RETURN(auto d, dataservice::Dispatcher::Start(o));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<monitor::Monitor> mon, fl.monitor.Start("dispatcher"));
  Announce("data-service dispatcher", d->address(), o.server);
  return d->Run(PendingInterruptFlag());
}

struct WorkerFlags {
  ServerFlags server;
  std::string dispatcher, worker_address;
  int32_t threads = 1;
  int64_t buffer_bytes = int64_t{64} << 20;
  int64_t heartbeat_ms = 500;
  int64_t stream_idle_timeout_ms = 600000;
  bool exit_when_idle = false;
  int64_t idle_grace_seconds = 600;
  int64_t dispatcher_wait_seconds = 600;
  MonitorFlags monitor;
};

Status RunWorker(const WorkerFlags& fl) {
  dataservice::WorkerOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.server, fl.server.Config());
  CTRAIN_ASSIGN_OR_RETURN(o.channel, fl.server.security.Channel());
  o.dispatcher = fl.dispatcher;
  o.worker_address = fl.worker_address;
  o.threads = fl.threads;
  o.max_buffer_bytes = fl.buffer_bytes;
  if (fl.heartbeat_ms < 10) return InvalidArgumentError("--heartbeat-ms must be >= 10");
  o.heartbeat = std::chrono::milliseconds(fl.heartbeat_ms);
  o.exit_when_idle = fl.exit_when_idle;
  if (fl.stream_idle_timeout_ms < 0) return InvalidArgumentError("--stream-idle-timeout-ms must be >= 0 (0 = never)");
  o.stream_idle_timeout = std::chrono::milliseconds(fl.stream_idle_timeout_ms);
  if (fl.idle_grace_seconds < 0) return InvalidArgumentError("--idle-grace-seconds must be >= 0 (0 = no limit)");
  if (fl.dispatcher_wait_seconds < 0)
    return InvalidArgumentError("--dispatcher-wait-seconds must be >= 0 (0 = no limit)");
  o.idle_grace = std::chrono::seconds(fl.idle_grace_seconds);
  o.dispatcher_wait = std::chrono::seconds(fl.dispatcher_wait_seconds);
  // glibc gives every thread that frees memory allocated elsewhere its own
  // arena (8 per core by default); gRPC's send buffers and the split pipelines
  // do that all the time, and the arenas keep the memory (+75 MiB measured,
  // docs/performance.md#6-data-service-issue-8). One arena per core keeps the
  // worker's RSS near its byte limits at no measured cost.
  mallopt(M_ARENA_MAX, std::max(2, train::AvailableCpus()));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<monitor::Monitor> mon, fl.monitor.Start("data-worker"));
  if (mon) {  // data/* scalars: the worker's figures at its last heartbeat
    auto last = std::make_shared<std::vector<monitor::Scalar>>();
    auto mu = std::make_shared<std::mutex>();
    o.on_stats = [last, mu](double bps, double Bps, double fill) {
      std::lock_guard<std::mutex> l(*mu);
      *last = {{"data/batches_per_sec", bps}, {"data/bytes_per_sec", Bps}, {"data/queue_fill_percent", 100.0 * fill}};
    };
    mon->AddSource([last, mu] {
      std::lock_guard<std::mutex> l(*mu);
      return *last;
    });
  }
  InterruptDeferral defer("stopping the data-service worker");  // stop serving, exit 0
  CTRAIN_ASSIGN_OR_RETURN(auto w, dataservice::Worker::Start(o));
  Announce("data-service worker", w->address(), o.server);
  return w->Run(PendingInterruptFlag());
}

struct ReadFlags {
  DataServiceClientFlags client;
  std::vector<std::string> train;
  DataFlags data;
  int64_t batch_size = 1024;
  int64_t shuffle_buffer_size = 0;
  uint64_t seed = 0;
  int32_t epochs = 1;
  int32_t num_parallel_reads = 1;
  bool drop_remainder = false;
  std::string output;
  bool discard = false, json = false;
  int64_t pace_us = 0;
};

Status RunRead(ReadFlags& fl) {
  if (fl.output.empty() == !fl.discard) return InvalidArgumentError("give exactly one of --output FILE and --discard");
  if (fl.pace_us < 0) return InvalidArgumentError("--pace-us must be >= 0");
  {  // the output must not replace an input, before any work
    std::vector<io::FlagPath> in, out;
    for (const std::string& p : fl.train) in.push_back({"--train", p});
    in.push_back({"--feature-map", fl.data.feature_map});
    out.push_back({"--output", fl.output});
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out, {}));
    if (!fl.output.empty()) CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--output", fl.output));
  }
  train::StreamInput in;
  in.files = fl.train;
  CTRAIN_ASSIGN_OR_RETURN(in.reader, fl.data.ReaderOptions());
  in.pipeline.shuffle_buffer_size = fl.shuffle_buffer_size;
  in.pipeline.num_parallel_reads = fl.num_parallel_reads;
  in.pipeline.drop_remainder = fl.drop_remainder;
  CTRAIN_ASSIGN_OR_RETURN(dataservice::DataServiceClientOptions o, fl.client.Options(true, fl.data.feature_map));
  mallopt(M_ARENA_MAX, std::max(2, train::AvailableCpus()));  // as the worker (RunWorker)
  CTRAIN_ASSIGN_OR_RETURN(dataservice::ReadResult r,
                          dataservice::ReadThroughService(o, in, fl.batch_size, fl.seed, fl.shuffle_buffer_size > 0,
                                                          fl.epochs, fl.discard ? "" : fl.output, fl.pace_us));
  Logf("read %lld examples in %lld batches (%.1f MB) in %.3f s: %.0f examples/s, %.1f MB/s\n",
               static_cast<long long>(r.examples), static_cast<long long>(r.batches), r.bytes / 1e6, r.seconds,
               r.seconds > 0 ? r.examples / r.seconds : 0.0, r.seconds > 0 ? r.bytes / 1e6 / r.seconds : 0.0);
  if (fl.json) {
    nlohmann::json j{{"examples", r.examples}, {"batches", r.batches}, {"bytes", r.bytes}, {"seconds", r.seconds},
                     {"data_service", r.metrics}};
    std::printf("%s\n", j.dump().c_str());
  }
  return Status::OK();
}

struct AdminFlags {
  std::string address;
  SecurityFlags security;
  bool json = false;
  int64_t timeout_ms = 5000;
};

}  // namespace

Command AddDataServiceCommand(CLI::App& app) {
  CLI::App* group = app.add_subcommand("data-service",
                                       "Disaggregated input: a dispatcher and CPU workers stream ready batches to "
                                       "trainers over gRPC (docs/data-service.md)");
  group->require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<Status()>>> subs;

  auto dfl = std::make_shared<DispatcherFlags>();  // owned by the run functions below (CLI11 points into it)
  CLI::App* d = group->add_subcommand("dispatcher", "Run the dispatcher: datasets, jobs, splits, worker registry");
  dfl->server.Register(d, 0);
  d->add_option("--work-dir,--work_dir", dfl->work_dir,
                "Journal the state here (append-only, fsync'd) so that a restart resumes every job");
  d->add_option("--worker-timeout-ms,--worker_timeout_ms", dfl->worker_timeout_ms,
                "A worker silent this long is dead; its splits go to others")
      ->capture_default_str();
  dfl->monitor.Register(d);
  subs.push_back({d, [dfl] { return RunDispatcher(*dfl); }});

  auto wfl = std::make_shared<WorkerFlags>();  // owned by the run functions below (CLI11 points into it)
  CLI::App* w = group->add_subcommand("worker", "Run a worker: read, parse, shuffle and batch splits for trainers");
  w->add_option("--dispatcher", wfl->dispatcher, "The dispatcher's HOST:PORT")->required();
  wfl->server.Register(w, 0);
  w->add_option("--worker-address,--worker_address", wfl->worker_address,
                "HOST:PORT trainers reach this worker at (default: --bind and the port)");
  w->add_option("--threads", wfl->threads, "Parse threads per split stream")->capture_default_str();
  w->add_option("--buffer-bytes,--buffer_bytes", wfl->buffer_bytes, "Bytes of encoded batches queued ahead of trainers")
      ->capture_default_str();
  w->add_option("--heartbeat-ms,--heartbeat_ms", wfl->heartbeat_ms, "Heartbeat interval")->capture_default_str();
  w->add_option("--stream-idle-timeout-ms,--stream_idle_timeout_ms", wfl->stream_idle_timeout_ms,
                "Drop a split stream whose trainer takes no batch for this long (it re-reads the rest later); 0 = never")
      ->capture_default_str();
  w->add_flag("--exit-when-idle,--exit_when_idle", wfl->exit_when_idle,
              "Exit 0 when idle (no stream open, no unfinished job) after the last job it saw finished, or when no "
              "work arrived within --idle-grace-seconds of registering");
  w->add_option("--idle-grace-seconds,--idle_grace_seconds", wfl->idle_grace_seconds,
                "--exit-when-idle: how long to wait for work after registering (0 = no limit)")
      ->capture_default_str();
  w->add_option("--dispatcher-wait-seconds,--dispatcher_wait_seconds", wfl->dispatcher_wait_seconds,
                "The longest the dispatcher may stay unreachable before the worker fails (0 = no limit)")
      ->capture_default_str();
  wfl->monitor.Register(w);
  subs.push_back({w, [wfl] { return RunWorker(*wfl); }});

  auto rfl = std::make_shared<ReadFlags>();  // owned by the run functions below (CLI11 points into it)
  CLI::App* r = group->add_subcommand("read", "Read a dataset through the service (debugging, benchmarks, tests)");
  rfl->client.Register(r, true);
  r->add_option("--train", rfl->train, "Files, globs or directories (as the dispatcher's host sees them)")
      ->required()
      ->expected(1, -1);
  rfl->data.Register(r);
  r->add_option("--batch-size,--batch_size", rfl->batch_size, "Examples per batch")->capture_default_str();
  r->add_option("--shuffle-buffer-size,--shuffle_buffer_size", rfl->shuffle_buffer_size, "0 = no shuffling")
      ->capture_default_str();
  r->add_option("--seed", rfl->seed, "Shuffle seed")->capture_default_str();
  r->add_option("--epochs", rfl->epochs, "Epochs to read")->capture_default_str();
  r->add_option("--num-parallel-reads,--num_parallel_reads", rfl->num_parallel_reads, "Files a worker reads at once")
      ->capture_default_str();
  r->add_option("--drop-remainder,--drop_remainder", rfl->drop_remainder, "Drop each split's last partial batch");
  r->add_option("-o,--output", rfl->output, "Write every example as LibSVM (label id:value, ids as the model sees them)");
  r->add_flag("--discard", rfl->discard, "Only count");
  r->add_flag("--json", rfl->json, "End with one JSON line: examples, batches, bytes, seconds");
  r->add_option("--pace-us,--pace_us", rfl->pace_us,
                "Sleep this long after each batch, standing in for a trainer's step (tests, benchmarks)");
  subs.push_back({r, [rfl] { return RunRead(*rfl); }});

  auto sfl = std::make_shared<AdminFlags>();  // owned by the run functions below (CLI11 points into it)
  CLI::App* s = group->add_subcommand("status", "Show workers, jobs, splits, throughput and input advice");
  s->add_option("address", sfl->address, "The dispatcher's HOST:PORT")->required();
  sfl->security.Register(s);
  s->add_flag("--json", sfl->json, "Print the status document as JSON");
  subs.push_back({s, [sfl]() -> Status {
                    CTRAIN_ASSIGN_OR_RETURN(service::ChannelConfig ch, sfl->security.Channel());
                    CTRAIN_ASSIGN_OR_RETURN(nlohmann::json st, dataservice::GetServiceStatus(sfl->address, ch, sfl->timeout_ms));
                    std::printf("%s", sfl->json ? (st.dump(2) + "\n").c_str() : dataservice::FormatServiceStatus(st).c_str());
                    return Status::OK();
                  }});

  auto xfl = std::make_shared<AdminFlags>();  // owned by the run functions below (CLI11 points into it)
  CLI::App* x = group->add_subcommand("shutdown", "Stop the service: workers exit, then the dispatcher");
  x->add_option("address", xfl->address, "The dispatcher's HOST:PORT")->required();
  xfl->security.Register(x);
  subs.push_back({x, [xfl]() -> Status {
                    CTRAIN_ASSIGN_OR_RETURN(service::ChannelConfig ch, xfl->security.Channel());
                    return dataservice::ShutdownService(xfl->address, ch, xfl->timeout_ms);
                  }});

  Command c;
  c.app = group;
  c.run = [subs]() -> int {
    for (const auto& [sub, fn] : subs)
      if (sub->parsed()) {
        Status st = fn();
        return st.ok() ? 0 : ReportError(st);
      }
    return 2;
  };
  return c;
}

}  // namespace ctrain::cli
