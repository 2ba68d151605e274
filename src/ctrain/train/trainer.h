// Trainer: the single-machine training job behind `ctrain train` (every model kind, model/model.h),
// `ctrain eval` and `ctrain predict`.
//
// Data: either an in-memory Dataset (train/dataset.h; Train): each epoch visits
// every row once in a permutation that is a pure function of (seed, epoch) (no
// RNG state to carry), in batches of batch_size (the last, partial batch is
// kept); or a stream through data::Pipeline (train/stream_input.h;
// TrainStream): batches are read, shuffled (buffer shuffle) and parsed on
// pipeline threads while the trainer computes.
//
// One step (docs/training.md#step):
//   1. gather the batch rows; UniqueIds -> unique ids U and index
//   2. Pull the U rows of w [feature_size, 1] and V [feature_size, K] from
//      their ParameterTables (train/parameter_table.h; LocalParameterTable,
//      unlocked: the synchronous trainer never pushes while it pulls)
//   3. Model::TrainStep -> dense grads + sparse grads for the U rows
//   4. Push the sparse grads (the optimizer updates only the touched rows)
//   5. one optimizer step on every dense parameter
// With towers T > 1 the batch is split into T contiguous slices; each tower
// runs 1-3 on its slice on its own thread with its own model replica; the
// gradients are averaged with weights slice/batch in tower order (sparse rows
// merged by id), then 4-5 run once and the replicas copy the new dense values.
// With hogwild H > 0, H threads each run 1-5 on their own batches; the tables
// are updated without locks, dense parameters under one mutex.
// As one rank of N (set_gradient_exchange; dist/ under mpirun), 3's results
// are averaged over the ranks before 4-5 (docs/distributed.md).
//
// Checkpoints (model_dir): tensors w, V, every dense parameter and BN state,
// and every optimizer slot; meta JSON with the model/optimizer config, the
// global step, the epoch, the batches done in that epoch and the examples
// consumed, the data options (TrainOptions::data) and in stream mode the
// inputs (DescribeStreamInputs). Written every save_checkpoints_steps steps,
// at every epoch end, at the end of training, and on a stop request
// (set_stop_flag: SIGINT/SIGTERM between two steps). Restore() puts all of that
// back, so an interrupted run continues
// with exactly the bits an uninterrupted one would have (non-hogwild).
//
// Determinism: same seed, data, options and thread layout (intra_op_threads,
// towers) => bit-identical parameters and checkpoints. hogwild is not
// deterministic.
//
// Thread safety: a Trainer is driven by one thread; it starts and joins its own
// worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/pipeline_stats.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/key_index.h"
#include "ctrain/train/stream_input.h"
#include "ctrain/train/train_config.h"

namespace ctrain::train {

class GradientExchange;  // train/gradient_exchange.h
class RemoteParameters;  // train/remote_parameters.h

struct EvalResult {
  double auc = 0;           // NaN when the data has one class only
  double logloss = 0;
  int64_t examples = 0;
  double label_mean = 0;    // observed CTR
  double prediction_mean = 0;
  double saturated_fraction = 0;  // predictions < 0.001 or > 0.999 (train/input_checks.h)
  // train/ctr_metrics.h (NaN where undefined; gauc NaN without group_field).
  double normalized_entropy = 0;
  double calibration = 0;         // prediction_mean / label_mean
  double pr_auc = 0;
  double gauc = 0;
  int64_t gauc_groups = 0, gauc_skipped_groups = 0;
  // The metric named `name` (auc, gauc, pr_auc, logloss, normalized_entropy); NaN otherwise.
  double Metric(const std::string& name) const;
};

// The input-bound advice needs a steady state to speak about.
inline constexpr int64_t kMinStepsForInputAdvice = 50;
inline constexpr double kMinSecondsForInputAdvice = 2.0;

struct TrainResult {
  int64_t steps = 0;            // global step at the end (includes restored steps)
  int64_t steps_this_run = 0;   // steps run by this call
  int64_t examples = 0;         // training examples consumed in total (includes restored)
  int64_t examples_this_run = 0;
  double epochs = 0;            // epochs completed in total (fractional)
  // False in stream mode while the epoch size is unknown (the first epoch has
  // not ended yet, so `epochs` counts completed epochs only, no fraction).
  bool epoch_size_known = true;
  double seconds = 0;           // wall time of this call's training steps (no eval / checkpoint)
  double examples_per_sec = 0;  // examples_this_run / seconds
  double last_loss = 0;         // mean training loss over the last epoch's (or run's) steps
  bool evaluated = false;       // `eval` holds a final validation result
  EvalResult eval;
  bool restored = false;        // started from the model dir's own checkpoint (a warm start is not)
  // Early stopping / keep_best (TrainOptions::early_stopping_metric): training
  // stopped because the metric did not improve for early_stopping_patience
  // evaluations; the best value and the global step it was reached at
  // (best_step 0: no evaluation yet).
  bool early_stopped = false;
  double best_metric = 0;
  int64_t best_step = 0;
  // The learning rate the next step would run at (the schedule's: warm-up,
  // decay or the plateau's rate; the run's rate without one), and every
  // reduction of --lr-decay plateau (TrainOptions::lr_plateau()): the global
  // step of the evaluation that decided it and the rate from the step after.
  double learning_rate = 0;
  struct LrDrop {
    int64_t step = 0;
    double lr = 0;
  };
  std::vector<LrDrop> lr_drops;

