// Trainer::Impl: the trainer's state and the declarations of its parts,
// shared by the files that implement them (private to src/ctrain/train):
//   trainer.cc            construction, the public API, throughput measurement
//   trainer_loop.cc       the one epoch loop (memory and stream mode) and its set-up
//   trainer_feed.cc       where a step's batch comes from (EpochFeed)
//   trainer_step.cc       one synchronous step: pull, forward/backward, towers, push, dense update, schedule
//   trainer_hogwild.cc    hogwild replicas
//   trainer_exchange.cc   mpirun ranks: gradient exchange, broadcast, votes, replica checks
//   trainer_eval.cc       evaluation, early stopping and the best checkpoint, data checks
//   trainer_checkpoint.cc checkpoints: tensors, meta, save, restore, warm start, the servers' restore
//   trainer_progress.cc   log lines, warnings, the progress bar, stop requests
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/clock.h"
#include "ctrain/model/model.h"
#include "ctrain/optim/lr_plateau.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/ctr_metrics.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/key_index.h"
#include "ctrain/train/parameter_table.h"
#include "ctrain/train/trainer.h"
#include "ctrain/train/trainer_state.h"
#include "ctrain/train/worker_pool.h"

namespace ctrain::train {

class EpochFeed;          // trainer_feed.h
class GradientExchange;   // gradient_exchange.h
class RemoteParameters;   // remote_parameters.h

using ::ctrain::Clock;  // base/clock.h
inline double Seconds(Clock::time_point a, Clock::time_point b) { return SecondsBetween(a, b); }

// One model replica and its per-step buffers.
struct Replica {
  std::unique_ptr<model::Model> model;  // model/model.h (MakeModel of options.model)
  data::Batch batch;
  std::vector<int64_t> rows;  // memory mode: dataset rows of this replica's current batch
  std::vector<int64_t> unique_ids;
  std::vector<int32_t> index;
  std::vector<float> w_rows, v_rows;
  model::SparseGrad w_grad, v_grad;
  model::LossTerms loss;
  Status status;
};

struct Trainer::Impl {
  TrainOptions options;
  std::unique_ptr<optim::Optimizer> optimizer;
  // The parameter servers (Create's `remote`; null = the local tables below).
  RemoteParameters* remote = nullptr;
  float current_lr = 0;  // the rate of the last step (the schedule's), pushed with a remote's gradients
  bool remote_ready = false;  // RestoreRemote ran (the servers know the model)
  // w [feature_size, 1] and V [feature_size, K] with their optimizer slots.
  std::unique_ptr<LocalParameterTable> w_table, v_table;
  std::vector<Replica> replicas;
  // Dense optimizer slots, per dense param, per slot.
  std::vector<std::vector<std::vector<float>>> dense_slots;
  // Hogwild: the master dense values (replicas copy them before each step).
  std::vector<std::vector<float>> hog_master;
  std::unique_ptr<WorkerPool> pool;
  int32_t intra = 1;
  TrainPosition pos;  // global step, epoch, batches done in the epoch, examples
  // Warm start (TrainOptions::warm_start_from): the global step continues from
  // the source checkpoint's step S = warm_start_step; the schedule counts the
  // run's steps (step - S); the optimizer counts from S too unless its slots
  // were carried over (opt_step_base = 0 then). Saved in meta "warm_start".
  int64_t warm_start_step = 0, opt_step_base = 0;
  nlohmann::json warm_start_meta;  // null: not a warm-started run
  bool finished = false;           // this run completed (meta "finished"): a later warm start may start from it
  bool resumed = false;            // Restore found this model dir's checkpoint (a warm start is not one)
  // Stream mode: DescribeStreamInputs of the run (null in memory mode); saved
  // as meta "train_inputs". restored_inputs: the checkpoint's (null if none).
  nlohmann::json train_inputs, restored_inputs;
  std::string restored_path;  // the checkpoint file Restore() loaded
  // Stream mode with --format auto: the checkpoint's data description, checked
  // against this run's once its inputs were read (restored_data_checked).
  DataSourceOptions restored_data;
  bool restored_data_checked = true;
  // Stream mode: the running source, whose opened inputs give the format
  // recorded in checkpoints; stream_known_from names where an already known
  // format came from.
  const BatchSource* stream_src = nullptr;
  BatchSourceFactory source_factory;  // set_batch_source_factory; null = the local pipeline
  nlohmann::json restored_cursor;     // the checkpoint's "data_cursor" (null if none)
  std::vector<InputFormat> valid_formats;  // set_valid_formats
  std::string stream_known_from;
  // Fills options.data's format/compression from the inputs the pipeline
  // opened (streams read with --format auto), refuses mixed encodings, and a
  // resume on another encoding than the checkpoint's.
  Status NoteStreamFormats();
  std::function<void(const std::string&)> sink;
  bool terminal = false;
  const std::atomic<int>* stop_flag = nullptr;  // set_stop_flag
  TrainObserver* observer = nullptr;             // set_observer

