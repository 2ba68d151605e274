// A data-service worker: runs the input pipeline for the splits trainers ask
// it for and streams the batches (docs/data-service.md).
//
//   ctrain data-service worker --dispatcher HOST:P [--port 0] [--bind ADDR] [--threads N]
//                              [--token-file F] [--exit-when-idle [--idle-grace-seconds S]]
//                              [--dispatcher-wait-seconds S]
//
// One StreamSplit call per split: the trainer's first message names the
// dataset, the split, the batches to skip (already consumed) and its first
// credits; later messages grant more credits. A producer thread reads the
// split (dataset_def.h PlanSplitRead), encodes frames (frame_codec.h) and
// queues them; the call's thread writes one frame per credit. The queued bytes
// of all streams are bounded by max_buffer_bytes (a stream may always queue
// one frame, so the bound is max_buffer_bytes + one frame per stream).
//
// The worker heartbeats the dispatcher (registering itself on the first one)
// and keeps retrying while it is away, saying so every few seconds, for at
// most `dispatcher_wait` (then Run fails with DeadlineExceeded naming
// --dispatcher-wait-seconds). It exits (Run returns OK) after `data-service
// shutdown`, on a stop signal, or with exit_when_idle when it is idle (no
// stream open and no unfinished job at the dispatcher) and either it saw work
// since it registered (a job running or created since then: the last job
// finished) or no work arrived within
// `idle_grace` of registering (a long-lived dispatcher that holds only
// finished jobs does not make a new worker exit at once). Before exiting it
// tells the dispatcher it is leaving, so no split is routed to it any more.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/service/channel.h"
#include "ctrain/service/server.h"

namespace ctrain::dataservice {

struct WorkerOptions {
  service::ServerConfig server;
  std::string dispatcher;            // HOST:PORT
  service::ChannelConfig channel;    // to the dispatcher
  std::string worker_address;        // advertised HOST:PORT; "" = the bound address
  int32_t threads = 1;               // parse threads per split stream (num_parallel_calls)
  int64_t max_buffer_bytes = int64_t{64} << 20;
  std::chrono::milliseconds heartbeat{500};
  bool exit_when_idle = false;
  // exit_when_idle: how long a worker that has seen no work waits for some
  // after registering (0 = no limit).
  std::chrono::seconds idle_grace{600};
  // The longest the dispatcher may stay unreachable (from the start, or since
  // it last answered) before Run fails (0 = no limit).
  std::chrono::seconds dispatcher_wait{600};
  int zstd_level = 1;
  // A stream whose client grants no credit for this long while a batch waits
  // is dropped (a log line; the client re-reads the rest when it reads again),
  // so a stalled trainer does not hold the worker's buffer and pipeline.
  // 0 = never.
  std::chrono::milliseconds stream_idle_timeout{600000};
  std::function<void(const std::string&)> log;  // null: stderr "ctrain: worker: ..."
  // Called at every heartbeat (monitoring): batches/s and bytes/s produced over the
  // last >= 0.5 s, and the fill of the frame queue ahead of credits, [0, 1]. Null: none.
  std::function<void(double batches_per_sec, double bytes_per_sec, double queue_fill)> on_stats;
};

class Worker {
 public:
  // Starts serving (the dispatcher need not be up yet). Errors: StartServer's;
  // InvalidArgument for a bad dispatcher address or threads < 1.
  static StatusOr<std::unique_ptr<Worker>> Start(const WorkerOptions& options);
  ~Worker();

  const std::string& address() const;  // as advertised to the dispatcher

  // Heartbeats until shutdown / idle exit / *stop, then stops the server
  // (open streams are cancelled after a 2 s grace).
  Status Run(const std::atomic<int>* stop);

  struct Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
int64_t ProcessRssBytes();

}  // namespace ctrain::dataservice