  // Input measurement over this call's steps (docs/training.md#input-modes).
  // Stream mode: wait = time blocked in the pipeline's Next(), compute = the
  // rest of each step; seconds = wait + compute. Memory mode: wait = 0 (the
  // row gather is part of the step). Hogwild: summed over the threads.
  bool streamed = false;
  double input_wait_seconds = 0;
  double compute_seconds = 0;
  double input_wait_fraction = 0;  // wait / (wait + compute), in [0, 1]
  // Keyed embedding tables (--embedding-table keyed): the index's counters at
  // the end (after the final checkpoint's eviction) and at each epoch end.
  bool keyed = false;
  KeyCounters keyed_table;
  struct KeyedEpoch {
    int64_t epoch = 0;  // 1-based, as the log names it
    KeyCounters counters;
  };
  std::vector<KeyedEpoch> keyed_table_epochs;  // this run's epoch ends (a resumed run: from where it resumed)
  // data::InputBoundSuggestion when the fraction >= 0.1 over at least
  // kMinStepsForInputAdvice steps and kMinSecondsForInputAdvice seconds ("" otherwise).
  std::string input_suggestion;
  data::PipelineStats pipeline;    // stream mode: the last epoch's pipeline (all epochs with a cache)
  nlohmann::json source_metrics;   // stream mode: BatchSource::Metrics() (data service figures), or null
  // Input checks (train/input_checks.h): unscaled values, category codes
  // stored as values, saturated validation predictions. Also printed to
  // stderr ("ctrain: warning: ...") or the log sink as they arise.
  std::vector<std::string> warnings;
};

// One synchronous training step, as an observer sees it (monitoring: monitor/train_monitor.h).
struct StepInfo {
  int64_t global_step = 0;         // after the step
  int64_t examples = 0;            // examples in the step (all ranks under mpirun)
  double step_seconds = 0;         // wall time of the step, input wait included
  double input_wait_seconds = 0;   // time blocked on the input (stream mode; 0 in memory mode)
  double loss = 0;                 // the step's mean training loss
  bool has_loss = true;            // false: a step whose loss ctrain never sees (a user's script fed by
                                   // the data service, python/src/script_monitor.h)
};

// Called by Train/TrainStream on the training thread (keep it cheap): after
// every synchronous step (not in hogwild mode, whose steps run on several
// threads at once), and after every validation.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void OnStep(const StepInfo& step) {}
  virtual void OnEval(int64_t global_step, const EvalResult& eval) {}
};

class Trainer {
 public:
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Builds the model replicas, the tables (initialised from options.seed) and
  // the optimizer. Errors: InvalidArgument from options.Validate().
  //
  // With `remote` (not owned; must outlive the trainer), the parameters and
  // their optimizer live there (the parameter servers: remote_parameters.h):
  // no local tables are allocated, Restore() asks the servers what they
  // restored, checkpoints are theirs, and Train() takes this worker's share of
  // each epoch's batches. Refused with a remote (InvalidArgument naming the
  // flag and why): --towers > 1, --hogwild, --warm-start-from, --keep-best,
  // --early-stopping-metric with more than one worker; TrainStream.
  static StatusOr<std::unique_ptr<Trainer>> Create(const TrainOptions& options, RemoteParameters* remote = nullptr);

