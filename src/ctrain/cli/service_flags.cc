#include "ctrain/cli/service_flags.h"

namespace ctrain::cli {

void RegisterSecurityFlags(CLI::App* app, service::SecurityOptions* s, bool server) {
  app->add_option("--token-file,--token_file", s->token_file,
                  "File holding the service token (default: $CTRAIN_SERVICE_TOKEN; none = no authentication)");
  app->add_option("--tls-cert,--tls_cert", s->tls_cert,
                  server ? "TLS: this server's certificate chain (PEM); also sent to the dispatcher when it asks"
                         : "TLS: this client's certificate chain (PEM), for servers that require one");
  app->add_option("--tls-key,--tls_key", s->tls_key, "TLS: the private key of --tls-cert (PEM)");
  app->add_option("--tls-ca,--tls_ca", s->tls_ca, "TLS: CA certificates (PEM) to verify the servers this process calls");
  app->add_option("--training-job-name,--training_job_name", s->training_job_name,
                  server ? "The training job this server serves: calls of another job's clients are refused"
                         : "The training job this client belongs to: a server of another job refuses it");
  if (server)
    app->add_option("--tls-client-ca,--tls_client_ca", s->tls_client_ca,
                    "TLS: require client certificates signed by these CAs (PEM; mutual TLS)");
}

void ServerFlags::Register(CLI::App* app, int default_port) {
  port = default_port;
  app->add_option("--bind", bind, "Address to listen on (loopback by default; beyond it a token, TLS client "
                                  "certificates or --insecure)")
      ->capture_default_str();
  app->add_option("--port", port, "Port to listen on (0 = a free one, printed at start)")->capture_default_str();
  app->add_flag("--insecure", insecure,
                "Serve beyond loopback without authentication (no token, no TLS client certificates): only on a "
                "network that only the job's hosts reach; refused otherwise");
  security.Register(app, /*server=*/true);
}

StatusOr<service::ServerConfig> ServerFlags::Config() const {
  service::ServerConfig c;
  c.bind = bind;
  c.port = port;
  c.insecure = insecure;
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
  app->add_option("--data-service-wait-seconds,--data_service_wait_seconds", wait_seconds,
                  "The longest wait for the dispatcher, a live worker or the next batch before failing (0 = no "
                  "limit)")
      ->capture_default_str();
  RegisterSecurityFlags(app, &security);
}

dataservice::DataServiceSettings DataServiceClientFlags::Settings() const {
  dataservice::DataServiceSettings s = *this;
  s.consumer_index_given = consumer_index_opt != nullptr && consumer_index_opt->count() > 0;
  return s;
}

}  // namespace ctrain::cli
