// TrainOptions: everything `ctrain train` can be told, as one value with
// documented defaults, plus its JSON form (stored in every checkpoint's meta so
// that `ctrain eval` / `ctrain predict` rebuild the model without flags and a
// resumed run can check it continues the same model). docs/training.md lists
// the flags that set each field.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/optim/lr_plateau.h"
#include "ctrain/optim/lr_schedule.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/train/key_index.h"

namespace ctrain::train {

// Thread layout of one training process (names follow TensorFlow's
// ConfigProto where one exists). docs/training.md#parallelism.
struct ParallelOptions {
  // OpenMP threads of each replica's kernels (our loops and oneDNN GEMMs).
  // 0 = the cores this process may use divided by the number of replicas.
  int32_t intra_op_threads = 0;
  // Threads that prepare batches (gather the rows of the shuffled order and
  // compute unique ids) ahead of the compute step, overlapping data prep with
  // compute. 0 = prepare inline on the compute thread. Does not change results.
  int32_t inter_op_threads = 0;
  // Synchronous replicas: each step's batch is split into `towers` slices, each
  // computed on its own thread; gradients are averaged (sparse: merged by id)
  // in tower order and applied once. Deterministic. 1 = no split.
  int32_t towers = 1;
  // Asynchronous replicas (Hogwild!, Recht et al. 2011): this many threads each
  // take whole batches and update the shared embedding tables without locks.
  // Dense parameters are updated under a lock. NOT deterministic. 0 = off.
  // Mutually exclusive with towers > 1.
  int32_t hogwild = 0;
  // Pin replica threads and their OpenMP workers one per core (replica r gets
  // cores [r * intra, (r + 1) * intra) of the allowed set).
  bool affinity = false;
  // Refuse settings whose results differ from run to run (hogwild > 0), and
  // keep autotune to deterministic layouts (train/autotune.h).
  bool deterministic = false;

  // InvalidArgument naming the field.
  Status Validate() const;
  // Replicas: towers or hogwild threads (>= 1).
  int32_t replicas() const { return hogwild > 0 ? hogwild : towers; }
};

// How the training files were read and turned into ids: stored in checkpoint
// meta ("data") so that `ctrain eval` / `ctrain predict` read their inputs the
// same way by default and refuse inputs encoded differently
// (train/data_source.h, docs/checkpoint.md#data). Not recorded (from_files =
// false) when the API user built the Dataset without files, or for the
// built-in synthetic data.
struct DataSourceOptions {
  bool from_files = false;  // recorded() below
  // The format the files were actually read as: libsvm|tfrecord|criteo-tsv|
  // criteo-csv, never "auto"; "" = not known (a stream input with --format
  // auto, or a checkpoint written before formats were recorded).
  std::string format;
  std::string compression;  // none|gzip|zlib of the first input; "" = not known
  int32_t id_base = 0;      // libsvm: ids in the files start at this value
  int32_t field_size = 0;   // F; 0 = not recorded (old checkpoint)
  int64_t feature_size = 0; // the id space [0, feature_size); 0 = not recorded
  // Criteo TSV/CSV: categories become ids through a vocabulary (feature map)
  // or by hashing (hash_buckets buckets with hash_seed).
  std::string feature_map;        // vocabulary file (absolute path), "" = hashing
  std::string vocab_fingerprint;  // VocabularyFingerprint of that map, "" = not recorded
  // Its entries ("name id" lines; 0 = not recorded): a later map extends it when
  // the fingerprint of its first vocab_entries entries in id order is vocab_fingerprint.
  // LibSVM/TFRecord files made by `ctrain convert --vocab-min-count` record the
  // map their ids came from here too (docs/training.md#daily-retraining).
  int64_t vocab_entries = 0;
  int64_t hash_buckets = 0;       // hashing: buckets (= feature_size); 0 = not recorded
  uint64_t hash_seed = 0;
  // The feature spec the files were read through (data/feature_spec.h), as
  // its canonical JSON (FeatureSpec::ToJson); "" = no spec. Eval/predict read
  // their input through this spec.
  std::string feature_spec;

