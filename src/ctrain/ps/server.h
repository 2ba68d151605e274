// A parameter server: one ParameterShard (ps/shard.h) behind the
// ParameterServer gRPC service (ps/parameter_server.proto), started with the
// shared service plumbing (service/server.h: loopback by default, token, TLS).
//
//   ctrain ps --port P --shard I --num-shards S [--partitioner fixed_size|mod]
//             [--bind ADDR] [--token-file F] [--model-dir DIR]
//
// Every call checks the token (UNAUTHENTICATED without it); malformed
// requests get InvalidArgument. Run() serves until *stop (SIGTERM/SIGINT)
// and then shuts the server down (sync rounds in progress are aborted).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/ps/shard.h"
#include "ctrain/service/server.h"

namespace ctrain::ps {

struct ServerOptions {
  service::ServerConfig server;
  ShardOptions shard;
  // Run() returns (exit 0) once every worker of the job said Done (PsClient::Done), after
  // answering it: `ctrain ps --exit-when-workers-done`, what ctrain launch starts.
  bool exit_when_workers_done = false;
};

class ParameterServer {
 public:
  // Errors: ParameterShard::Create's (restore), StartServer's.
  static StatusOr<std::unique_ptr<ParameterServer>> Start(const ServerOptions& options);
  ~ParameterServer();

  const std::string& address() const;
  ParameterShard& shard();
  // Serves until *stop becomes non-zero (or, with exit_when_workers_done, every worker
  // said Done), then stops the server.
  Status Run(const std::atomic<int>* stop);

  struct Impl;

 private:
  explicit ParameterServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrain::ps
