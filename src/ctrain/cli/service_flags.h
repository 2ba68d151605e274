// Flags shared by the service commands (data-service dispatcher/worker/read/
// status/shutdown, train --data-service): bind address, port, token and TLS
// files (service/server.h, service/channel.h, service/auth.h), and the
// data-service client options (dataservice/client.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/client_settings.h"
#include "ctrain/service/security_options.h"
#include "ctrain/service/server.h"

namespace ctrain::cli {

// --token-file, --tls-cert, --tls-key, --tls-ca onto `s`. `server`: the process
// also serves (adds --tls-client-ca; --tls-cert/--tls-key are then its server
// certificate, and also its client certificate towards the dispatcher).
void RegisterSecurityFlags(CLI::App* app, service::SecurityOptions* s, bool server = false);

struct SecurityFlags : service::SecurityOptions {
  void Register(CLI::App* app, bool server = false) { RegisterSecurityFlags(app, this, server); }
};

struct ServerFlags {
  std::string bind = "127.0.0.1";
  int port = 0;
  bool insecure = false;  // --insecure (service/server.h CheckExposure)
  SecurityFlags security;
  void Register(CLI::App* app, int default_port);
  StatusOr<service::ServerConfig> Config() const;
};

// --data-service and the job options of a data-service client.
struct DataServiceClientFlags : dataservice::DataServiceSettings {
  CLI::Option* consumer_index_opt = nullptr;  // given explicitly? (mpirun: the rank otherwise)
  // `required`: --data-service must be given (read); train: optional.
  void Register(CLI::App* app, bool required);
  // The settings as parsed (consumer_index_given from the command line).
  dataservice::DataServiceSettings Settings() const;
  StatusOr<dataservice::DataServiceClientOptions> Options(bool ordered, const std::string& feature_map) const {
    return Settings().Options(ordered, feature_map);
  }
};

}  // namespace ctrain::cli
