// ParameterShard: the state of one parameter server (docs/parameter-servers.md):
// the rows of w [feature_size] and V [feature_size, K] that the partitioner
// (train/partitioner.h) assigns to shard `shard`, their optimizer slots, and
// the dense parameters ps/dense_placement.h gives it, with theirs. The optimizer is the one local
// training uses (optim/), built from the trainers' ModelSpec.
//
// Dense parameters kept on the workers (`--ps-dense workers`,
// PushRequest.dense_*): the workers run the dense optimizer; a shard adds
// their deltas / num_workers (async: as each arrives; sync replicas: in worker
// order within a round) or takes the one worker's values and the chief's slots,
// which it checkpoints and exports as before (ps/shard_dense.cc).
//
// Updates:
//   async (default)  every Push is applied when it arrives (one global step
//                    per push); with max_staleness > 0 a push computed on
//                    parameters more than max_staleness updates old is dropped
//                    and counted (dropped_stale), as TF's stale-gradient check.
//   sync_replicas    like TF's SyncReplicasOptimizer: a Push waits until all
//                    num_workers workers pushed for the round; the gradients
//                    are averaged weighted by their examples (sparse rows
//                    merged by id, in worker-index order, so the sums are
//                    deterministic) and applied once; then every Push of the
//                    round returns. One worker: its gradient is applied as is
//                    (bit-identical to local training).
//
// Checkpoints (Save, and Create's restore): train/sharded_checkpoint.h; the
// shard writes <model_dir>/ps-shard-<I>-of-<S>/ (train/checkpoint.h files,
// atomic and CRC-checked). A shard restarted on the same --model-dir reloads
// its checkpoint (ps/checkpoint_remap.h: remapped by id when the manifest's
// layout is another) and is ready before any trainer calls Init.
//
// Thread safety: every method may be called from many threads (gRPC handler
// threads). Pulls share a reader lock; an update takes the writer lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/mutex.h"
#include "ctrain/base/clock.h"
#include "ctrain/base/status.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/ps/chunking.h"
#include "ctrain/ps/parameter_server.pb.h"
#include "ctrain/train/parameter_table.h"
#include "ctrain/train/partitioner.h"

namespace ctrain::ps {

struct ShardOptions {
  int32_t shard = 0;
  int32_t num_shards = 1;
  std::string partitioner = "fixed_size";  // fixed_size | mod
  std::string model_dir;                   // checkpoints; "" = Save is refused
  int32_t keep_checkpoints = 3;
  bool force = false;  // start fresh whatever model_dir holds (logged; ps/checkpoint_remap.h)
  // The server's message size limit, announced in InitResponse (ps/chunking.h).
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  std::function<void(const std::string&)> log;  // null: stderr "ctrain: ps shard I: ..."
};

class ParameterShard {
 public:
  // Restores from options.model_dir what ps/checkpoint_remap.h LoadStartCheckpoint
  // finds: the manifest's file for this shard, the rows remapped by id from a
  // checkpoint of another shard count or partitioner, or (no manifest) the
  // shard directory's newest checkpoint.
  // Errors: InvalidArgument for shard/num_shards/partitioner out of range;
  // FailedPrecondition when the checkpoint is another shard's (no manifest), a
  // shard file the manifest names is missing, or no remap is possible (both
  // layouts named); the checkpoint's DataLoss errors.
  static StatusOr<std::unique_ptr<ParameterShard>> Create(const ShardOptions& options);
  ~ParameterShard();

  // Creates the tables on the first call; later calls (and a restored shard)
  // check that the spec matches (FailedPrecondition naming the field).
  // InvalidArgument for unreadable JSON, a bad config, or a dense shape with a
  // negative dimension or more than 2^40 elements.
  Status Init(const proto::InitRequest& req, proto::InitResponse* resp);
  // Errors: FailedPrecondition before Init; InvalidArgument for an id that is
  // out of range or belongs to another shard, or dense asked of a shard != 0.
  Status Pull(const proto::PullRequest& req, proto::PullResponse* resp);
  // Errors: Pull's, plus InvalidArgument for ids not strictly increasing,
  // gradient sizes that do not match the ids, a bad learning rate or worker
  // index; Unavailable when the shard shuts down while a sync round waits.
  // Nothing is applied on error. A chunk (num_chunks > 1) is staged until
  // the last one arrives (ps/chunking.h: resp->staged, or resp->resend when
  // it does not continue its worker's push); PushAssembler::Add's errors.
  Status Push(const proto::PushRequest& req, proto::PushResponse* resp);
  // Errors: FailedPrecondition without a model_dir or before Init;
  // InvalidArgument for unreadable meta_json or a state tensor whose shape is
  // invalid (as Init's dense shapes) or does not match its values; file errors.
  Status Save(const proto::SaveRequest& req, proto::SaveResponse* resp);
  // A worker finished (proto::DoneRequest). Errors: FailedPrecondition before
  // Init; InvalidArgument for a worker index outside [0, num_workers).
  Status Done(const proto::DoneRequest& req, proto::DoneResponse* resp);
  // Every worker of the job said Done (false before Init).
  bool AllWorkersDone() const;

