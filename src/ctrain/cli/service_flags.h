// Flags shared by the service commands (data-service dispatcher/worker/read/
// status/shutdown, train --data-service): bind address, port, token and TLS
// files (service/server.h, service/channel.h, service/auth.h), and the
// data-service client options (dataservice/client.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/service/channel.h"
#include "ctrain/service/server.h"

namespace ctrain::cli {

struct SecurityFlags {
  std::string token_file;
  std::string tls_cert, tls_key, tls_ca;
  std::string tls_client_ca;  // servers: require client certificates signed by this CA (mutual TLS)
  // `server`: the process also serves (adds --tls-client-ca; --tls-cert/--tls-key are then its
  // server certificate, and also its client certificate towards the dispatcher).
  void Register(CLI::App* app, bool server = false);
  // The token (file, else CTRAIN_SERVICE_TOKEN) and TLS files.
  StatusOr<service::ChannelConfig> Channel() const;
  Status ApplyTo(service::ServerConfig* server) const;
};

struct ServerFlags {
  std::string bind = "127.0.0.1";
  int port = 0;
  SecurityFlags security;
  void Register(CLI::App* app, int default_port);
  StatusOr<service::ServerConfig> Config() const;
};

// --data-service and the job options of a data-service client.
struct DataServiceClientFlags {
  std::string address;
  std::string processing_mode = "distributed_epoch";
  std::string job_name;
  int32_t num_splits = 8;
  int32_t consumer_index = 0;
  CLI::Option* consumer_index_opt = nullptr;  // given explicitly? (mpirun: the rank otherwise)
  std::string compression = "auto";
  int64_t buffer_bytes = int64_t{256} << 20;
  int32_t max_open_splits = 4;
  SecurityFlags security;
  // `with_address`: add --data-service (train: optional; read: required).
  void Register(CLI::App* app, bool required);
  StatusOr<dataservice::DataServiceClientOptions> Options(bool ordered, const std::string& feature_map) const;
};

}  // namespace ctrain::cli