  int StopSignal() const { return stop_flag != nullptr ? stop_flag->load(std::memory_order_acquire) : 0; }
  // Between steps, after a stop request: checkpoint this position (unless
  // this call ran no step), then Cancelled naming the step and what was saved.
  // `signal`: the request (0 = StopSignal(); distributed: the ranks' vote).
  Status Stop(int64_t start_step, int signal = 0);

  void Log(const std::string& line);

  // Evaluates `valid` (if any) into result->eval and logs one line, at most
  // once per global step (*eval_step remembers the last evaluated step), then
  // early stopping / the best checkpoint (TrackBest) and, at a `scheduled`
  // evaluation (an epoch end or every eval_every_steps, not a run's final
  // one), the plateau scheduler (StepPlateau) before them. Under mpirun with the plateau
  // every rank calls it at the same steps (rank 0 alone has `valid`).
  Status EvaluateAndLog(const Dataset* valid, const char* when, int64_t* eval_step, TrainResult* result,
                        bool scheduled = true);

  // ---- reduce on plateau (TrainOptions::lr_plateau(), optim/lr_plateau.h) ----
  optim::PlateauState plateau;  // Init: PlateauState::Start at the run's learning rate; kept in checkpoints
  using LrDrop = TrainResult::LrDrop;  // the evaluation's global step, the rate from the next step on
  std::vector<LrDrop> lr_drops;  // every reduction of the run (resumed runs included: kept in checkpoints)
  // Steps the scheduler with `eval` (rank 0; null on the other ranks), then
  // under mpirun gives every rank rank 0's state (one broadcast), so all use
  // the same rate from the next step. Logs a reduction.
  Status StepPlateau(const EvalResult* eval);
  // The plateau state as checkpoint meta "lr_plateau", and back (RestoreMeta).
  nlohmann::json PlateauMeta() const;
  Status RestorePlateau(const nlohmann::json& j, const std::string& path);
  // Rank 0's plateau state into every rank (BroadcastState, StepPlateau).
  Status BroadcastPlateau();
  // The rate the schedule starts from at `step`'s warm-up end: the plateau's rate or the learning rate.
  double BaseRate() const { return options.lr_plateau() ? plateau.lr : options.optimizer.learning_rate; }

  // ---- early stopping and the best checkpoint (TrainOptions::early_stopping_metric, keep_best) ----
  bool tracking_best() const { return !options.early_stopping_metric.empty() || options.keep_best; }
  double best_value = std::numeric_limits<double>::quiet_NaN();  // NaN: no evaluation yet
  int64_t best_step = 0;
  int32_t evals_since_best = 0;
  bool early_stopped = false;  // set by TrackBest; kept in checkpoints
  static constexpr char kBestDir[] = "best";

  // After an evaluation at pos.global_step: updates the best value, saves the
  // best checkpoint (keep_best) and decides on early stopping.
  Status TrackBest(TrainResult* result);
  std::string BestDir() const;

  // ---- setup ----
  // With a remote: the options it cannot honour, named (InvalidArgument).
  Status CheckRemoteOptions() const;

  Status Init();

  // The embedding tables: unlocked (kHogwild) in every mode. Synchronous
  // training pulls (possibly from several towers at once) and pushes in
  // separate phases of a step, so rows are never read while written; hogwild
  // races on purpose. Each table has its own optimizer instance of the same
  // config (optimizers keep no per-call state). In hogwild mode the replica
  // threads push concurrently, so a table update stays on its thread
  // (parallel_min_floats = max) instead of each thread starting an OpenMP team.
  Status InitTables();

