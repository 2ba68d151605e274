#include "ctrain/ps/ps_training.h"

#include <cstdio>

#include "ctrain/base/log.h"
#include "ctrain/ps/admin.h"

namespace ctrain::ps {

StatusOr<PsTrainOptions> PsWorkerSettings::Options(const service::ChannelConfig& channel,
                                                   const std::atomic<int>* stop) const {
  if (num_workers < 1) return InvalidArgumentError("--num-workers must be >= 1");
  if (worker_index < 0 || worker_index >= num_workers)
    return InvalidArgumentError("--worker-index " + std::to_string(worker_index) + " not in [0, " +
                                std::to_string(num_workers) + ") (--num-workers " + std::to_string(num_workers) + ")");
  if (!(wait_seconds > 0)) return InvalidArgumentError("--ps-wait-seconds must be > 0");
  if (max_staleness < 0) return InvalidArgumentError("--max-staleness must be >= 0");
  CTRAIN_RETURN_IF_ERROR(CheckMaxMessageBytes(max_message_bytes, "--ps-max-message-bytes"));
  if (!export_dir.empty() && worker_index != 0)
    return InvalidArgumentError("--ps-export-dir: the chief (worker 0) writes the model; leave it out on worker " +
                                std::to_string(worker_index));
  if (dense != "auto" && dense != "servers" && dense != "workers")
    return InvalidArgumentError("--ps-dense " + dense + ": auto, servers or workers");
  if (dense_sync_steps < 1)
    return InvalidArgumentError("--ps-dense-sync-steps " + std::to_string(dense_sync_steps) + " must be >= 1");
  PsTrainOptions o;
  o.export_dir = export_dir;
  // auto: one worker keeps them (nothing to average: local training's dense step, no dense traffic); several
  // workers leave them on the servers (one optimizer over every worker's gradients, as before).
  o.dense_on_workers = dense == "workers" || (dense == "auto" && num_workers == 1);
  o.dense_sync_steps = dense_sync_steps;
  o.client.addresses = addresses;
  o.client.channel = channel;
  o.client.worker_index = worker_index;
  o.client.max_wait = std::chrono::milliseconds(static_cast<int64_t>(wait_seconds * 1000));
  o.client.stop = stop;
  o.client.max_message_bytes = max_message_bytes;
  o.num_workers = num_workers;
  o.sync_replicas = sync_replicas;
  o.max_staleness = max_staleness;
  return o;
}

Status RunPsTraining(const train::TrainOptions& options, const PsTrainOptions& ps, const train::Dataset& train,
                     const train::Dataset* valid, PsTrainResult* result) {
  *result = PsTrainResult();
  CTRAIN_RETURN_IF_ERROR(options.Validate());
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<PsParameters> params, PsParameters::Connect(options, ps));
  train::TrainOptions o = options;
  if (params->worker_index() != 0) o.model_dir.clear();  // the chief checkpoints
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(o, params.get()));
  if (ps.client.log) trainer->set_log_sink(ps.client.log);
  trainer->set_stop_flag(ps.client.stop);
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(trainer->Restore(&restored));
  CTRAIN_RETURN_IF_ERROR(trainer->Train(train, params->worker_index() == 0 ? valid : nullptr, &result->train));
  CTRAIN_RETURN_IF_ERROR(FinishPsWorker(*params, *trainer));
  FinishPsResult(*params, *trainer, result);
  return Status::OK();
}

Status FinishPsWorker(PsParameters& params, train::Trainer& trainer) {
  const PsTrainOptions& ps = params.ps_options();
  if (!ps.export_dir.empty() && params.worker_index() == 0) {
    const ClientStats training = params.client().stats();  // the export's pulls are not the steps' traffic
    CTRAIN_RETURN_IF_ERROR(trainer.ExportRemoteModel(ps.export_dir));
    params.client().set_stats(training);
    const std::string line = "exported the model from the parameter servers to " + ps.export_dir + " (global step " +
                             std::to_string(params.client().last_version(0)) + ")";
    if (ps.client.log)
      ps.client.log(line);
    else
      Logf("%s\n", line.c_str());
  }
  return params.client().Done();
}

void FinishPsResult(PsParameters& params, const train::Trainer& trainer, PsTrainResult* result) {
  result->client = params.client().stats();
  result->global_step = trainer.global_step();
  result->manifest = params.manifest();
  if (params.worker_index() == 0) {
    StatusOr<nlohmann::json> st = GetPsStatus(params.client_options().addresses, params.client_options().channel, 5000);
    if (st.ok()) result->servers = std::move(*st);
  }
}

nlohmann::json PsMetricsJson(const PsTrainResult& r, const PsTrainOptions& options) {
  const double steps = r.train.steps_this_run > 0 ? static_cast<double>(r.train.steps_this_run) : 1.0;
  const ClientStats& c = r.client;
  nlohmann::json j{{"worker_index", options.client.worker_index},
                   {"num_workers", options.num_workers},
                   {"sync_replicas", options.sync_replicas},
                   {"dense", options.dense_on_workers ? "workers" : "servers"},
                   {"steps", r.train.steps_this_run},
                   {"pulls_per_step", c.pulls / steps},
                   {"pushes_per_step", c.pushes / steps},
                   {"bytes_sent_per_step", c.bytes_sent / steps},
                   {"bytes_received_per_step", c.bytes_received / steps},
                   {"encode_seconds_per_step", c.encode_seconds / steps},
                   {"rpc_seconds_per_step", c.rpc_seconds / steps},
                   {"protobuf_seconds_per_step", c.protobuf_seconds / steps},
                   {"seconds_per_step", r.train.seconds / steps},
                   {"extra_chunks_per_step", c.extra_chunks / steps},
                   {"resent_pushes", c.resent_pushes},
                   {"dropped_stale", c.dropped_stale},
                   {"lost_updates", c.lost_updates},
                   {"dense_syncs", c.dense_syncs}};
  if (options.dense_on_workers) j["dense_sync_steps"] = options.dense_sync_steps;
  if (!r.servers.is_null()) j["servers"] = r.servers;
  return j;
}

std::string PsMetricsLine(const nlohmann::json& m) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "ps: worker %d per step: %.1f pulls + %.1f pushes, %.0f bytes sent, %.0f received; %.2f ms of "
                "%.2f ms in the calls (network + servers), %.2f ms packing; %lld stale pushes dropped; %lld of its "
                "updates lost to server restarts",
                m.value("worker_index", 0), m.value("pulls_per_step", 0.0), m.value("pushes_per_step", 0.0),
                m.value("bytes_sent_per_step", 0.0), m.value("bytes_received_per_step", 0.0),
                1e3 * m.value("rpc_seconds_per_step", 0.0), 1e3 * m.value("seconds_per_step", 0.0),
                1e3 * m.value("encode_seconds_per_step", 0.0),
                static_cast<long long>(m.value("dropped_stale", int64_t{0})),
                static_cast<long long>(m.value("lost_updates", int64_t{0})));
  std::string line = buf;
  // Pulls and pushes over the message size limit (ps/chunking.h).
  if (const double extra = m.value("extra_chunks_per_step", 0.0); extra > 0) {
    std::snprintf(buf, sizeof buf, "; %.1f more calls per step for chunks over the message size limit", extra);
    line += buf;
  }
  if (const int64_t resent = m.value("resent_pushes", int64_t{0}); resent > 0)
    line += "; " + std::to_string(resent) + " pushes sent again (a server restarted between their chunks)";
  return line;
}

}  // namespace ctrain::ps