  // Rows and bytes held, traffic counters and rates (see docs/parameter-servers.md#status).
  nlohmann::json StatusJson() const;
  // Wakes and fails every Push waiting for a sync round (server shutdown).
  void Shutdown();

  int64_t global_step() const;
  bool restored() const { return restored_; }

 private:
  explicit ParameterShard(const ShardOptions& options, train::Partitioner part);
  struct Dense {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> value;
    std::vector<std::vector<float>> slots;
  };
  struct Pending;  // one worker's push in a sync round
  Status PushWhole(const proto::PushRequest& req, proto::PushResponse* resp);
  void Log(const std::string& line) const;
  Status CreateTables(const proto::ModelSpec& spec, bool init_values) CTRAIN_REQUIRES(table_mu_);
  Status CheckSpec(const proto::ModelSpec& spec) const CTRAIN_REQUIRES_SHARED(table_mu_);
  // FailedPrecondition before Init; InvalidArgument naming `what` for a worker index outside the job (-1: none).
  Status CheckCaller(const char* what, int32_t worker) const CTRAIN_REQUIRES_SHARED(table_mu_);
  Status ValidatePush(const proto::PushRequest& req) const CTRAIN_REQUIRES_SHARED(table_mu_);
  // The dense state a worker that keeps the dense parameters sends (PushRequest.dense_delta, dense_value,
  // dense_slot, dense_only; ps/shard_dense.cc): InvalidArgument for counts or sizes that do not match this
  // server's dense parameters and optimizer, or fields that do not go together.
  Status ValidateDenseState(const proto::PushRequest& req) const CTRAIN_REQUIRES_SHARED(table_mu_);
  // Adds scale * dense_delta to the values, or replaces them with dense_value; replaces the slots with
  // dense_slot. REQUIRES: ValidateDenseState(req).
  void ApplyDenseStateLocked(const proto::PushRequest& req, float scale) CTRAIN_REQUIRES(table_mu_);
  // Applies one (merged) update, table_mu_ held exclusively.
  void ApplyLocked(const std::vector<int64_t>& ids, const float* w, const float* v,
                   const std::vector<const float*>& dense, float lr) CTRAIN_REQUIRES(table_mu_);
  Status Restore();
  nlohmann::json SpecJson() const;

  ShardOptions options_;
  train::Partitioner part_;
  int64_t rows_;  // rows this shard holds

  mutable SharedMutex table_mu_;  // pulls: shared; updates, init, save: exclusive
  bool initialized_ = false;
  proto::ModelSpec spec_;  // without dense values
  int32_t K_ = 0;
  bool use_w_ = true, use_v_ = true;
  std::unique_ptr<train::LocalParameterTable> w_, v_;
  std::unique_ptr<optim::Optimizer> dense_opt_;
  std::vector<Dense> dense_ CTRAIN_GUARDED_BY(table_mu_);
  std::vector<Dense> state_ CTRAIN_GUARDED_BY(table_mu_);  // shard 0: the chief's BN state at the last Save
  int64_t global_step_ CTRAIN_GUARDED_BY(table_mu_) = 0;   // updates applied
  // The live job's ModelSpec.dense_placement, from its first Init ("" = none yet; not checkpointed: a
  // checkpoint of either placement serves the other).
  std::string live_dense_placement_ CTRAIN_GUARDED_BY(table_mu_);
  bool restored_ = false;
  std::string restored_meta_, restored_from_;
  // This life of the shard (proto::ShardLife): drawn at start; the restored and the newest checkpoint's steps.
  const uint64_t incarnation_;
  int64_t restored_step_ = 0;
  std::atomic<int64_t> saved_step_{0};
  void FillLife(proto::ShardLife* life) const;

  PushAssembler chunks_;  // pushes that arrive in chunks
  mutable Mutex done_mu_;
  std::vector<char> done_ CTRAIN_GUARDED_BY(done_mu_);  // per worker: said Done

  // Sync rounds.
  Mutex sync_mu_;
  std::condition_variable sync_cv_;
  std::vector<std::unique_ptr<Pending>> round_ CTRAIN_GUARDED_BY(sync_mu_);
  int64_t rounds_done_ CTRAIN_GUARDED_BY(sync_mu_) = 0;
  bool shutdown_ CTRAIN_GUARDED_BY(sync_mu_) = false;

  // Traffic.
  Clock::time_point start_;
  std::atomic<int64_t> pulls_{0}, pushes_{0}, pulled_rows_{0}, pushed_rows_{0}, bytes_in_{0}, bytes_out_{0},
      dropped_stale_{0}, dense_syncs_{0};
  std::atomic<int64_t> pull_ns_{0}, apply_ns_{0};  // time in Pull's copy and in the optimizer
};

}  // namespace ctrain::ps
