// The trainer's side of the parameter servers (docs/parameter-servers.md):
// PsClient talks to the S shards, RemoteParameterTable is the
// train/parameter_table.h seam over them.
//
// Per step a trainer makes ONE Pull and ONE Push call per shard, in parallel
// (one thread per shard): the step's unique ids are split by the partitioner
// the servers announce in Init; the rows of w and V travel together; each
// server's calls also carry the dense parameters it holds (Pull) and their
// gradients (Push) (ps/dense_placement.h). A call over the message size limit
// is split into chunks, one after the other on the shard's thread
// (ps/chunking.h).
//
// A shard that goes away (UNAVAILABLE: killed, restarting) is waited for with
// backoff up to `max_wait`: the first failure is reported at once as
// "ctrain: worker K: parameter server shard I at ADDR is unavailable (...)",
// then every 5 s; when it answers again the call is repeated (a shard
// restarted from its checkpoint has lost the updates since; one restarted
// without a checkpoint is initialised again from this trainer's spec).
// Every answer names the server's life (proto::ShardLife: a random incarnation,
// the step it restored, the step of its newest checkpoint), so each worker sees
// every restart and counts exactly which of its own pushes it lost, those
// applied after the restored step (ClientStats::lost_updates), and logs
// "parameter server shard 1 at ADDR restarted from its checkpoint of update
// 100 (it had applied at least 130): 15 of this worker's updates, applied
// after that, are lost (each worker counts its own)". The workers' counts add
// up to the updates lost.
//
// Thread safety: one PsClient per trainer thread; calls are not concurrent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/ps/chunking.h"
#include "ctrain/ps/parameter_server.pb.h"
#include "ctrain/service/channel.h"
#include "ctrain/train/parameter_table.h"
#include "ctrain/train/partitioner.h"

namespace ctrain::ps {

struct ClientOptions {
  std::vector<std::string> addresses;  // HOST:PORT of shard 0, 1, ... (the order is the shard index)
  service::ChannelConfig channel;
  int32_t worker_index = 0;
  std::chrono::milliseconds max_wait{120000};  // how long an unavailable shard is waited for
  // This worker's message size limit (ps/chunking.h; the smaller of it and each server's is used).
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  const std::atomic<int>* stop = nullptr;      // a stop request ends a wait (Cancelled)
  std::function<void(const std::string&)> log;  // null: stderr "ctrain: worker K: ..."
};

// Client-side traffic (bench/ and TrainResult figures).
struct ClientStats {
  int64_t pulls = 0, pushes = 0;          // calls (one per shard per step each)
  int64_t bytes_sent = 0, bytes_received = 0;  // serialized message sizes
  double encode_seconds = 0;              // building and splitting requests, scattering responses
  double rpc_seconds = 0;                 // wall time of the parallel calls (network + server)
  int64_t dropped_stale = 0;              // pushes a shard dropped as too stale
  // This worker's pushes that shards applied and then lost by restarting from an older checkpoint (or none).
  int64_t lost_updates = 0;
  // Calls beyond one per shard: pulls and pushes split to the message size limit (ps/chunking.h).
  int64_t extra_chunks = 0;
  int64_t resent_pushes = 0;  // pushes sent again from chunk 0 (a shard restarted between chunks)
  // Dense-only pushes (--ps-dense workers: values or deltas with slots, not a step; not in `pushes`).
  int64_t dense_syncs = 0;
  // Protobuf cost of the messages, sampled every 16th Pull and Push: serializing
  // and parsing each request and response once (the work gRPC does on the two
  // ends), scaled to every call. Part of rpc_seconds (client and servers).
  double protobuf_seconds = 0;
};

// An export's optimizer slots (PullRequest.slots), per slot k of the optimizer
// (optim::Optimizer::SlotName(k)).
struct PulledSlots {
  std::vector<float*> w;  // per slot: the rows' values [n] (the caller's memory)
  std::vector<float*> v;  // per slot: [n, K]
  std::vector<std::vector<std::vector<float>>> dense;  // with dense: [parameter][slot] values (filled)
};

// The dense state of a worker that keeps the dense parameters and runs their
// optimizer itself (--ps-dense workers; proto::PushRequest.dense_*), in spec
// order; each vector is empty or has one entry per dense parameter.
struct DenseState {
  std::vector<const float*> delta;   // values minus those last pulled: the servers add them
  std::vector<const float*> values;  // the servers take them (one worker)
  std::vector<std::vector<const float*>> slots;  // [parameter][optimizer slot]: the servers take them
  // No gradients: applied at once on every server holding dense parameters, not a training step. values
  // and slots travel only so.
  bool dense_only = false;
};

class PsClient {
 public:
  // Errors: InvalidArgument for no address or a malformed one; MakeChannel's.
  static StatusOr<std::unique_ptr<PsClient>> Connect(const ClientOptions& options);
  ~PsClient();