  // If options.model_dir holds a checkpoint, loads it (tables, dense params,
  // optimizer slots, step, epoch position) and sets *restored = true.
  // With options.warm_start_from set (docs/training.md#warm-start): when
  // model_dir has no checkpoint, or it is the warm_start_from dir itself and
  // its latest checkpoint is not an unfinished run warm-started from it,
  // WarmStart() instead (*restored stays false, warm_started() is true); a
  // model_dir holding the unfinished (or finished) run warm-started from that
  // source is resumed; any other checkpoint in model_dir is FailedPrecondition.
  // Errors: FailedPrecondition when the checkpoint's model config or optimizer
  // differs from the options (the message names the field), or its recorded
  // data options (meta "data": id_base, feature_map, or the encoding as
  // train/data_source.h CheckInputMatchesModel compares it) differ from
  // options.data when both are recorded; the checkpoint reader's
  // DataLoss/NotFound errors.
  // When options.data is not recorded it is taken from the checkpoint.
  Status Restore(bool* restored);

  // Warm start (TrainOptions::warm_start_from, called by Restore): loads the
  // parameters of the latest checkpoint in `from_dir` into this new run (and
  // the optimizer slots with `optimizer_slots`); the global step continues
  // from the checkpoint's, the epoch position starts at 0 and any training
  // data is accepted. The tables' first rows come from the checkpoint; rows
  // beyond its feature_size keep this trainer's initialisation.
  // Errors: NotFound (no checkpoint); FailedPrecondition when a parameter
  // shape key (field_size, embedding_size, deep_layers, batch_norm, use_*)
  // differs, feature_size shrinks, or grows with hashed ids, the optimizer
  // differs with optimizer_slots, or the data encoding differs
  // (CheckInputMatchesModel); the checkpoint's DataLoss.
  Status WarmStart(const std::string& from_dir, bool optimizer_slots);
  // True after a warm start (Restore or WarmStart).
  bool warm_started() const { return warm_started_; }

  // Trains until options.epochs epochs are complete or the global step reaches
  // options.max_steps, evaluating on `valid` (may be null) at each epoch end
  // and every eval_every_steps steps (once per step: a step that is also an
  // epoch end or the last one is evaluated once), checkpointing every
  // save_checkpoints_steps steps, at every epoch end and at the end.
  // Errors: InvalidArgument "step S: loss is not finite (term: logloss|l2) ..."
  // (training stops, nothing after the bad step is applied); when the batch
  // holds extreme input values the message names their input lines
  // (train/input_checks.h LocateRows over train.source_paths()), otherwise it
  // suggests a smaller learning rate; InvalidArgument
  // when the data's field_size differs from the model's; FailedPrecondition
  // when a restored run's training data has a different row count.
  Status Train(const Dataset& train, const Dataset* valid, TrainResult* result);

  // Same as Train, reading the training data through data::Pipeline
  // (train/stream_input.h): epoch ends are the ends of the pipeline's passes;
  // a restored run replays the epoch in progress and skips the batches the
  // checkpoint applied (bit-exact for files with deterministic = true).
  // The inputs (DescribeStreamInputs) are saved in checkpoint meta
  // "train_inputs"; a restored run must read the same ones.
  // Errors: Train's; FailedPrecondition from CheckSameStreamInputs when the
  // restored checkpoint recorded different inputs (files, sizes, shard);
  // EpochBatchSource's (FailedPrecondition for stdin with
  // several epochs and no cache, or a stream resumed mid-epoch); the
  // pipeline's read/parse errors (they name file, record and offset);
  // InvalidArgument for a batch whose field_size differs from the model's or
  // with variable-length rows; the reader's InvalidArgument for an id outside
  // [0, feature_size) (input.reader.id_limit is set to feature_size), naming
  // the file and line or record.
  Status TrainStream(const StreamInput& train, const Dataset* valid, TrainResult* result);

  // Runs `steps` training steps (hogwild: steps * replicas batches) from the
  // current state without eval or checkpoints and returns examples/s over all
  // but the first step (autotune uses it on a scratch trainer).
  StatusOr<double> MeasureThroughput(const Dataset& train, int64_t steps);

  // Predictions (inference mode) and metrics over `data`.
  Status Predict(const Dataset& data, std::vector<float>* probs);
  StatusOr<EvalResult> Evaluate(const Dataset& data);