  bool recorded() const { return from_files; }
};

nlohmann::json DataSourceToJson(const DataSourceOptions& d, int32_t field_size);
// Reads the current and the older layouts (format "auto", no criteo block):
// what an old checkpoint did not record is left empty / 0.
// InvalidArgument naming the key for a value of the wrong type.
StatusOr<DataSourceOptions> DataSourceFromJson(const nlohmann::json& j);

enum class ProgressMode {
  kAuto,      // a live line when stderr is a terminal, else one line per epoch
  kTerminal,  // always the live line
  kLog,       // one line per epoch (and per evaluation)
  kNone,      // silent
};

struct TrainOptions {
  model::DeepFMConfig model;
  optim::OptimizerConfig optimizer;
  int64_t batch_size = 256;       // examples per step (the last batch of an epoch may be smaller)
  int32_t epochs = 1;             // passes over the training data (>= 1)
  int64_t max_steps = 0;          // stop after this global step (0 = no limit)
  int64_t eval_every_steps = 0;   // also evaluate every N steps (0 = only at epoch ends)
  bool shuffle = true;            // shuffle each epoch (permutation from (seed, epoch))
  uint64_t seed = 2017;           // shuffling and initialisation; the model's dropout uses model.seed
  std::string model_dir;          // checkpoints; empty = none
  int64_t save_checkpoints_steps = 0;  // also checkpoint every N steps (0 = only at the end)
  int32_t keep_checkpoints = 5;   // newest checkpoints kept
  ParallelOptions parallel;
  DataSourceOptions data;         // recorded in checkpoints; does not change training
  ProgressMode progress = ProgressMode::kAuto;
  // Learning-rate schedule (optim/lr_schedule.h, docs/training.md#learning-rate-schedules):
  // a linear warm-up over lr_warmup_steps steps from lr_warmup_from to
  // optimizer.learning_rate (0 steps = none; lr_warmup_from >= 0, 0 = from
  // zero; under mpirun the job sets lr / N, Horovod's LearningRateWarmupCallback),
  // then lr_decay over lr_decay_steps (exponential: x lr_decay_rate per
  // lr_decay_steps, lr_decay_staircase for whole periods; cosine: down to
  // lr_decay_alpha * lr). Synchronous training only (not hogwild).
  int64_t lr_warmup_steps = 0;
  float lr_warmup_from = 0;
  optim::LrDecay lr_decay = optim::LrDecay::kNone;
  int64_t lr_decay_steps = 0;
  float lr_decay_rate = 0.96f;
  bool lr_decay_staircase = false;
  float lr_decay_alpha = 0.0f;
  optim::LrSchedule lr_schedule() const;
  bool has_lr_schedule() const { return lr_warmup_steps > 0 || lr_decay != optim::LrDecay::kNone; }
  // lr_decay == kPlateau (--lr-decay plateau, alias --lr-schedule): reduce the
  // rate on a validation plateau (optim/lr_plateau.h, PyTorch's
  // ReduceLROnPlateau with threshold_mode "abs"), stepped at every scheduled
  // evaluation (epoch ends and every eval_every_steps; not the final one of a
  // run stopped by max_steps), on the same evaluation early stopping and
  // keep_best see. The rate after the warm-up is the scheduler's; a warm-up
  // ramps to it. Needs validation data; its state is kept in checkpoints.
  std::string lr_plateau_metric;  // "" = early_stopping_metric if set, else logloss
  double lr_plateau_factor = 0.1;
  int32_t lr_plateau_patience = 10;   // evaluations
  int32_t lr_plateau_cooldown = 0;    // evaluations
  double lr_plateau_min_lr = 0;
  double lr_plateau_min_delta = 1e-4;  // absolute
  bool lr_plateau() const { return lr_decay == optim::LrDecay::kPlateau; }
  // The monitored metric (the default resolved).
  std::string plateau_metric() const {
    return !lr_plateau_metric.empty() ? lr_plateau_metric
                                      : !early_stopping_metric.empty() ? early_stopping_metric : "logloss";
  }
  // The scheduler's parameters, mode from plateau_metric() (min for an unknown name; Validate refuses it).
  optim::PlateauConfig plateau_config() const;

