// The data-service dispatcher: registers datasets, keeps jobs, hands splits to
// trainers and tracks the workers (docs/data-service.md).
//
//   ctrain data-service dispatcher --port P [--bind ADDR] [--work-dir DIR] [--token-file F]
//
// State lives in DispatcherState (dispatcher_state.h); with a work dir every
// change is journaled (service/journal.h) before it takes effect, so a
// dispatcher killed at any moment and restarted on the same dir resumes its
// jobs: no split lost, none repeated. Without a work dir the state is in
// memory only (a restart forgets the jobs).
//
// Workers heartbeat every heartbeat interval; one that misses
// `worker_timeout` is dead: no new split goes to it, and a trainer whose
// stream to it broke is sent to another worker for the same split.
//
// Thread safety: the gRPC handlers run on gRPC's threads; one mutex guards
// the state.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/service/server.h"

namespace ctrain::dataservice {

struct DispatcherOptions {
  service::ServerConfig server;
  std::string work_dir;  // "" = no journal
  std::chrono::milliseconds worker_timeout{5000};
  // Compact the journal (rewrite it as a snapshot) past this size.
  uint64_t journal_compact_bytes = uint64_t{16} << 20;
  std::function<void(const std::string&)> log;  // null: stderr "ctrain: dispatcher: ..."
};

class Dispatcher {
 public:
  // Replays the journal (if any) and starts serving. Errors: the journal's
  // (FailedPrecondition when another dispatcher holds the work dir, DataLoss
  // for a damaged one); StartServer's.
  static StatusOr<std::unique_ptr<Dispatcher>> Start(const DispatcherOptions& options);
  ~Dispatcher();

  const std::string& address() const;
  int port() const;

  // Serves until a Shutdown RPC (then it keeps answering heartbeats for a
  // grace period so that workers hear of it) or until *stop is non-zero
  // (SIGTERM), then stops the server and closes the journal.
  Status Run(const std::atomic<int>* stop);

  // The status document `data-service status --json` prints.
  std::string StatusJson() const;

  struct Impl;

 private:
  explicit Dispatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrain::dataservice