  // Declares the model to every shard (waiting for shards that are not up
  // yet) and learns the partitioner. Errors: FailedPrecondition when a shard
  // says it is another index, or the shards disagree on partitioner or count,
  // or a shard holds another model (CheckSpec's message); InvalidArgument when
  // the Init message (every dense parameter) or a shard's dense parameters do
  // not fit in one message, ResourceExhausted when a server refuses the Init
  // message as too large (both naming the options).
  Status Init(const proto::ModelSpec& spec);
  // After Init: the servers' partitioner, the restored trainer meta of shard 0
  // ("" = none) and the global step shard 0 reported.
  const train::Partitioner& partitioner() const;
  const std::string& restored_meta() const;
  int64_t initial_global_step() const;

  // ids: unique (any order). w_rows [n] and v_rows [n, K] (either may be null
  // to skip it); dense (may be null): every dense parameter's values, in spec
  // order, gathered from the servers holding them; slots (may be null): their
  // optimizer slots too (an export; slots->w.size() = the optimizer's slots).
  Status Pull(std::span<const int64_t> ids, float* w_rows, float* v_rows, std::vector<std::vector<float>>* dense,
              PulledSlots* slots = nullptr);
  // Shard 0's BN moving statistics of its newest checkpoint (PullRequest.state; none before a save).
  Status PullState(std::vector<proto::DenseTensor>* state);
  // Tells every shard this worker finished training (proto::DoneRequest).
  Status Done();
  // ids strictly increasing; w_grad [n] / v_grad [n, K] may be null; dense
  // (may be null or empty): one gradient per dense parameter; state (may be
  // null): the dense state of a worker that keeps the dense parameters,
  // chunk 0 of each server holding some (a dense_only push skips the others).
  Status Push(std::span<const int64_t> ids, const float* w_grad, const float* v_grad,
              const std::vector<const float*>* dense, float learning_rate, int64_t examples,
              const DenseState* state = nullptr);
  // Saves every shard; returns the file paths (shard order) and shard 0's global step.
  Status Save(const nlohmann::json& trainer_meta, const std::vector<proto::DenseTensor>& state,
              std::vector<std::string>* paths, int64_t* global_step);

  // After Init: OK when a shard's dense parameters with `slots` optimizer slots (and a row) fit in one
  // message of each shard's limit: an export, and the dense state of --ps-dense workers. InvalidArgument
  // naming `option`, the message size options and the size needed otherwise.
  Status CheckDenseFits(int32_t slots, const std::string& option) const;
  // The version (global step) shard s reported at the last Pull.
  int64_t last_version(int32_t shard) const;
  // After Init: the shards started without --model-dir, which cannot Save.
  std::vector<int32_t> ShardsThatCannotSave() const;
  int32_t num_shards() const;
  const std::string& address(int32_t shard) const;
  const ClientStats& stats() const;
  void ResetStats();
  void set_stats(const ClientStats& stats);  // (an export's pulls are not training traffic)

  struct Impl;

 private:
  explicit PsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The ParameterTable seam over the servers: one table of dim 1 + K whose row
// `id` is [w[id], V[id, 0..K)], so one Pull and one Push per shard move both
// embeddings. Push's `step` is ignored (the servers count updates); pushes use
// learning_rate set_learning_rate() and weight 1.
class RemoteParameterTable final : public train::ParameterTable {
 public:
  // REQUIRES: client->Init done; client outlives the table.
  RemoteParameterTable(PsClient* client, int64_t rows, int32_t K, float learning_rate);
  Status Pull(std::span<const int64_t> ids, float* rows) override;
  Status Push(const train::SparseRows& grad, int64_t step) override;
  int64_t rows() const override { return rows_; }
  int32_t dim() const override { return 1 + K_; }
  void set_learning_rate(float lr) { lr_ = lr; }

 private:
  PsClient* client_;
  int64_t rows_;
  int32_t K_;
  float lr_;
  std::vector<int64_t> unique_;
  std::vector<float> w_, v_;
};

}  // namespace ctrain::ps
