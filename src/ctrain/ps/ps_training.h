// Training as one worker of a parameter-server job (`ctrain train --ps ...`,
// docs/parameter-servers.md). The embeddings and the dense parameters live on
// the servers (ps/shard.h); this process keeps a DeepFM for the forward and
// backward passes (and its BN moving statistics), and per step:
//   1. takes its batch (below), DeepFM::UniqueIds
//   2. Pulls the rows of w and V and the dense parameters (spread over the servers):
//      one call per shard, in parallel
//   3. DeepFM::TrainStep
//   4. Pushes the sparse and dense gradients, the step's learning rate
//      (warmup as local training) and its example count: one call per shard
// The optimizer runs on the servers.
//
// Batches: the epoch order is local training's (a permutation from
// (seed, epoch)), cut into batches of batch_size. Async: worker k of W takes
// batches k, k + W, k + 2W, ... (each example once per epoch across the
// workers). Sync replicas: round r is batches rW .. rW + W - 1, worker k's is
// rW + k; a worker without one in the last round pushes an empty gradient
// with weight 0. One worker in sync mode therefore runs exactly local
// training's steps, with its dropout keys (round number).
//
// Chief (worker 0): evaluates `valid` at each of its epoch ends; with a
// model_dir it asks every shard to save (train/sharded_checkpoint.h) every
// save_checkpoints_steps of its steps, at each epoch end and at the end, then
// writes the manifest. Other workers ignore valid and model_dir.
//
// Errors: InvalidArgument for towers > 1, hogwild, a worker index outside
// [0, num_workers), max_staleness with sync_replicas; PsClient's (a shard
// unavailable for longer than the wait: Unavailable naming it); TrainStep's;
// Cancelled on a stop request (the chief saves first).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/ps/client.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/train_config.h"
#include "ctrain/train/trainer.h"

namespace ctrain::ps {

struct PsTrainOptions {
  ClientOptions client;       // servers, security, worker_index, wait bound, stop flag
  int32_t num_workers = 1;
  bool sync_replicas = false;
  int64_t max_staleness = 0;  // async only; 0 = no bound
};

// What `ctrain train --ps ...` is told (docs/parameter-servers.md#workers).
struct PsWorkerSettings {
  std::vector<std::string> addresses;  // --ps, shard order; empty = not a parameter-server job
  int32_t worker_index = 0;            // --worker-index (0 = the chief)
  int32_t num_workers = 1;             // --num-workers
  bool sync_replicas = false;          // --sync-replicas
  int64_t max_staleness = 0;           // --max-staleness (async; 0 = no bound)
  double wait_seconds = 120;           // --ps-wait-seconds: how long an unavailable server is waited for

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

Status RunPsTraining(const train::TrainOptions& options, const PsTrainOptions& ps, const train::Dataset& train,
                     const train::Dataset* valid, PsTrainResult* result);

// The "ps" object of `ctrain train --metrics-json` (docs/parameter-servers.md#metrics):
// per step of this worker: pulls, pushes, bytes sent and received, seconds
// encoding (splitting ids, packing and scattering rows), in the calls
// (network + server) and in total; dropped stale pushes; the servers' status.
nlohmann::json PsMetricsJson(const PsTrainResult& result, int32_t worker_index, int32_t num_workers, bool sync);
// One line for stderr: the same figures per step.
std::string PsMetricsLine(const nlohmann::json& metrics);

}  // namespace ctrain::ps