  // ---- keyed embeddings (options.table keyed; trainer_keyed.cc, train/key_index.h) ----
  std::unique_ptr<KeyIndex> keys;  // null: positional tables
  // The seed a key's row starts from (options.seed; under mpirun rank 0's, BroadcastKeyed).
  uint64_t key_init_seed = 0;
  // The fields whose ids are keys: [keyed_first_field(), F). The numeric fields
  // before them keep ids 0..N-1, the index's reserved rows.
  int32_t keyed_first_field() const { return options.model.num_dense_fields; }
  // The w and V tables over the index's capacity (lazily committed), the
  // numeric rows initialised; a key's rows start at admission.
  Status InitKeyedTables(optim::OptimizerConfig cfg, const LocalTableOptions& to);
  // Replaces a batch's keys by their rows (train: admitting; else lookups only).
  // Errors: InvalidArgument for a multi-hot or variable-length batch.
  Status TranslateKeys(data::Batch& b, bool train, int64_t step);
  // The batch check TranslateKeys and TranslateAcrossRanks share: InvalidArgument for a multi-hot or
  // variable-length batch (keyed tables take one id per field).
  static Status CheckKeyedBatch(const data::Batch& b);
  // Checkpoint tensors of the keyed tables (gathered into keyed_save; see docs/checkpoint.md#keyed-tables);
  // delta: an incremental checkpoint's (the changed rows and the evicted keys since the last full one).
  void AddKeyedTensors(CheckpointTensors* t, bool delta = false);
  // Incremental checkpoints (options.incremental_checkpoints, train/keyed_checkpoint.h): the full checkpoint
  // the chain extends ("" = none in model_dir yet) and the incremental ones written since.
  std::string keyed_base;
  int64_t keyed_base_step = -1;
  int32_t deltas_since_full = 0;
  int64_t keyed_delta_step = -1;  // the step of the last incremental checkpoint written (a re-save keeps its number)
  struct KeyedSave {
    KeyIndexSnapshot snap;
    std::vector<int64_t> rows;  // the saved tensors' rows in the tables: 0..D-1, then snap.rows
  } keyed_save;
  // The keyed tables from a checkpoint: the index, rows and (slots) optimizer
  // slots. warm: a new run's start (rows renumbered, counters from zero).
  Status RestoreKeyed(const Checkpoint& ck, bool slots, bool warm);
  // Eviction before a checkpoint (KeyIndex::Evict); the freed rows are zeroed.
  // Returns the rows freed.
  int64_t EvictKeys();

  // Pulls the rows of rep.unique_ids into rep.w_rows / rep.v_rows.
  Status PullRows(Replica& rep);

  // Applies the sparse grads (ids unique and ascending) to the tables.
  Status PushRows(const model::SparseGrad& w_grad, const model::SparseGrad& v_grad, int64_t step);

  // ---- state shared with checkpoints ----
  // Dense values the optimizer owns (replica 0 in sync mode, the master in hogwild).
  float* DenseValue(size_t i);
  // Copies the master dense values into every replica.
  void SyncReplicas();

  // tables = false: the dense parameters and state only; keyed_delta: a keyed table's incremental part.
  CheckpointTensors Tensors(bool tables = true, bool keyed_delta = false);

  nlohmann::json Meta() const;

  Status Save();
  // The position of the last checkpoint written by this Train/TrainStream call.
  bool saved_this_run = false;
  TrainPosition saved_pos;
  // The end-of-training checkpoint, unless the last one already holds this position.
  Status SaveFinal();
  // --ps-dense workers: this worker's dense parameters (and the chief's dense slots) into the servers' copy,
  // once per step (RemoteParameters::FlushDense).
  Status FlushRemoteDense();
  int64_t dense_flushed_step = -1;

  // ---- epoch order ----
  void EpochOrder(int64_t n, int64_t epoch, std::vector<int64_t>* order) const;

  // ---- one replica's forward/backward on replica.batch ----
  // step: the global step (a keyed table's last-seen mark); translated: rep.batch's keys are rows already.
  void Compute(Replica& rep, int64_t dropout_step, int64_t step, bool translated = false);

  // Checks a replica's step result; the non-finite loss error names the global step.
  Status StepStatus(const Replica& rep, int64_t step) const;
  // Where the training rows came from (to name them in errors).
  std::vector<std::string> source_paths;
  data::ExampleReaderOptions source_reader;

  // ---- input checks (input_checks.h) ----
  void Warn(const std::string& w, TrainResult* result);
  bool input_warned = false, saturation_warned = false;
  // `max_scan`: examples read to locate a field's largest value in the inputs.
  void WarnInputs(const InputStats& st, TrainResult* result, int64_t max_scan);

  void ApplyDense(int64_t step, const std::vector<model::DenseParam>& grads_from);

  // Merges the towers' sparse grads by id with weights wt[t] into *out (ids ascending).
  static void MergeSparse(const std::vector<const model::SparseGrad*>& g, const std::vector<float>& wt, model::SparseGrad* out);

  // Fills rep.batch with rows [lo, hi) of the step's batch (offsets in the batch).
  using FillFn = std::function<void(Replica& rep, int64_t lo, int64_t hi)>;

  // ---- a synchronous step over a batch of B rows ----
  Status SyncStep(int64_t B, const FillFn& fill, double* loss_out);
  int64_t step_examples = 0;  // examples of the last SyncStep over all ranks

  // TrainOptions::lr_schedule(): the rate of `step` on all three optimizers.
  void SetScheduledRate(int64_t step);

  // ---- distributed (gradient_exchange.h) ----
  GradientExchange* exch = nullptr;
  std::vector<float> fused;                       // dense grads, BN state, loss, examples
  std::vector<int64_t> gathered_ids, gathered_counts;
  std::vector<float> packed, gathered_rows;
  int64_t left_over = 0;                          // examples this rank's shards had left at epoch ends