  // The rate at which the data given to Evaluate (and the validation data of
  // Train/TrainStream) had its negatives kept: each negative counts 1 / rate
  // in the metrics (train/ctr_metrics.h). Default: options.negative_downsampling_rate
  // (validation sampled like training); LoadTrainerFromCheckpoint sets 1.
  // Predictions are corrected for the model's own rate regardless.
  // Errors: InvalidArgument unless rate is in (0, 1].
  Status set_eval_negative_downsampling(double rate);
  // GAUC groups (TrainOptions::group_field) for Evaluate: the field whose id
  // groups examples, -1 = no GAUC. InvalidArgument outside [-1, field_size).
  Status set_group_field(int32_t field);
  // Sample weights of the examples Evaluate is given next (train/sample_weights.h):
  // one per example, in order; empty = every example weighs 1. Evaluate
  // refuses data of another size (InvalidArgument naming both counts).
  void set_eval_weights(std::vector<float> weights);

  // Writes a checkpoint of the current state to options.model_dir now.
  Status SaveCheckpoint();
  // With parameter servers: the whole model, gathered from them, as one local
  // checkpoint in `dir` (RemoteParameters::Export; `--ps-export-dir`).
  // FailedPrecondition for a trainer without parameter servers.
  Status ExportRemoteModel(const std::string& dir);

  int64_t global_step() const;
  const TrainOptions& options() const;

  // Called (if set) with each progress/log line instead of writing stderr.
  void set_log_sink(std::function<void(const std::string&)> sink);

  // Gets every step and validation (null = none). Not owned; must outlive training calls.
  void set_observer(TrainObserver* observer);

  // A stop request (base/signals.h PendingInterruptFlag(): the signal number,
  // 0 = none), polled between steps by Train/TrainStream. When it is set they
  // checkpoint the current position (with a model_dir, unless this call ran no
  // step) and return Cancelled "interrupted by SIGTERM at step N: ...", so a
  // resume continues exactly where the run stopped. A stream input that is
  // waiting for data also ends with Cancelled. Null = never stop.
  void set_stop_flag(const std::atomic<int>* flag);

  // Where TrainStream takes its batches from (null: the local pipeline,
  // EpochBatchSource). The factory gets the checkpoint's "data_cursor".
  void set_batch_source_factory(BatchSourceFactory factory);

  // TrainStream over a stream read with --format auto learns the training
  // format only once read: the --valid inputs (as read, data_source.h
  // InputFormatsRead) are then checked with CheckValidMatchesTraining and a
  // mismatch stops the run before its first step (FailedPrecondition).
  void set_valid_formats(std::vector<InputFormat> formats);

  // Distributed training (train/gradient_exchange.h; null = this process
  // alone, the default). With one set, Train/TrainStream first take rank 0's
  // parameters, slots and position (Horovod's broadcast of the initial or
  // restored state); every step starts with a vote (all ranks have a batch,
  // no stop request), and the step's gradients, BN state, loss and example
  // count are averaged over all ranks, weighted by their examples, before the
  // same update is applied everywhere. The epoch ends on every rank when the
  // shortest shard ends (the others' remaining examples are reported on
  // stderr and counted in examples_left_over()). Checkpoints and validation
  // follow options.model_dir and the `valid` argument: the caller gives them
  // to rank 0 only. Hogwild is refused (InvalidArgument). Dropout masks use
  // the key step * size + rank. Not owned; must outlive training calls.
  void set_gradient_exchange(GradientExchange* exchange);
  // Examples this rank's shard still had when another rank's shard ended an
  // epoch (summed over the epochs of this Trainer; 0 without an exchange).
  int64_t examples_left_over() const;

  // The trainer's state and parts (trainer_impl.h): named here so that the
  // trainer's own files (trainer_feed.cc) can take it; not an API.
  struct Impl;

 private:
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  bool warm_started_ = false;
};

// Opens the latest checkpoint in `model_dir` for eval/predict: the model
// config and optimizer come from its meta; `parallel` sets the threads.
// Errors: NotFound "<model_dir>: no checkpoint"; the checkpoint's errors.
StatusOr<std::unique_ptr<Trainer>> LoadTrainerFromCheckpoint(const std::string& model_dir,
                                                             const ParallelOptions& parallel);

// Model config recorded in the latest checkpoint of `model_dir`.
StatusOr<model::DeepFMConfig> ReadCheckpointModelConfig(const std::string& model_dir);

}  // namespace ctrain::train
