// Training as one worker of a parameter-server job (`ctrain train --ps ...`,
// docs/parameter-servers.md): the trainer (train/trainer.h), the same step
// loop as local training, with the servers as its parameters (PsParameters,
// ps/ps_parameters.h). Every schedule, evaluation, checkpoint, observer and
// early stopping is local training's code; one worker with --sync-replicas is
// local training bit for bit.
//
// Chief (worker 0): evaluates `valid` like local training; with a model_dir
// it asks every shard to save (train/sharded_checkpoint.h) every
// save_checkpoints_steps steps, at each epoch end and at the end, then writes
// the manifest. Other workers get no valid and no model_dir.
//
// Errors: PsParameters::Connect's and Trainer::Create's (InvalidArgument for
// an option a worker cannot honour, named); PsClient's (a shard unavailable
// for longer than the wait: Unavailable naming it); Train's; Cancelled on a
// stop request (the chief saves first).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/ps/client.h"
#include "ctrain/ps/ps_parameters.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/train_config.h"
#include "ctrain/train/trainer.h"

namespace ctrain::ps {

// What `ctrain train --ps ...` is told (docs/parameter-servers.md#workers).
struct PsWorkerSettings {
  std::vector<std::string> addresses;  // --ps, shard order; empty = not a parameter-server job
  int32_t worker_index = 0;            // --worker-index (0 = the chief)
  int32_t num_workers = 1;             // --num-workers
  bool sync_replicas = false;          // --sync-replicas
  int64_t max_staleness = 0;           // --max-staleness (async; 0 = no bound)
  double wait_seconds = 120;           // --ps-wait-seconds: how long an unavailable server is waited for
  int64_t max_message_bytes = kDefaultMaxMessageBytes;  // --ps-max-message-bytes (ps/chunking.h)
  std::string export_dir;              // --ps-export-dir (the chief only)
  // --ps-dense: auto (workers with one worker, servers with more) | servers | workers (ps_parameters.h).
  std::string dense = "auto";
  int64_t dense_sync_steps = 1;        // --ps-dense-sync-steps: workers with W > 1, steps between averagings

  bool enabled() const { return !addresses.empty(); }
  // The worker's options. Errors: InvalidArgument naming the flag.
  StatusOr<PsTrainOptions> Options(const service::ChannelConfig& channel, const std::atomic<int>* stop) const;
};

struct PsTrainResult {
  train::TrainResult train;   // steps/examples are this worker's; eval is the chief's
  ClientStats client;         // this worker's traffic
  int64_t global_step = 0;    // sync: the global step at the end; async: this worker's steps
  std::string manifest;       // chief with model_dir: the manifest written last
  nlohmann::json servers;     // chief: GetPsStatus at the end (null if a server did not answer)
};

// Connects, builds the trainer over the servers, restores what they hold and
// trains (memory mode). The job layer (job/train_job.cc) does the same with
// its monitoring and reporting around it.
Status RunPsTraining(const train::TrainOptions& options, const PsTrainOptions& ps, const train::Dataset& train,
                     const train::Dataset* valid, PsTrainResult* result);
// After a worker trained: the chief exports the model to --ps-export-dir when set
// (Trainer::ExportRemoteModel, logged), then the worker tells every server it
// is done (PsClient::Done: servers started with --exit-when-workers-done exit
// when every worker has). Errors: the export's and the calls'.
Status FinishPsWorker(PsParameters& params, train::Trainer& trainer);
// The figures of a finished worker: its traffic, the global step, the manifest
// and (chief) the servers' status.
void FinishPsResult(PsParameters& params, const train::Trainer& trainer, PsTrainResult* result);

// The "ps" object of `ctrain train --metrics-json` (docs/parameter-servers.md#metrics):
// per step of this worker: pulls, pushes, bytes sent and received, seconds
// encoding (splitting ids, packing and scattering rows), in the calls
// (network + server) and in total; dropped stale pushes; where the dense
// parameters live (dense, dense_sync_steps) and the dense-only pushes
// (dense_syncs, in all); the servers' status.
nlohmann::json PsMetricsJson(const PsTrainResult& result, const PsTrainOptions& options);
// One line for stderr: the same figures per step.
std::string PsMetricsLine(const nlohmann::json& metrics);

}  // namespace ctrain::ps
