// Starting a gRPC server the same way for every ctrain service (data-service
// dispatcher and workers, parameter servers): the bind address (loopback by
// default), a port (0 = a free one, reported back), optional TLS, message
// size limits. Authentication is per call (auth.h CheckToken).
#pragma once

#include <cstdint>
#include <memory>
#include <chrono>
#include <string>
#include <vector>

#include <grpcpp/server.h>
#include <grpcpp/impl/service_type.h>

#include "ctrain/base/status.h"

namespace ctrain::service {

struct ServerConfig {
  // Address to listen on. 127.0.0.1 unless the user asks: binding beyond
  // loopback without authentication (a token, or TLS requiring client
  // certificates) is refused unless `insecure` (CheckExposure;
  // docs/data-service.md#security).
  std::string bind = "127.0.0.1";
  bool insecure = false;  // --insecure: serve beyond loopback without authentication (warned about)
  int port = 0;                       // 0: a free port, see RunningServer::port
  std::string token;                  // "" = no token (auth.h)
  // The training job this server serves ("" = any): a call from a client of
  // another job is refused (auth.h CheckCaller). `role` names the server in
  // that message ("data-service dispatcher").
  std::string training_job_name;
  std::string role = "server";
  // TLS (PEM files): cert + key serve TLS; ca additionally requires and
  // verifies client certificates (mutual TLS).
  std::string tls_cert, tls_key, tls_ca;
  // Largest request the server accepts; a bigger one gets RESOURCE_EXHAUSTED
  // from gRPC before any handler sees it.
  int64_t max_receive_message_bytes = 4 << 20;
  // Largest response (a batch frame).
  int64_t max_send_message_bytes = int64_t{1} << 30;
};

struct RunningServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::string address;  // "bind:port" as clients reach it ("[v6]:port" for IPv6)
};

// "host:port" for a host and port; IPv6 literals get brackets.
std::string JoinHostPort(const std::string& host, int port);

// Checks "HOST:PORT" (PORT in [1, 65535]). Errors: InvalidArgument naming `flag`.
Status CheckHostPort(const std::string& address, const std::string& flag);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

// Builds and starts a server with `services` (not owned; they must outlive it).
// Errors: InvalidArgument for a bad port or TLS half-configured; NotFound for
// an unreadable PEM file; Unavailable "cannot listen on ADDR" when the bind
// fails (address in use, not local).
StatusOr<RunningServer> StartServer(const ServerConfig& config, const std::vector<grpc::Service*>& services);

// The content of a PEM file given by `flag`. Errors: NotFound, InvalidArgument (empty).
StatusOr<std::string> ReadPem(const std::string& path, const char* flag);

// Binding beyond loopback (any address but 127.0.0.0/8, ::1, localhost; 0.0.0.0 included)
// needs authentication: a token, or TLS that requires client certificates (tls_ca), or
// `insecure`. Errors: FailedPrecondition naming the address and the ways out. StartServer
// calls it first, so every service (data-service dispatcher and workers, parameter servers)
// refuses the same way.
Status CheckExposure(const ServerConfig& config);

// A warning to print when `config` binds beyond loopback without authentication (which
// CheckExposure allows only with `insecure`), or "".
std::string ExposureWarning(const ServerConfig& config);

// The numeric address a server of this host binds for `host` (a name such as SageMaker's
// "algo-1", or an address): an address is returned as it is, a name is resolved
// (getaddrinfo, the first IPv4 address, else the first IPv6 one). Errors: NotFound naming
// the host when it does not resolve.
StatusOr<std::string> ResolveBindAddress(const std::string& host);

// Whether a TCP connection to host:port is accepted within `timeout` (the connection is closed at
// once): a probe for a peer's daemon that is not a gRPC service (sshd, before mpirun). False
// when the host does not resolve.
bool CanConnect(const std::string& host, int port, std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

}  // namespace ctrain::service
