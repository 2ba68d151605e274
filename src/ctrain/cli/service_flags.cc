#include "ctrain/cli/service_flags.h"

#include <cstdlib>

#include "ctrain/base/signals.h"
#include "ctrain/dataservice/dispatcher_state.h"
#include "ctrain/service/auth.h"

namespace ctrain::cli {

void SecurityFlags::Register(CLI::App* app, bool server) {
  app->add_option("--token-file,--token_file", token_file,
                  "File holding the service token (default: $CTRAIN_SERVICE_TOKEN; none = no authentication)");
  app->add_option("--tls-cert,--tls_cert", tls_cert,
                  server ? "TLS: this server's certificate chain (PEM); also sent to the dispatcher when it asks"
                         : "TLS: this client's certificate chain (PEM), for servers that require one");
  app->add_option("--tls-key,--tls_key", tls_key, "TLS: the private key of --tls-cert (PEM)");
  app->add_option("--tls-ca,--tls_ca", tls_ca, "TLS: CA certificates (PEM) to verify the servers this process calls");
  if (server)
    app->add_option("--tls-client-ca,--tls_client_ca", tls_client_ca,
                    "TLS: require client certificates signed by these CAs (PEM; mutual TLS)");
}

StatusOr<service::ChannelConfig> SecurityFlags::Channel() const {
  service::ChannelConfig c;
  CTRAIN_ASSIGN_OR_RETURN(c.token, service::LoadToken(token_file));
  c.tls_ca = tls_ca;
  if (!tls_ca.empty()) {  // a client certificate only goes with TLS to the server
    c.tls_cert = tls_cert;
    c.tls_key = tls_key;
  }
  return c;
}

Status SecurityFlags::ApplyTo(service::ServerConfig* server) const {
  CTRAIN_ASSIGN_OR_RETURN(server->token, service::LoadToken(token_file));
  server->tls_cert = tls_cert;
  server->tls_key = tls_key;
  server->tls_ca = tls_client_ca;
  return Status::OK();
}

void ServerFlags::Register(CLI::App* app, int default_port) {
  port = default_port;
  app->add_option("--bind", bind, "Address to listen on (loopback by default; set a token beyond it)")
      ->capture_default_str();
  app->add_option("--port", port, "Port to listen on (0 = a free one, printed at start)")->capture_default_str();
  security.Register(app, /*server=*/true);
}

StatusOr<service::ServerConfig> ServerFlags::Config() const {
  service::ServerConfig c;
  c.bind = bind;
  c.port = port;
  CTRAIN_RETURN_IF_ERROR(security.ApplyTo(&c));
  return c;
}

void DataServiceClientFlags::Register(CLI::App* app, bool required) {
  auto* o = app->add_option("--data-service,--data_service", address,
                            "Read the training data through the data service whose dispatcher is HOST:PORT");
  if (required) o->required();
  app->add_option("--processing-mode,--processing_mode", processing_mode,
                  "distributed_epoch (each example once per epoch across workers) or parallel_epochs (each worker "
                  "the whole dataset)")
      ->capture_default_str();
  app->add_option("--job-name,--job_name", job_name,
                  "Data-service job to join or create (default: job-<dataset fingerprint>-<mode>); trainers sharing it "
                  "split each epoch, a restarted trainer resumes it");
  app->add_option("--num-splits,--num_splits", num_splits, "distributed_epoch: splits per epoch")->capture_default_str();
  consumer_index_opt =
      app->add_option("--consumer-index,--consumer_index", consumer_index,
                      "This trainer's index within the job (default: the MPI rank under mpirun, else 0)")
          ->capture_default_str();
  app->add_option("--data-service-compression,--data_service_compression", compression,
                  "Batch compression on the wire: none, zstd, or auto (zstd unless the worker is on loopback)")
      ->capture_default_str();
  app->add_option("--data-service-buffer-bytes,--data_service_buffer_bytes", buffer_bytes,
                  "Bytes of received batches buffered ahead of the trainer")
      ->capture_default_str();
  app->add_option("--data-service-max-open-splits,--data_service_max_open_splits", max_open_splits,
                  "Splits streamed at once")
      ->capture_default_str();
  security.Register(app);
}

StatusOr<dataservice::DataServiceClientOptions> DataServiceClientFlags::Options(bool ordered,
                                                                                const std::string& feature_map) const {
  dataservice::DataServiceClientOptions o;
  o.dispatcher = address;
  CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(address, "--data-service"));
  CTRAIN_ASSIGN_OR_RETURN(o.processing_mode, dataservice::ParseProcessingMode(processing_mode));
  CTRAIN_ASSIGN_OR_RETURN(o.channel, security.Channel());
  o.job_name = job_name;
  o.num_splits = num_splits;
  o.consumer_index = consumer_index;
  // Under mpirun every rank is one trainer of the job: by default its rank is its index.
  if (consumer_index_opt != nullptr && consumer_index_opt->count() == 0)
    if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank != nullptr && *rank != '\0')
      o.consumer_index = std::atoi(rank);
  if (compression != "auto" && compression != "none" && compression != "zstd")
    return InvalidArgumentError("--data-service-compression must be none, zstd or auto, got \"" + compression + "\"");
  o.compression = compression;
  o.max_buffer_bytes = buffer_bytes;
  o.max_open_splits = max_open_splits;
  o.ordered = ordered;
  o.feature_map = feature_map;
  o.stop = PendingInterruptFlag();
  return o;
}

}  // namespace ctrain::cli
