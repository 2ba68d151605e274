#include "ctrain/service/security_options.h"

#include "ctrain/service/auth.h"

namespace ctrain::service {

StatusOr<ChannelConfig> SecurityOptions::Channel() const {
  ChannelConfig c;
  CTRAIN_ASSIGN_OR_RETURN(c.token, LoadToken(token_file));
  c.tls_ca = tls_ca;
  c.training_job_name = training_job_name;
  if (!tls_ca.empty()) {  // a client certificate only goes with TLS to the server
    c.tls_cert = tls_cert;
    c.tls_key = tls_key;
  }
  return c;
}

Status SecurityOptions::ApplyTo(ServerConfig* server) const {
  CTRAIN_ASSIGN_OR_RETURN(server->token, LoadToken(token_file));
  server->tls_cert = tls_cert;
  server->tls_key = tls_key;
  server->tls_ca = tls_client_ca;
  server->training_job_name = training_job_name;
  return Status::OK();
}

}  // namespace ctrain::service
