// The steps of the training job (job/train_job.cc's RunTrainJob calls them in
// this order) and the state they hand on. Internal to job/.
//
// | step | file |
// |---|---|
// | ResolveModelOptions, ResolveRunOptions: the job's flags onto train::TrainOptions | train_resolve.cc |
// | DistributedRun::SetUpRank: mpirun's per-rank settings (or the no-MPI refusal) | rank_mpi.cc |
// | CheckModes, CheckCombinations, CheckValidation: the mode x option refusals | train_checks.cc |
// | PrepareOutputs: the model dir (created, locked), writable outputs, outputs not inputs | train_outputs.cc |
// | OpenData, DescribeData, SampleForAutotune: the data, its description, the autotune sample | train_data.cc |
// | Autotune, CreateTrainer, SetUpTrainer, Train | train_job.cc |
// | PrintRunLine, ReportDone, ReportPs, WriteTrainMetrics: the run's lines and --metrics-json | train_report.cc |
// | DistributedRun::Attach, SnapshotTraffic, TrafficJson: the exchange, mpirun's traffic | rank_mpi.cc |
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/job/rank.h"
#include "ctrain/job/train_job.h"
#include "ctrain/monitor/monitor.h"
#include "ctrain/monitor/train_monitor.h"
#include "ctrain/ps/ps_parameters.h"
#include "ctrain/train/model_dir_lock.h"
#include "ctrain/train/trainer.h"

namespace ctrain::job {

// One run's state between the steps (members in the order the steps fill them;
// destroyed in reverse: the monitors and the trainer before the parameter
// servers' client, the data, and the model-dir lock last).
struct TrainRun {
  TrainRun(TrainJobOptions& j, DistributedRun& d) : job(j), o(j.train_options), dist(d) {}

  TrainJobOptions& job;
  train::TrainOptions& o;  // job.train_options
  DistributedRun& dist;
  nlohmann::ordered_json given_values;    // the options away from their defaults, before resolving (EffectiveTrainOptions)
  bool per_rank_inputs = false;           // --train held {local_rank} or {rank}
  std::optional<data::FeatureSpec> spec;  // --feature-spec: it decides F and the id space
  bool report = true;                     // this process prints the run's lines (under mpirun: rank 0 only)
  std::string mode;                       // stream|memory (auto resolved)
  bool remote = false;                    // --data-service
  bool stream = false;
  std::unique_ptr<train::ModelDirLock> model_dir_lock;
  train::Dataset tr, va;
  train::LoadStats tr_stats, va_stats;
  train::StreamInput si;
  train::BatchSourceFactory data_service_factory;
  bool have_valid = false;
  int32_t intra = 0;                      // intra_op threads per replica, as run
  std::unique_ptr<ps::PsParameters> ps_params;  // --ps: the parameters on the servers
  std::unique_ptr<train::Trainer> trainer;
  train::TrainResult r;
  std::unique_ptr<monitor::Monitor> mon;
  std::unique_ptr<monitor::TrainMonitor> train_mon;
};

// train_resolve.cc: the model, mixed precision, --feature-spec, optimizer and
// schedule (before mpirun's rank settings), then the threads and --progress.
Status ResolveModelOptions(TrainRun& run);
Status ResolveRunOptions(TrainRun& run);

// train_checks.cc: every given option against the run's modes (job/option_schema.h
// CheckOptionModes), then the input mode and the combinations of --ps,
// --data-service, --feature-spec, --autotune and mpirun it refuses, before any
// output or input is touched; after the data: TrainOptions::Validate and the
// options that need --valid.
Status CheckModes(TrainRun& run);  // first of all: every given option against the run's modes
Status CheckCombinations(TrainRun& run);
Status CheckValidation(TrainRun& run);

// train_outputs.cc: creates and locks the model dir, checks every output is
// writable and none overwrites an input.
Status PrepareOutputs(TrainRun& run);

// train_data.cc: opens the training data (stream input, the data service, memory
// rows or the synthetic data) and --valid; records the data description (train/data_source.h);
// in stream mode with --autotune reads the in-memory sample autotune measures on.
// FindFeatureMap (before the outputs and the finished-run check): without --feature-map, LibSVM/TFRecord
// training files with a feature map beside the first one (<file>.feature_map.txt, as `ctrain convert
// --vocab-min-count` writes it) take it as the map their ids came from (docs/training.md#daily-retraining).
Status FindFeatureMap(TrainRun& run);
Status OpenData(TrainRun& run);
Status DescribeData(TrainRun& run);
Status SampleForAutotune(TrainRun& run);

// train_report.cc: the model line before training, the done line after it, and --metrics-json.
void PrintRunLine(const TrainRun& run);
void ReportDone(const TrainRun& run);
nlohmann::json ReportPs(const TrainRun& run);  // --ps: the servers' figures (null without --ps), printed
Status WriteTrainMetrics(const TrainRun& run, const nlohmann::json& mpi_json, const nlohmann::json& ps_json);

}  // namespace ctrain::job