  // Replaces this rank's step results (means over its `n` examples) by the
  // means over every rank's examples: one fused allreduce of the dense
  // gradients, BN state, loss and count (each weighted by its examples), and
  // an allgather of each table's sparse rows, merged by id in rank order.
  // *examples = the step's examples over all ranks.
  Status ExchangeStep(int64_t step, int64_t n, model::SparseGrad* w, model::SparseGrad* v, std::vector<model::DenseParam>& dense, std::vector<model::DenseParam>& state, double* loss, int64_t* examples);
  model::SparseGrad joint;  // [w | V] rows of one exchange

  Status ExchangeSparse(int64_t n, float all, model::SparseGrad* g, const std::string& what);

  // Rank 0's parameters, optimizer slots and position into every rank
  // (initial values, or the checkpoint rank 0 restored). Each rank keeps its
  // own train_rows (its shard's size).
  Status BroadcastState();
  // Keyed tables under mpirun (docs/distributed.md#keyed-tables): rank 0's
  // index, rows and slots into every rank (a restore or warm start on rank 0
  // reaches the others).
  Status BroadcastKeyed();
  // Keyed tables under mpirun: every rank's keys of this step (its towers'
  // batches, in tower order) are gathered in rank order and translated on
  // every rank as one batch, so every rank admits, counts and numbers rows
  // alike (the replicas' indexes stay identical, so the sparse gradients can
  // then travel by row); `batches` get their own keys' rows.
  Status TranslateAcrossRanks(std::span<data::Batch* const> batches, int64_t step);
  std::vector<int64_t> step_keys;  // this rank's keys of the step (TranslateAcrossRanks)

  // --check-replicas-every: FNV-1a of every parameter and slot, compared across ranks.
  Status CheckReplicas();

  // Distributed: the per-step vote. *go = every rank has a batch; a stop
  // request on any rank returns Stop() on every rank.
  Status Vote(bool have, bool* go, int* sig);
  // A rank whose shard still had `n` examples when the shortest one ended the epoch.
  void ReportLeftOver(int64_t n);
  model::SparseGrad merged_w, merged_v;

  // ---- progress ----
  struct Progress {
    Clock::time_point start, last_print;
    int64_t start_step = 0, total_steps = 0;
    int64_t examples = 0;
    double loss_sum = 0;
    int64_t loss_n = 0;
    bool stream = false;       // show the input wait
    double wait = 0, compute = 0;
  };

  // The epoch the progress line names (1-based): at an epoch's end the
  // position already points at the next epoch, but the line still reports
  // the one just finished (never "epoch 2/1").
  static int64_t ShownEpoch(const TrainPosition& p);

  void PrintProgress(Progress& p, bool force);

  StatusOr<EvalResult> Evaluate(const Dataset& data);
  std::vector<float>* predictions = nullptr;
  // How Evaluate weighs the evaluated data (its negatives' downsampling rate):
  // Init sets options.negative_downsampling_rate (--valid is sampled like
  // --train); a model loaded for eval/predict starts at 1.
  MetricOptions eval_metric_options;
  std::vector<float> eval_weights;  // set_eval_weights; empty = 1 each

  Status CheckData(const Dataset& data, const char* what) const;

  // ---- the epoch loop (trainer_loop.cc) ----
  Status Train(const Dataset& train, const Dataset* valid, TrainResult* result);
  Status TrainStream(const StreamInput& input, const Dataset* valid, TrainResult* result);
  // Memory and stream mode alike: epochs of synchronous steps (or hogwild
  // segments) from `feed`, with evaluation, checkpoints, early stopping,
  // progress and stop requests; fills the run's figures into *result.
  Status RunEpochs(EpochFeed& feed, const Dataset* valid, TrainResult* result);
  // A run's start: *result cleared; distributed: rank 0's state everywhere.
  Status BeginRun(TrainResult* result);
  // The restored position's early-stopping state into *result.
  void NoteRestoredState(TrainResult* result) const;
  // The rate of the next step and the plateau's reductions into *result.
  void NotePlateau(TrainResult* result) const;
  Status RestoreMeta(const nlohmann::json& meta, const std::string& path);
  Status RestoreRemote(bool* restored);

  // Fills rep.batch with the next batch of a hogwild segment; false when none is left.
  using FetchFn = std::function<StatusOr<bool>(Replica& rep)>;
  // Hogwild replicas run steps on fetched batches until fetch returns false.
  // *batches: batches applied; *wait_seconds: time inside fetch (all threads).
  Status RunHogwild(const FetchFn& fetch, Progress* prog, int64_t* batches, double* wait_seconds);

  // InvalidArgument unless `b` has the model's field_size and fixed-length rows.
  Status CheckBatch(const data::Batch& b) const;
};

}  // namespace ctrain::train
