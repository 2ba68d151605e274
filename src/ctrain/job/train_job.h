// The training job of every model kind (--model, model/model.h): what `ctrain train`, the Python package's
// Trainer.fit and the launcher's trainer role run. It validates the options,
// checks every input and output up front, takes the model-dir lock, reads the
// training data (stream through the input pipeline, memory, the data service,
// or the built-in synthetic data), autotunes, trains (train/trainer.h),
// resumes from the model dir, and reports. Under mpirun (dist/) it runs as one
// rank of a synchronous data-parallel job (docs/distributed.md).
//
// Option names are the CLI's flags with underscores (docs/training.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/dataservice/client_settings.h"
#include "ctrain/job/data_options.h"
#include "ctrain/job/explicit_options.h"
#include "ctrain/ps/ps_training.h"
#include "ctrain/train/trainer.h"

namespace ctrain::job {

// Rows of the built-in synthetic job (no --train given): train, then validation.
inline constexpr int64_t kSynthTrainRows = 200000;
inline constexpr int64_t kSynthValidRows = 20000;

struct TrainJobOptions {
  std::vector<std::string> train, valid;  // files, globs or directories; empty train = synthetic data
  DataOptions data;
  // batch_size, epochs, max_steps, seed, shuffle, model_dir, checkpointing,
  // eval_every_steps; the model and optimizer parts are filled from the
  // fields below.
  train::TrainOptions train_options;
  // The model (model/model.h, docs/model.md): its kind and hyper-parameters.
  std::string model = "deepfm";             // deepfm|lr|fm|wide_deep|dcn|dcn_v2|dlrm|xdeepfm
  std::string deep_layers = "400,400,400";  // hidden widths, comma-separated
  int32_t cross_layers = 3;                 // dcn, dcn_v2
  int32_t low_rank = 0;                     // dcn_v2: 0 = full rank
  int32_t num_experts = 1;                  // dcn_v2: low-rank experts per cross layer
  std::string model_structure = "parallel"; // dcn, dcn_v2: parallel|stacked
  std::string cin_layer_units = "16,16,16"; // xdeepfm
  int32_t num_dense_fields = 0;             // the first N fields are numeric (dlrm: they feed the bottom MLP)
  std::string bottom_mlp = "64,64";         // dlrm
  std::string top_mlp = "64,64";            // dlrm
  std::string embedding_initializer = "glorot_normal";  // the tables' start (model/embedding_initializer.h)
  std::string numeric_embedding_initializer;           // the numeric fields' rows ("" = embedding_initializer)
  std::string optimizer = "adam";           // adam|adagrad|sgd|momentum|ftrl
  float learning_rate = 0.0005f;
  int32_t embedding_size = 32;              // K
  float dropout = 0.5f;
  bool batch_norm = false;
  std::string mixed_precision = "f32";      // f32|bf16|auto
  float l2_reg = 0.0f;
  std::string metrics_json;                 // "" = none
  std::string config;                       // the config file the options came from (an input: never overwritten)
  std::string progress = "auto";            // auto|bar|log|none
  // Train even when model_dir holds a finished run on the same inputs and
  // settings (job/finished_run.h); false: such a rerun has nothing to do.
  bool force = false;
  // Monitoring (monitor/monitor.h, docs/launch.md#monitoring): "" = none; else this process's
  // CPU/RSS/GPU samples every monitor_interval_ms and every step's figures go to event files
  // and metrics.jsonl here (under mpirun: monitor_dir/rank<R>).
  std::string monitor_dir;
  int64_t monitor_interval_ms = 1000;
  train::ParallelOptions parallel;          // intra_op threads, towers, hogwild, affinity, deterministic
  bool autotune = false;
  int64_t autotune_steps = 5;
  std::string input_mode = "auto";          // stream|memory|auto
  data::PipelineOptions pipeline = DefaultTrainPipeline();
  dataservice::DataServiceSettings data_service;  // address set: batches from remote workers
  // addresses set: one worker of a parameter-server job (docs/parameter-servers.md); memory mode;
  // uses data_service.security for its channels.
  ps::PsWorkerSettings ps;
  // mpirun (docs/distributed.md): Horovod's learning-rate scaling and stall detector.
  std::string lr_scaling = "none";          // none|linear|sqrt
  double stall_warning_secs = 60, stall_shutdown_secs = 0;
  int64_t check_replicas_every = 0;
  // Learning-rate warm-up (all runs; under mpirun from lr / N) and decay
  // (none|exponential|cosine; train_options.lr_decay_* hold its parameters).
  int64_t lr_warmup_steps = 0;
  std::string lr_decay = "none";
  // Options set explicitly (intra_op_parallelism_threads, towers, hogwild,
  // num_shards, shard_index and the pipeline options).
  ExplicitOptions given;

  static data::PipelineOptions DefaultTrainPipeline() {
    data::PipelineOptions p;
    p.shuffle_buffer_size = 100000;
    return p;
  }
};

// Runs the job. Alone, or as one rank under mpirun: a failing rank ends the
// whole job (MPI_Abort) so that no rank waits for it; a stop request (SIGINT/
// SIGTERM while training: base/signals.h) checkpoints at the current step and
// returns Cancelled on every rank at the same step. `result` (optional)
// receives the run's result. Errors: InvalidArgument naming the flag for bad
// options; the inputs' located errors; FailedPrecondition for a locked or
// unusable model dir. `options` is updated in place with what the run used
// (autotuned threads, the model's data description, mpirun's rank settings).
// `report` (optional) is called with the run's status before this process
// leaves the job: under mpirun, after a stop request, every rank reports and
// then waits for the others (job/rank.h), so no rank's exit ends another
// before it said where its checkpoint went (the CLI prints the status there).
Status RunTrain(TrainJobOptions& options, train::TrainResult* result = nullptr,
                const std::function<void(const Status&)>& report = {});

}  // namespace ctrain::job
