// What a process presents and trusts on its gRPC connections: the shared
// token (service/auth.h) and the TLS files (PEM). One struct for servers and
// clients; the CLI registers it as --token-file, --tls-cert, --tls-key,
// --tls-ca and (servers) --tls-client-ca, and the Python package and the
// launcher fill it directly.
#pragma once

#include <string>

#include "ctrain/base/status.h"
#include "ctrain/service/channel.h"
#include "ctrain/service/server.h"

namespace ctrain::service {

struct SecurityOptions {
  std::string token_file;  // empty: $CTRAIN_SERVICE_TOKEN, else no authentication
  std::string tls_cert;    // this process's certificate chain (server certificate; client certificate)
  std::string tls_key;     // the private key of tls_cert
  std::string tls_ca;      // CAs that verify the servers this process calls (TLS on its client channels)
  std::string tls_client_ca;  // servers: require client certificates signed by these CAs (mutual TLS)
  // The training job (auth.h kTrainingJobHeader): sent by clients, served by
  // servers, which refuse callers of another job. "" = none.
  std::string training_job_name;

  // The client side: token and TLS files. Errors: the token file's (auth.h LoadToken).
  StatusOr<ChannelConfig> Channel() const;
  // The server side: token, certificate, key and client CA into `server`.
  Status ApplyTo(ServerConfig* server) const;
};

}  // namespace ctrain::service