  // Early stopping (tf.estimator.experimental.stop_if_no_increase_hook,
  // Keras EarlyStopping): after each validation, training stops once
  // early_stopping_patience evaluations in a row did not improve
  // early_stopping_metric by more than early_stopping_min_delta. Metrics:
  // auc, gauc, pr_auc (higher is better), logloss, normalized_entropy (lower).
  // "" = never stop. Needs validation data. The best value and the count
  // are kept in checkpoints, so a resumed run counts on.
  std::string early_stopping_metric;
  int32_t early_stopping_patience = 0;  // evaluations without improvement; >= 1 with a metric
  double early_stopping_min_delta = 0;  // >= 0
  // keep_best: after an evaluation that improves the metric (early_stopping_metric,
  // default auc), also save that checkpoint to model_dir/best/ (a model dir of
  // its own: `ctrain eval/predict --model-dir DIR/best`). Needs model_dir.
  bool keep_best = false;
  // The metric keep_best and early stopping compare ("auc" when none is set).
  std::string best_metric() const { return early_stopping_metric.empty() ? "auc" : early_stopping_metric; }

  // Validation metrics (train/ctr_metrics.h): GAUC groups examples by the id
  // in field group_field (0-based; -1 = no GAUC), e.g. the user-id field.
  int32_t group_field = -1;
  // The training (and validation) data's negatives were kept at this rate,
  // in (0, 1]; 1 = not downsampled. Recorded in checkpoints: evaluation and
  // prediction correct the model's probabilities q to q / (q + (1 - q) / rate),
  // and validation weighs each negative 1 / rate.
  double negative_downsampling_rate = 1.0;

  // Warm start (tf.estimator.WarmStartSettings; docs/training.md#warm-start):
  // a new run that starts from the parameters of the latest checkpoint in
  // warm_start_from (another model dir, or model_dir itself), not from the
  // seed's initialisation, and trains on any data. With warm_start_optimizer
  // the optimizer slots (Adam m/v, Adagrad accumulators, ...) come along too.
  // A larger feature_size keeps the checkpoint's rows and initialises the new
  // ones. See Trainer::Restore for when a checkpoint in model_dir is resumed
  // instead. "" = off.
  std::string warm_start_from;
  bool warm_start_optimizer = false;

  // The embedding tables: positional ("fixed", rows [0, feature_size)) or
  // keyed (train/key_index.h: ids are 64-bit keys in [0, feature_size), rows
  // made on admission, evicted at checkpoints). Recorded in checkpoint meta
  // "embedding_table", so eval/predict/resume use the same.
  KeyedTableOptions table;
  // Keyed tables: after each full checkpoint, this many incremental ones
  // (only the rows read or made, and the keys evicted, since the full one;
  // train/keyed_checkpoint.h); 0 = every checkpoint full.
  int32_t incremental_checkpoints = 0;
  // What this run consumes (its inputs' content and the settings that decide
  // the model: job/finished_run.h), saved as is in every checkpoint's meta
  // "run_record"; null = none recorded. With meta "finished", a rerun on equal
  // inputs and settings knows it has nothing to do. Does not change training.
  nlohmann::json run_record;

  // InvalidArgument naming the field (also validates model, optimizer, parallel).
  Status Validate() const;
};

// JSON forms (keys = the flag names with underscores). FromJson fails with
// InvalidArgument naming the key for a missing key or a value of the wrong type.
nlohmann::json ModelConfigToJson(const model::DeepFMConfig& c);
StatusOr<model::DeepFMConfig> ModelConfigFromJson(const nlohmann::json& j);
nlohmann::json OptimizerConfigToJson(const optim::OptimizerConfig& c);
StatusOr<optim::OptimizerConfig> OptimizerConfigFromJson(const nlohmann::json& j);

// "400,400,400" -> {400, 400, 400}; "" -> {}. InvalidArgument "<name> '<text>': element N ..." for a bad or
// non-positive width.
StatusOr<std::vector<int32_t>> ParseLayerList(std::string_view text, std::string_view name = "deep_layers");
std::string FormatLayerList(const std::vector<int32_t>& layers);

}  // namespace ctrain::train
