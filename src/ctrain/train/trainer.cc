#include "ctrain/train/trainer.h"

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <filesystem>
#include <random>
#include <set>

#include "ctrain/model/deepfm.h"
#include "ctrain/model/random.h"
#include "ctrain/optim/lr_schedule.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/ctr_metrics.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/memory_budget.h"
#include "ctrain/train/metrics.h"
#include "ctrain/train/parameter_table.h"
#include "ctrain/train/remote_parameters.h"
#include "ctrain/train/threads.h"
#include "ctrain/train/trainer_state.h"
#include "ctrain/train/worker_pool.h"

namespace ctrain::train {

namespace {

using Clock = std::chrono::steady_clock;

// Stream mode: the input checks look at this many examples (or the first
// epoch, if shorter) before they warn.
constexpr int64_t kStreamInputCheckExamples = 10000;
// ... and re-read at most this many examples to name the line of a field's
// largest value (the shuffle buffer may have moved it far from the start).
constexpr int64_t kStreamLocateExamples = 1000000;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string FormatDuration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t / 60 % 60));
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

// One model replica and its per-step buffers.
struct Replica {
  std::unique_ptr<model::DeepFM> model;
  data::Batch batch;
  std::vector<int64_t> rows;  // memory mode: dataset rows of this replica's current batch
  std::vector<int64_t> unique_ids;
  std::vector<int32_t> index;
  std::vector<float> w_rows, v_rows;
  model::SparseGrad w_grad, v_grad;
  model::LossTerms loss;
  Status status;
};

// The error for a step whose loss is not finite, naming the term. When the
// batch holds extreme input values (input_checks.h), they are the cause: the
// message names their input lines; only ordinary inputs get the
// learning-rate hint.
Status NonFiniteLoss(int64_t step, const model::LossTerms& loss, const data::Batch& batch,
                     const std::vector<std::string>& paths, const data::ExampleReaderOptions& reader) {
  const char* term = !std::isfinite(loss.logloss) ? "logloss" : (!std::isfinite(loss.l2) ? "l2" : "loss");
  const double v = !std::isfinite(loss.logloss) ? loss.logloss : (!std::isfinite(loss.l2) ? loss.l2 : loss.loss);
  char buf[256];
  std::snprintf(buf, sizeof buf, "step %lld: loss is not finite (term: %s = %g)", static_cast<long long>(step), term,
                v);
  const std::vector<ExtremeRow> rows = ExtremeRows(batch, 5);
  if (rows.empty())
    return InvalidArgumentError(std::string(buf) +
                                "; training stopped before applying this step (diverged: try a smaller "
                                "--learning-rate)");
  std::string m = std::string(buf) + " on a batch holding extreme input values: ";
  const std::vector<std::string> where = LocateRows(paths, reader, batch, rows);
  for (size_t i = 0; i < where.size(); ++i) m += (i ? "; " : "") + where[i];
  m += ". Values this large overflow the forward pass (DeepFM multiplies each value into an embedding and the FM "
       "term squares the sum): scale them (e.g. log1p) or drop these rows. Training stopped before applying this step";
  return InvalidArgumentError(m);
}

// The error for a non-finite prediction of `row` (batch row `i`): names the
// row's input line and its largest value (never a silent NaN in eval/predict).
Status NonFinitePrediction(const Dataset& data, const data::Batch& batch, int64_t i, int64_t row) {
  ExtremeRow x{i, 0, 0};
  const int32_t F = batch.field_size;
  if (batch.multi_hot())
    return InvalidArgumentError("input row " + std::to_string(row) + ": the prediction is not finite");
  for (int32_t f = 0; f < F; ++f) {
    const float v = batch.values[i * F + f];
    if (!std::isfinite(v) || std::fabs(v) > std::fabs(x.value)) x = {i, f, v};
    if (!std::isfinite(v)) break;
  }
  const std::string where = LocateRows(data.source_paths(), data.source_reader(), batch, {x}).at(0);
  const bool extreme = !std::isfinite(x.value) || std::fabs(x.value) >= InputCheckOptions().extreme_abs_value;
  return InvalidArgumentError("input row " + std::to_string(row) + ": the prediction is not finite (" + where + ")" +
                              (extreme ? ": extreme input values overflow the model; scale them (e.g. log1p) or "
                                         "drop the row"
                                       : ": the model's parameters are not finite"));
}

// A config value for an error message: floats with %g (the JSON form of a
// float such as 0.1f reads 0.10000000149011612); %.9g when %g would make two
// different values look the same.
std::string ConfigText(const nlohmann::json& v, const nlohmann::json& other) {
  if (!v.is_number_float()) return v.dump();
  char a[32], b[32];
  std::snprintf(a, sizeof a, "%g", v.get<double>());
  std::snprintf(b, sizeof b, "%g", other.is_number() ? other.get<double>() : 0.0);
  if (other.is_number() && std::strcmp(a, b) == 0) std::snprintf(a, sizeof a, "%.9g", v.get<double>());
  return a;
}

}  // namespace

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
  Status NoteStreamFormats() {
    if (stream_src == nullptr || !options.data.recorded()) return Status::OK();
    std::vector<InputFormat> read;
    for (const data::InputReadStats& in : stream_src->stats().inputs) read.push_back({in.name, in.format, in.compression});
    const bool was_unknown = options.data.format.empty();
    CTRAIN_RETURN_IF_ERROR(RecordFormatsRead(read, stream_known_from, &options.data));
    if (was_unknown && !options.data.format.empty() && !valid_formats.empty())
      CTRAIN_RETURN_IF_ERROR(CheckValidMatchesTraining(options.data, source_paths, valid_formats, source_reader,
                                                       options.data.feature_map));
    if (!restored_data_checked && !options.data.format.empty()) {
      restored_data_checked = true;
      std::vector<std::string> notes;
      CTRAIN_RETURN_IF_ERROR(
          CheckInputMatchesModel(restored_data, options.model_dir, options.data, "this run's --train", &notes)
              .WithContext(restored_path + ": resume"));
    }
    return Status::OK();
  }
  std::function<void(const std::string&)> sink;
  bool terminal = false;
  const std::atomic<int>* stop_flag = nullptr;  // set_stop_flag
  TrainObserver* observer = nullptr;             // set_observer

  int StopSignal() const { return stop_flag != nullptr ? stop_flag->load(std::memory_order_acquire) : 0; }
  // Between steps, after a stop request: checkpoint this position (unless
  // this call ran no step), then Cancelled naming the step and what was saved.
  // `signal`: the request (0 = StopSignal(); distributed: the ranks' vote).
  Status Stop(int64_t start_step, int signal = 0) {
    const int sig = signal != 0 ? signal : StopSignal();
    const std::string what = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
    std::string msg = "interrupted by " + what + " at step " + std::to_string(pos.global_step) + ": ";
    if (exch != nullptr && !exch->is_chief()) {
      msg += "every rank stopped at this step; rank 0 writes the checkpoint";
    } else if (options.model_dir.empty()) {
      msg += "no --model-dir, nothing was saved";
    } else if (pos.global_step == start_step) {
      msg += "no step ran in this run, the checkpoint in " + options.model_dir + " is unchanged";
    } else {
      CTRAIN_RETURN_IF_ERROR(SaveFinal());
      msg += "checkpoint " + options.model_dir + (options.model_dir.back() == '/' ? "" : "/") +
             CheckpointFileName(pos.global_step) +
             " saved; run the same command to resume";
    }
    return CancelledError(msg);
  }

  void Log(const std::string& line) {
    if (sink) {
      sink(line);
      return;
    }
    if (options.progress == ProgressMode::kNone) return;
    std::fprintf(stderr, "%s\n", line.c_str());
  }

  // Evaluates `valid` (if any) into result->eval and logs one line, at most
  // once per global step (*eval_step remembers the last evaluated step).
  Status EvaluateAndLog(const Dataset* valid, const char* when, int64_t* eval_step, TrainResult* result) {
    if (valid == nullptr || (result->evaluated && *eval_step == pos.global_step)) return Status::OK();
    CTRAIN_ASSIGN_OR_RETURN(result->eval, Evaluate(*valid));
    result->evaluated = true;
    *eval_step = pos.global_step;
    if (observer != nullptr) observer->OnEval(pos.global_step, result->eval);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s%s step %lld: valid auc %.5f logloss %.5f (%lld examples)",
                  terminal ? "\r\033[K" : "", when, static_cast<long long>(pos.global_step), result->eval.auc,
                  result->eval.logloss, static_cast<long long>(result->eval.examples));
    Log(buf);
    CTRAIN_RETURN_IF_ERROR(TrackBest(result));
    if (!saturation_warned) {
      const std::string w =
          SaturationWarning(result->eval.saturated_fraction, result->eval.examples, pos.global_step);
      if (!w.empty()) {
        saturation_warned = true;
        Warn(w, result);
      }
    }
    return Status::OK();
  }

  // ---- early stopping and the best checkpoint (TrainOptions::early_stopping_metric, keep_best) ----
  bool tracking_best() const { return !options.early_stopping_metric.empty() || options.keep_best; }
  double best_value = std::numeric_limits<double>::quiet_NaN();  // NaN: no evaluation yet
  int64_t best_step = 0;
  int32_t evals_since_best = 0;
  bool early_stopped = false;  // set by TrackBest; kept in checkpoints
  static constexpr char kBestDir[] = "best";

  // After an evaluation at pos.global_step: updates the best value, saves the
  // best checkpoint (keep_best) and decides on early stopping.
  Status TrackBest(TrainResult* result) {
    if (!tracking_best()) return Status::OK();
    const std::string metric = options.best_metric();
    const double v = result->eval.Metric(metric);
    const bool higher = metric == "auc" || metric == "gauc" || metric == "pr_auc";
    const double d = options.early_stopping_min_delta;
    const bool improved =
        !std::isnan(v) && (std::isnan(best_value) || (higher ? v > best_value + d : v < best_value - d));
    if (improved) {
      best_value = v;
      best_step = pos.global_step;
      evals_since_best = 0;
      if (options.keep_best && (exch == nullptr || exch->is_chief())) {
        if (!hog_master.empty()) SyncReplicas();
        const std::string dir = BestDir();
        CTRAIN_RETURN_IF_ERROR(WriteTrainerCheckpoint(dir, pos.global_step, Tensors(), Meta(), 1));
        char buf[256];
        std::snprintf(buf, sizeof buf, "%sbest %s %.6f at step %lld: saved to %s", terminal ? "\r\033[K" : "",
                      metric.c_str(), v, static_cast<long long>(pos.global_step), dir.c_str());
        Log(buf);
      }
    } else {
      ++evals_since_best;
      if (options.early_stopping_patience > 0 && evals_since_best >= options.early_stopping_patience) {
        early_stopped = true;
        char buf[320];
        std::snprintf(buf, sizeof buf,
                      "%searly stopping at step %lld: %s has not improved on %.6f (step %lld) for %d evaluation(s)",
                      terminal ? "\r\033[K" : "", static_cast<long long>(pos.global_step), metric.c_str(),
                      best_value, static_cast<long long>(best_step), evals_since_best);
        Log(buf);
      }
    }
    result->early_stopped = early_stopped;
    result->best_metric = best_value;
    result->best_step = best_step;
    return Status::OK();
  }
  std::string BestDir() const {
    return options.model_dir + (options.model_dir.back() == '/' ? "" : "/") + kBestDir;
  }

  // ---- setup ----
  // With a remote: the options it cannot honour, named (InvalidArgument).
  Status CheckRemoteOptions() const {
    const std::string ps = "--ps (" + remote->Describe() + ")";
    if (options.parallel.towers > 1 || options.parallel.hogwild > 0)
      return InvalidArgumentError(ps + ": a worker runs one replica (no --towers / --hogwild); start more workers "
                                  "instead");
    if (!options.warm_start_from.empty())
      return InvalidArgumentError("--warm-start-from is not supported with " + ps +
                                  ": the servers initialise or restore the parameters themselves (warm-start a "
                                  "local run, or restart the servers from its sharded checkpoint)");
    if (options.keep_best)
      return InvalidArgumentError("--keep-best is not supported with " + ps +
                                  ": the parameters live on the servers, which save into --model-dir only");
    if (!options.early_stopping_metric.empty() && remote->num_workers() > 1)
      return InvalidArgumentError("--early-stopping-metric is not supported with " + ps +
                                  " and more than one worker: the chief alone validates, the other workers could not "
                                  "stop at its step");
    return Status::OK();
  }

  Status Init() {
    CTRAIN_RETURN_IF_ERROR(options.Validate());
    if (remote != nullptr) CTRAIN_RETURN_IF_ERROR(CheckRemoteOptions());
    CTRAIN_ASSIGN_OR_RETURN(optimizer, optim::MakeOptimizer(options.optimizer));
    current_lr = options.optimizer.learning_rate;
    const ParallelOptions& par = options.parallel;
    const int32_t R = par.replicas();
    intra = par.intra_op_threads > 0 ? par.intra_op_threads : std::max(1, AvailableCpus() / R);
    replicas.resize(R);
    for (auto& r : replicas) {
      r.model = std::make_unique<model::DeepFM>(options.model);
      CTRAIN_RETURN_IF_ERROR(r.model->status());
      r.model->InitDense(options.seed);
    }
    auto& dense = replicas[0].model->dense_params();
    if (remote == nullptr) {  // a --feature-size too large for this machine: refused here, not OOM-killed while filling the tables
      int64_t dense_floats = 0;
      for (const auto& d : dense) dense_floats += static_cast<int64_t>(d.value.size());
      CTRAIN_RETURN_IF_ERROR(CheckParameterMemory(options.model.feature_size, options.model.embedding_size,
                                                  optimizer->num_slots(), options.optimizer.name, dense_floats,
                                                  ReadMemoryAvailable()));
    }
    if (remote == nullptr) {  // else the servers hold the tables and every optimizer slot
      dense_slots.resize(dense.size());
      for (size_t i = 0; i < dense.size(); ++i) {
        dense_slots[i].resize(optimizer->num_slots());
        for (int k = 0; k < optimizer->num_slots(); ++k)
          dense_slots[i][k].assign(dense[i].value.size(), optimizer->SlotInit(k));
      }
      CTRAIN_RETURN_IF_ERROR(InitTables());
    }
    if (par.hogwild > 0) {
      hog_master.resize(dense.size());
      for (size_t i = 0; i < dense.size(); ++i) hog_master[i] = dense[i].value;
    }
    pool = std::make_unique<WorkerPool>(R, intra, par.affinity);
    eval_metric_options.negative_downsampling_rate = options.negative_downsampling_rate;
    switch (options.progress) {
      case ProgressMode::kAuto: terminal = isatty(STDERR_FILENO) != 0; break;
      case ProgressMode::kTerminal: terminal = true; break;
      default: terminal = false;
    }
    return Status::OK();
  }

  // The embedding tables: unlocked (kHogwild) in every mode. Synchronous
  // training pulls (possibly from several towers at once) and pushes in
  // separate phases of a step, so rows are never read while written; hogwild
  // races on purpose. Each table has its own optimizer instance of the same
  // config (optimizers keep no per-call state). In hogwild mode the replica
  // threads push concurrently, so a table update stays on its thread
  // (parallel_min_floats = max) instead of each thread starting an OpenMP team.
  Status InitTables() {
    optim::OptimizerConfig cfg = options.optimizer;
    if (options.parallel.hogwild > 0) cfg.parallel_min_floats = std::numeric_limits<int64_t>::max();
    LocalTableOptions to;
    to.concurrency = TableConcurrency::kHogwild;
    const int64_t rows = options.model.feature_size;
    const int32_t K = options.model.embedding_size;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> wopt, optim::MakeOptimizer(cfg));
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> vopt, optim::MakeOptimizer(cfg));
    CTRAIN_ASSIGN_OR_RETURN(w_table, LocalParameterTable::Create("embeddings/w", rows, 1, std::move(wopt), to));
    CTRAIN_ASSIGN_OR_RETURN(v_table, LocalParameterTable::Create("embeddings/V", rows, K, std::move(vopt), to));
    model::DeepFM::InitEmbeddings(options.seed, rows, K, w_table->data(), v_table->data());
    return Status::OK();
  }

  // Pulls the rows of rep.unique_ids into rep.w_rows / rep.v_rows.
  Status PullRows(Replica& rep) {
    const size_t U = rep.unique_ids.size();
    rep.w_rows.resize(U);
    rep.v_rows.resize(U * options.model.embedding_size);
    if (remote != nullptr)  // the rows and the current dense values, from the servers
      return remote->Pull(rep.unique_ids, rep.w_rows.data(), rep.v_rows.data(), &rep.model->dense_params());
    CTRAIN_RETURN_IF_ERROR(w_table->Pull(rep.unique_ids, rep.w_rows.data()));
    return v_table->Pull(rep.unique_ids, rep.v_rows.data());
  }

  // Applies the sparse grads (ids unique and ascending) to the tables.
  Status PushRows(const model::SparseGrad& w_grad, const model::SparseGrad& v_grad, int64_t step) {
    if (!w_grad.ids.empty())
      CTRAIN_RETURN_IF_ERROR(w_table->Push(SparseRows{w_grad.ids, w_grad.grad.data(), w_grad.dim}, step));
    if (!v_grad.ids.empty())
      CTRAIN_RETURN_IF_ERROR(v_table->Push(SparseRows{v_grad.ids, v_grad.grad.data(), v_grad.dim}, step));
    return Status::OK();
  }

  // ---- state shared with checkpoints ----
  // Dense values the optimizer owns (replica 0 in sync mode, the master in hogwild).
  float* DenseValue(size_t i) {
    return hog_master.empty() ? replicas[0].model->dense_params()[i].value.data() : hog_master[i].data();
  }
  // Copies the master dense values into every replica.
  void SyncReplicas() {
    auto& d0 = replicas[0].model->dense_params();
    for (size_t r = hog_master.empty() ? 1 : 0; r < replicas.size(); ++r) {
      auto& d = replicas[r].model->dense_params();
      for (size_t i = 0; i < d.size(); ++i) {
        const float* src = DenseValue(i);
        std::memcpy(d[i].value.data(), src, d0[i].value.size() * sizeof(float));
      }
      auto& s = replicas[r].model->state();
      auto& s0 = replicas[0].model->state();
      if (r != 0)
        for (size_t i = 0; i < s.size(); ++i) s[i].value = s0[i].value;
    }
  }

  CheckpointTensors Tensors() {
    CheckpointTensors t;
    // Names and shapes as docs/checkpoint.md: w is stored 1-D [feature_size].
    const int64_t rows = w_table->rows();
    const int32_t K = v_table->dim();
    t.Add(w_table->name(), {rows}, w_table->data(), rows);
    t.Add(v_table->name(), {rows, K}, v_table->data(), rows * K);
    for (int k = 0; k < w_table->num_slots(); ++k) {
      const std::string slot(w_table->optimizer().SlotName(k));
      t.Add(w_table->name() + "/" + slot, {rows}, w_table->slot(k), rows);
      t.Add(v_table->name() + "/" + slot, {rows, K}, v_table->slot(k), rows * K);
    }
    auto& dense = replicas[0].model->dense_params();
    for (size_t i = 0; i < dense.size(); ++i) {
      t.Add(dense[i].name, dense[i].shape, DenseValue(i), dense[i].value.size());
      for (int k = 0; k < optimizer->num_slots(); ++k)
        t.Add(dense[i].name + "/" + std::string(optimizer->SlotName(k)), dense[i].shape, dense_slots[i][k].data(),
              dense_slots[i][k].size());
    }
    for (auto& s : replicas[0].model->state()) t.Add(s.name, s.shape, s.value.data(), s.value.size());
    return t;
  }

  nlohmann::json Meta() const {
    nlohmann::json m;
    m["format"] = "ctrain-deepfm-checkpoint-v1";
    m["model"] = ModelConfigToJson(options.model);
    m["optimizer"] = OptimizerConfigToJson(options.optimizer);
    m["seed"] = options.seed;
    m["batch_size"] = options.batch_size;
    m["shuffle"] = options.shuffle;
    m["global_step"] = pos.global_step;
    m["epoch"] = pos.epoch;
    m["batch_in_epoch"] = pos.batch_in_epoch;
    m["examples"] = pos.examples;
    m["train_rows"] = pos.train_rows;
    if (options.data.recorded()) m["data"] = DataSourceToJson(options.data, options.model.field_size);
    if (options.negative_downsampling_rate != 1.0) m["negative_downsampling_rate"] = options.negative_downsampling_rate;
    if (!warm_start_meta.is_null()) m["warm_start"] = warm_start_meta;
    m["finished"] = finished;
    if (tracking_best())
      m["early_stopping"] = {{"metric", options.best_metric()},
                             {"best", std::isnan(best_value) ? nlohmann::json(nullptr) : nlohmann::json(best_value)},
                             {"best_step", best_step},
                             {"evals_since_best", evals_since_best},
                             {"stopped", early_stopped}};
    if (!train_inputs.is_null()) m["train_inputs"] = train_inputs;
    if (stream_src != nullptr) {
      nlohmann::json cursor = stream_src->Cursor();
      if (!cursor.is_null()) m["data_cursor"] = std::move(cursor);
    }
    return m;
  }

  Status Save() {
    if (options.model_dir.empty()) return Status::OK();
    if (remote != nullptr) {  // the servers save their shards, the chief the manifest
      CTRAIN_RETURN_IF_ERROR(remote->Save(options.model_dir, Meta(), replicas[0].model->state()));
      saved_this_run = true;
      saved_pos = pos;
      return Status::OK();
    }
    CTRAIN_RETURN_IF_ERROR(NoteStreamFormats());  // the format a stream was read in, never ""
    if (!hog_master.empty()) SyncReplicas();
    CheckpointTensors t = Tensors();
    CTRAIN_RETURN_IF_ERROR(
        WriteTrainerCheckpoint(options.model_dir, pos.global_step, t, Meta(), options.keep_checkpoints));
    saved_this_run = true;
    saved_pos = pos;
    return Status::OK();
  }
  // The position of the last checkpoint written by this Train/TrainStream call.
  bool saved_this_run = false;
  TrainPosition saved_pos;
  // The end-of-training checkpoint, unless the last one already holds this position.
  Status SaveFinal() {
    if (saved_this_run && saved_pos.global_step == pos.global_step && saved_pos.epoch == pos.epoch &&
        saved_pos.batch_in_epoch == pos.batch_in_epoch)
      return Status::OK();
    return Save();
  }

  // ---- epoch order ----
  void EpochOrder(int64_t n, int64_t epoch, std::vector<int64_t>* order) const {
    order->resize(n);
    std::iota(order->begin(), order->end(), int64_t{0});
    if (!options.shuffle) return;
    // Fisher-Yates with a generator seeded from (seed, epoch): the order is a
    // pure function of both, so a resumed run recomputes it exactly.
    std::mt19937_64 rng(model::StreamKey(options.seed, 0x5eed0000ULL + static_cast<uint64_t>(epoch)));
    for (int64_t i = n - 1; i > 0; --i) {
      const uint64_t j = rng() % static_cast<uint64_t>(i + 1);
      std::swap((*order)[i], (*order)[j]);
    }
  }

  // ---- one replica's forward/backward on replica.batch ----
  void Compute(Replica& rep, int64_t dropout_step) {
    model::DeepFM::UniqueIds(rep.batch, &rep.unique_ids, &rep.index);
    rep.status = PullRows(rep);
    if (!rep.status.ok()) {
      rep.loss = model::LossTerms();  // finite: StepStatus reports rep.status
      return;
    }
    rep.status = rep.model->TrainStep(rep.batch, rep.unique_ids, rep.index, rep.w_rows.data(), rep.v_rows.data(),
                                      dropout_step, &rep.w_grad, &rep.v_grad, &rep.loss);
  }

  // Checks a replica's step result; the non-finite loss error names the global step.
  Status StepStatus(const Replica& rep, int64_t step) const {
    if (rep.status.ok()) return Status::OK();
    if (!std::isfinite(rep.loss.logloss) || !std::isfinite(rep.loss.l2))
      return NonFiniteLoss(step, rep.loss, rep.batch, source_paths, source_reader);
    return rep.status;
  }
  // Where the training rows came from (to name them in errors).
  std::vector<std::string> source_paths;
  data::ExampleReaderOptions source_reader;

  // ---- input checks (input_checks.h) ----
  void Warn(const std::string& w, TrainResult* result) {
    result->warnings.push_back(w);
    if (sink) sink((terminal ? "\r\033[K" : "") + std::string("warning: ") + w);
    else std::fprintf(stderr, "%sctrain: warning: %s\n", terminal ? "\r\033[K" : "", w.c_str());
  }
  bool input_warned = false, saturation_warned = false;
  // `max_scan`: examples read to locate a field's largest value in the inputs.
  void WarnInputs(const InputStats& st, TrainResult* result, int64_t max_scan) {
    if (input_warned) return;
    input_warned = true;
    for (const std::string& w : st.Warnings("training examples", &source_paths, &source_reader, max_scan))
      Warn(w, result);
  }

  void ApplyDense(int64_t step, const std::vector<model::DenseParam>& grads_from) {
    for (size_t i = 0; i < grads_from.size(); ++i) {
      std::vector<float*> slots(dense_slots[i].size());
      for (size_t k = 0; k < slots.size(); ++k) slots[k] = dense_slots[i][k].data();
      optimizer->ApplyDense(DenseValue(i), grads_from[i].grad.data(), slots.data(),
                            static_cast<int64_t>(grads_from[i].value.size()), step);
    }
  }

  // Merges the towers' sparse grads by id with weights wt[t] into *out (ids ascending).
  static void MergeSparse(const std::vector<const model::SparseGrad*>& g, const std::vector<float>& wt,
                          model::SparseGrad* out) {
    const int32_t dim = g[0]->dim;
    out->dim = dim;
    out->ids.clear();
    for (auto* s : g) out->ids.insert(out->ids.end(), s->ids.begin(), s->ids.end());
    std::sort(out->ids.begin(), out->ids.end());
    out->ids.erase(std::unique(out->ids.begin(), out->ids.end()), out->ids.end());
    out->grad.assign(out->ids.size() * dim, 0.0f);
    for (size_t t = 0; t < g.size(); ++t) {  // tower order: deterministic sums
      size_t j = 0;
      for (size_t i = 0; i < g[t]->ids.size(); ++i) {
        while (out->ids[j] != g[t]->ids[i]) ++j;
        const float* src = g[t]->grad.data() + i * dim;
        float* dst = out->grad.data() + j * dim;
        for (int32_t k = 0; k < dim; ++k) dst[k] += wt[t] * src[k];
      }
    }
  }

  // Fills rep.batch with rows [lo, hi) of the step's batch (offsets in the batch).
  using FillFn = std::function<void(Replica& rep, int64_t lo, int64_t hi)>;

  // ---- a synchronous step over a batch of B rows ----
  Status SyncStep(int64_t B, const FillFn& fill, double* loss_out) {
    const int64_t step = pos.global_step + 1;
    if (options.has_lr_schedule()) SetScheduledRate(step - warm_start_step);
    const int64_t ostep = step - opt_step_base;  // the optimizer's own count (Adam's bias correction)
    const int32_t T = static_cast<int32_t>(replicas.size());
    // Distributed: distinct dropout streams per rank (step, rank) -> step * N + rank.
    // Parameter servers: per worker (step, worker) -> step * W + k.
    const int64_t key = exch != nullptr     ? step * exch->size() + exch->rank()
                        : remote != nullptr ? step * remote->num_workers() + remote->worker_index()
                                            : step;
    int64_t examples = B;
    if (remote != nullptr && B == 0) {  // a sync round without a batch for this worker: weight 0
      CTRAIN_RETURN_IF_ERROR(remote->Push({}, {}, nullptr, current_lr, 0));
      examples = 0;
      *loss_out = 0;
    } else if (T == 1) {
      Replica& rep = replicas[0];
      fill(rep, 0, B);
      Compute(rep, key);
      CTRAIN_RETURN_IF_ERROR(StepStatus(rep, step));
      double loss = rep.loss.loss;
      if (exch != nullptr)
        CTRAIN_RETURN_IF_ERROR(ExchangeStep(step, B, &rep.w_grad, &rep.v_grad, rep.model->dense_params(),
                                            rep.model->state(), &loss, &examples));
      if (remote != nullptr) {  // the servers run the optimizer
        CTRAIN_RETURN_IF_ERROR(remote->Push(rep.w_grad, rep.v_grad, &rep.model->dense_params(), current_lr, B));
      } else {
        CTRAIN_RETURN_IF_ERROR(PushRows(rep.w_grad, rep.v_grad, ostep));
        ApplyDense(ostep, rep.model->dense_params());
      }
      *loss_out = loss;
    } else {
      // Slices [B*t/T, B*(t+1)/T); a tower with an empty slice sits out.
      std::vector<int64_t> lo(T + 1);
      for (int32_t t = 0; t <= T; ++t) lo[t] = B * t / T;
      pool->Run([&](int32_t t) {
        Replica& rep = replicas[t];
        if (lo[t + 1] == lo[t]) {
          rep.status = Status::OK();
          return;
        }
        fill(rep, lo[t], lo[t + 1]);
        // Distinct dropout streams per tower: (step, tower) -> step * T + t.
        Compute(rep, key * T + t);
      });
      std::vector<const model::SparseGrad*> wg, vg;
      std::vector<float> wt;
      std::vector<int32_t> active;
      double loss = 0;
      for (int32_t t = 0; t < T; ++t) {
        if (lo[t + 1] == lo[t]) continue;
        CTRAIN_RETURN_IF_ERROR(StepStatus(replicas[t], step));
        active.push_back(t);
        wt.push_back(static_cast<float>(static_cast<double>(lo[t + 1] - lo[t]) / static_cast<double>(B)));
        wg.push_back(&replicas[t].w_grad);
        vg.push_back(&replicas[t].v_grad);
        loss += wt.back() * replicas[t].loss.loss;
      }
      MergeSparse(wg, wt, &merged_w);
      MergeSparse(vg, wt, &merged_v);
      // Dense: weighted sum of tower grads into replica 0's grads, then one update.
      auto& d0 = replicas[0].model->dense_params();
      for (size_t i = 0; i < d0.size(); ++i) {
        const int64_t n = static_cast<int64_t>(d0[i].grad.size());
        float* g0 = d0[i].grad.data();
        const size_t A = active.size();
#pragma omp parallel for schedule(static) if (n > 65536)
        for (int64_t e = 0; e < n; ++e) {
          float s = 0.0f;
          for (size_t a = 0; a < A; ++a) s += wt[a] * replicas[active[a]].model->dense_params()[i].grad[e];
          g0[e] = s;
        }
      }
      // BN moving statistics: mean over towers (each moved from the same value).
      auto& s0 = replicas[0].model->state();
      for (size_t i = 0; i < s0.size(); ++i)
        for (size_t e = 0; e < s0[i].value.size(); ++e) {
          float s = 0.0f;
          for (size_t a = 0; a < active.size(); ++a) s += wt[a] * replicas[active[a]].model->state()[i].value[e];
          s0[i].value[e] = s;
        }
      if (exch != nullptr)
        CTRAIN_RETURN_IF_ERROR(ExchangeStep(step, B, &merged_w, &merged_v, d0, s0, &loss, &examples));
      CTRAIN_RETURN_IF_ERROR(PushRows(merged_w, merged_v, ostep));
      ApplyDense(ostep, d0);
      SyncReplicas();
      *loss_out = loss;
    }
    ++pos.global_step;
    pos.examples += examples;
    step_examples = examples;
    if (exch != nullptr && exch->check_replicas_every() > 0 && pos.global_step % exch->check_replicas_every() == 0)
      CTRAIN_RETURN_IF_ERROR(CheckReplicas());
    return Status::OK();
  }
  int64_t step_examples = 0;  // examples of the last SyncStep over all ranks

  // TrainOptions::lr_schedule(): the rate of `step` on all three optimizers.
  void SetScheduledRate(int64_t step) {
    const float lr =
        static_cast<float>(optim::ScheduledLearningRate(options.lr_schedule(), options.optimizer.learning_rate, step));
    current_lr = lr;
    optimizer->set_learning_rate(lr);
    if (remote != nullptr) return;  // pushed with the step's gradients
    w_table->mutable_optimizer().set_learning_rate(lr);
    v_table->mutable_optimizer().set_learning_rate(lr);
  }

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
  Status ExchangeStep(int64_t step, int64_t n, model::SparseGrad* w, model::SparseGrad* v,
                      std::vector<model::DenseParam>& dense, std::vector<model::DenseParam>& state, double* loss,
                      int64_t* examples) {
    const std::string at = "step " + std::to_string(step);
    const float fn = static_cast<float>(n);
    size_t total = 2;
    for (const auto& d : dense) total += d.grad.size();
    for (const auto& s : state) total += s.value.size();
    fused.resize(total);
    size_t o = 0;
    for (const auto& d : dense)
      for (float g : d.grad) fused[o++] = g * fn;
    for (const auto& s : state)
      for (float x : s.value) fused[o++] = x * fn;
    fused[o++] = static_cast<float>(*loss) * fn;
    fused[o++] = fn;
    CTRAIN_RETURN_IF_ERROR(exch->AllreduceSum(fused, at + ": dense gradients"));
    const float all = fused[total - 1];
    o = 0;
    for (auto& d : dense)
      for (float& g : d.grad) g = fused[o++] / all;
    for (auto& s : state)
      for (float& x : s.value) x = fused[o++] / all;
    *loss = fused[o] / all;
    *examples = static_cast<int64_t>(std::llround(all));
    if (w->ids == v->ids && w->dim == 1 && !w->ids.empty()) {
      // The usual case (both tables touched on the same rows): one exchange of [w | V] rows.
      const int32_t K = v->dim;
      joint.dim = 1 + K;
      joint.ids = w->ids;
      joint.grad.resize(w->ids.size() * (1 + K));
      for (size_t i = 0; i < w->ids.size(); ++i) {
        joint.grad[i * (1 + K)] = w->grad[i];
        std::memcpy(&joint.grad[i * (1 + K) + 1], &v->grad[i * K], K * sizeof(float));
      }
      CTRAIN_RETURN_IF_ERROR(ExchangeSparse(n, all, &joint, at + ": sparse gradients (w and V rows)"));
      w->ids = joint.ids;
      v->ids = joint.ids;
      w->grad.resize(joint.ids.size());
      v->grad.resize(joint.ids.size() * K);
      for (size_t i = 0; i < joint.ids.size(); ++i) {
        w->grad[i] = joint.grad[i * (1 + K)];
        std::memcpy(&v->grad[i * K], &joint.grad[i * (1 + K) + 1], K * sizeof(float));
      }
      return Status::OK();
    }
    CTRAIN_RETURN_IF_ERROR(ExchangeSparse(n, all, w, at + ": sparse gradients " + std::string(w_table->name())));
    return ExchangeSparse(n, all, v, at + ": sparse gradients " + std::string(v_table->name()));
  }
  model::SparseGrad joint;  // [w | V] rows of one exchange

  Status ExchangeSparse(int64_t n, float all, model::SparseGrad* g, const std::string& what) {
    const int32_t dim = g->dim > 0 ? g->dim : 1;
    const float fn = static_cast<float>(n);
    packed.resize(g->grad.size());
    for (size_t i = 0; i < packed.size(); ++i) packed[i] = g->grad[i] * fn;
    CTRAIN_RETURN_IF_ERROR(
        exch->AllgatherRows(g->ids, packed, dim, &gathered_ids, &gathered_rows, &gathered_counts, what));
    g->dim = dim;
    g->ids = gathered_ids;
    std::sort(g->ids.begin(), g->ids.end());
    g->ids.erase(std::unique(g->ids.begin(), g->ids.end()), g->ids.end());
    g->grad.assign(g->ids.size() * dim, 0.0f);
    size_t at = 0;
    for (int64_t c : gathered_counts) {  // rank order: the same sums on every rank, every run
      size_t j = 0;
      for (int64_t i = 0; i < c; ++i, ++at) {
        while (g->ids[j] != gathered_ids[at]) ++j;
        const float* src = gathered_rows.data() + at * dim;
        float* dst = g->grad.data() + j * dim;
        for (int32_t k = 0; k < dim; ++k) dst[k] += src[k];
      }
    }
    for (float& x : g->grad) x /= all;
    return Status::OK();
  }

  // Rank 0's parameters, optimizer slots and position into every rank
  // (initial values, or the checkpoint rank 0 restored). Each rank keeps its
  // own train_rows (its shard's size).
  Status BroadcastState() {
    CheckpointTensors t = Tensors();
    for (const auto& r : t.refs)
      CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<float>(r.data, r.count)),
                                             "initial parameters: " + r.name));
    int64_t p[4] = {pos.global_step, pos.epoch, pos.batch_in_epoch, pos.examples};
    CTRAIN_RETURN_IF_ERROR(exch->Broadcast(std::as_writable_bytes(std::span<int64_t>(p, 4)), "initial position"));
    pos.global_step = p[0];
    pos.epoch = p[1];
    pos.batch_in_epoch = p[2];
    pos.examples = p[3];
    SyncReplicas();
    return Status::OK();
  }

  // --check-replicas-every: FNV-1a of every parameter and slot, compared across ranks.
  Status CheckReplicas() {
    uint64_t h = 1469598103934665603ULL;
    CheckpointTensors t = Tensors();
    for (const auto& r : t.refs) {
      const auto* b = reinterpret_cast<const unsigned char*>(r.data);
      for (size_t i = 0; i < r.count * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ULL;
    }
    std::vector<uint64_t> all;
    CTRAIN_RETURN_IF_ERROR(exch->AllgatherU64(h, &all, "step " + std::to_string(pos.global_step) + ": replica hashes"));
    std::string bad;
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0]) bad += (bad.empty() ? "" : ", ") + exch->RankName(static_cast<int32_t>(r));
    if (!bad.empty())
      return InternalError("step " + std::to_string(pos.global_step) + ": --check-replicas-every: the parameters of " +
                           bad + " differ from rank 0's (parameter hashes differ): the replicas diverged");
    return Status::OK();
  }

  // Distributed: the per-step vote. *go = every rank has a batch; a stop
  // request on any rank returns Stop() on every rank.
  Status Vote(bool have, bool* go, int* sig) {
    *go = have;
    *sig = 0;
    if (exch == nullptr) return Status::OK();
    return exch->AgreeStep(have, StopSignal(), go, sig);
  }
  // A rank whose shard still had `n` examples when the shortest one ended the epoch.
  void ReportLeftOver(int64_t n) {
    if (n <= 0) return;
    left_over += n;
    std::fprintf(stderr, "ctrain: %s: epoch %lld ended at step %lld with another rank's shard: %lld examples of this "
                 "rank's shard were not used in this epoch\n", exch->RankName(exch->rank()).c_str(),
                 static_cast<long long>(pos.epoch + 1), static_cast<long long>(pos.global_step),
                 static_cast<long long>(n));
  }
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
  static int64_t ShownEpoch(const TrainPosition& p) {
    return p.batch_in_epoch == 0 && p.epoch > 0 ? p.epoch : p.epoch + 1;
  }

  void PrintProgress(Progress& p, bool force) {
    if (!terminal) return;
    const auto now = Clock::now();
    if (!force && Seconds(p.last_print, now) < 0.25) return;
    p.last_print = now;
    const double el = Seconds(p.start, now);
    const int64_t done = pos.global_step - p.start_step;
    const double eps = el > 0 ? p.examples / el : 0;
    const double eta = done > 0 ? el / done * (p.total_steps - pos.global_step) : -1;
    char buf[320];
    char total[32] = "?";  // stream mode: unknown until an epoch completes
    if (p.total_steps > 0) std::snprintf(total, sizeof total, "%lld", static_cast<long long>(p.total_steps));
    char wait[48] = "";
    if (p.stream && p.wait + p.compute > 0)
      std::snprintf(wait, sizeof wait, " | input wait %.1f%%", 100.0 * p.wait / (p.wait + p.compute));
    std::snprintf(buf, sizeof buf, "\r\033[Kstep %lld/%s | epoch %lld/%d | %.0f ex/s | loss %.4f%s | ETA %s",
                  static_cast<long long>(pos.global_step), total, static_cast<long long>(ShownEpoch(pos)),
                  options.epochs, eps,
                  p.loss_n ? p.loss_sum / p.loss_n : 0.0, wait,
                  p.total_steps > 0 ? FormatDuration(eta).c_str() : "?");
    if (sink)
      sink(buf);
    else
      std::fputs(buf, stderr), std::fflush(stderr);
  }

  StatusOr<EvalResult> Evaluate(const Dataset& data) {
    if (!hog_master.empty()) SyncReplicas();
    pool->ConfigureThread(0);
    Replica& rep = replicas[0];
    double saturated = 0;  // count of saturated predictions
    std::vector<float> probs, all_probs, all_labels;
    std::vector<int64_t> groups;
    const int32_t gf = options.group_field;
    const double rate = options.negative_downsampling_rate;
    constexpr int64_t kChunk = 8192;
    for (int64_t b = 0; b < data.size(); b += kChunk) {
      const int64_t e = std::min(data.size(), b + kChunk);
      data.Slice(b, e, &rep.batch);
      model::DeepFM::UniqueIds(rep.batch, &rep.unique_ids, &rep.index);
      CTRAIN_RETURN_IF_ERROR(PullRows(rep));
      probs.resize(e - b);
      CTRAIN_RETURN_IF_ERROR(
          rep.model->Predict(rep.batch, rep.unique_ids, rep.index, rep.w_rows.data(), rep.v_rows.data(), probs.data()));
      for (int64_t i = 0; i < e - b; ++i)
        if (!std::isfinite(probs[i])) return NonFinitePrediction(data, rep.batch, i, b + i);
      saturated += SaturatedFraction(probs.data(), e - b) * static_cast<double>(e - b);
      if (rate < 1.0)  // the model learned the downsampled CTR (ctr_metrics.h)
        for (float& p : probs) p = static_cast<float>(CorrectDownsampledProbability(p, rate));
      all_probs.insert(all_probs.end(), probs.begin(), probs.end());
      all_labels.insert(all_labels.end(), rep.batch.labels.begin(), rep.batch.labels.end());
      if (gf >= 0)
        for (int64_t i = 0; i < e - b; ++i) groups.push_back(rep.batch.ids[i * rep.batch.field_size + gf]);
      if (predictions != nullptr) predictions->insert(predictions->end(), probs.begin(), probs.end());
    }
    EvalResult r;
    if (predictions != nullptr) return r;  // predict: the labels may be absent (NaN), nothing to measure
    if (!eval_weights.empty() && static_cast<int64_t>(eval_weights.size()) != data.size())
      return InvalidArgumentError("sample weights: " + std::to_string(eval_weights.size()) + " weights for " +
                                  std::to_string(data.size()) + " examples (one weight per example, in order)");
    CTRAIN_ASSIGN_OR_RETURN(CtrMetrics m,
                            ComputeCtrMetrics(all_probs, all_labels, eval_weights, groups, eval_metric_options));
    r.auc = m.auc;
    r.logloss = m.logloss;
    r.examples = m.examples;
    r.label_mean = m.label_mean;
    r.prediction_mean = m.prediction_mean;
    r.normalized_entropy = m.normalized_entropy;
    r.calibration = m.calibration;
    r.pr_auc = m.pr_auc;
    r.gauc = m.gauc;
    r.gauc_groups = m.gauc_groups;
    r.gauc_skipped_groups = m.gauc_skipped_groups;
    r.saturated_fraction = data.size() > 0 ? saturated / static_cast<double>(data.size()) : 0;
    return r;
  }
  std::vector<float>* predictions = nullptr;
  // How Evaluate weighs the evaluated data (its negatives' downsampling rate):
  // Init sets options.negative_downsampling_rate (--valid is sampled like
  // --train); a model loaded for eval/predict starts at 1.
  MetricOptions eval_metric_options;
  std::vector<float> eval_weights;  // set_eval_weights; empty = 1 each

  Status CheckData(const Dataset& data, const char* what) const {
    if (data.field_size() != options.model.field_size)
      return InvalidArgumentError(std::string(what) + " data has field_size " + std::to_string(data.field_size()) +
                                  ", the model " + std::to_string(options.model.field_size));
    const int64_t max_id = data.MaxIdPlusOne();
    if (max_id > options.model.feature_size)
      return InvalidArgumentError(std::string(what) + " data has id " + std::to_string(max_id - 1) +
                                  " >= feature_size " + std::to_string(options.model.feature_size));
    return Status::OK();
  }

  Status Train(const Dataset& train, const Dataset* valid, TrainResult* result);
  Status TrainStream(const StreamInput& input, const Dataset* valid, TrainResult* result);
  Status RestoreMeta(const nlohmann::json& meta, const std::string& path);
  Status RestoreRemote(bool* restored);

  // Fills rep.batch with the next batch of a hogwild segment; false when none is left.
  using FetchFn = std::function<StatusOr<bool>(Replica& rep)>;
  // Hogwild replicas run steps on fetched batches until fetch returns false.
  // *batches: batches applied; *wait_seconds: time inside fetch (all threads).
  Status RunHogwild(const FetchFn& fetch, Progress* prog, int64_t* batches, double* wait_seconds);

  // InvalidArgument unless `b` has the model's field_size and fixed-length rows.
  Status CheckBatch(const data::Batch& b) const {
    if (b.field_size != options.model.field_size)
      return InvalidArgumentError("training batch has field_size " + std::to_string(b.field_size) +
                                  ", the model " + std::to_string(options.model.field_size));
    if (b.variable_length())
      return InvalidArgumentError("training batch has variable-length rows; DeepFM needs exactly field_size (" +
                                  std::to_string(options.model.field_size) + ") features per example");
    return Status::OK();
  }
};

Status Trainer::Impl::RunHogwild(const FetchFn& fetch, Progress* prog, int64_t* batches, double* wait_seconds) {
  std::atomic<int64_t> step_counter{pos.global_step};
  std::atomic<int64_t> examples{0}, done{0};
  std::atomic<bool> failed{false};
  std::mutex dense_mu;
  std::vector<Status> errors(replicas.size());
  std::vector<double> loss_sum(replicas.size(), 0.0), wait(replicas.size(), 0.0);
  std::vector<int64_t> loss_n(replicas.size(), 0);
  pool->Run([&](int32_t r) {
    Replica& rep = replicas[r];
    auto& dense = rep.model->dense_params();
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      const auto t0 = Clock::now();
      StatusOr<bool> more = fetch(rep);
      wait[r] += Seconds(t0, Clock::now());
      if (!more.ok() || !*more) {
        if (!more.ok()) {
          errors[r] = more.status();
          failed = true;
        }
        return;
      }
      const int64_t step = step_counter.fetch_add(1) + 1;
      {
        std::lock_guard<std::mutex> lock(dense_mu);
        for (size_t i = 0; i < dense.size(); ++i)
          std::memcpy(dense[i].value.data(), hog_master[i].data(), dense[i].value.size() * sizeof(float));
      }
      Compute(rep, step);
      Status st = StepStatus(rep, step);
      if (st.ok()) st = PushRows(rep.w_grad, rep.v_grad, step - opt_step_base);  // lock-free (Hogwild!)
      if (!st.ok()) {
        errors[r] = st;
        failed = true;
        return;
      }
      {
        std::lock_guard<std::mutex> lock(dense_mu);
        ApplyDense(step - opt_step_base, dense);
      }
      examples += rep.batch.size();
      done += 1;
      loss_sum[r] += rep.loss.loss;
      loss_n[r] += 1;
      if (r == 0) {
        pos.global_step = step_counter.load();
        prog->examples = examples.load();
        PrintProgress(*prog, false);
      }
    }
  });
  for (auto& e : errors) CTRAIN_RETURN_IF_ERROR(e);
  pos.global_step = step_counter.load();
  pos.examples += examples.load();
  *batches = done.load();
  *wait_seconds = 0;
  for (size_t r = 0; r < replicas.size(); ++r) {
    prog->loss_sum += loss_sum[r];
    prog->loss_n += loss_n[r];
    *wait_seconds += wait[r];
  }
  return Status::OK();
}

Status Trainer::Impl::Train(const Dataset& train, const Dataset* valid, TrainResult* result) {
  *result = TrainResult();
  if (remote != nullptr && !remote_ready) {  // Restore() was not called: declare the model now
    bool restored = false;
    CTRAIN_RETURN_IF_ERROR(RestoreRemote(&restored));
  }
  if (exch != nullptr) {
    if (options.parallel.hogwild > 0)
      return InvalidArgumentError("--hogwild cannot run under mpirun: distributed training is synchronous");
    CTRAIN_RETURN_IF_ERROR(BroadcastState());
  }
  CTRAIN_RETURN_IF_ERROR(CheckData(train, "training"));
  if (valid != nullptr) CTRAIN_RETURN_IF_ERROR(CheckData(*valid, "validation"));
  if (train.empty()) return InvalidArgumentError("training data is empty");
  if (pos.train_rows != 0 && pos.train_rows != train.size())
    return FailedPreconditionError("checkpoint in " + options.model_dir + " was trained on " +
                                   std::to_string(pos.train_rows) + " rows, this run has " +
                                   std::to_string(train.size()) +
                                   ": resuming needs the same training data (to train this model on new data, add "
                                   "--warm-start-from <its model dir>; or use a new --model-dir)");
  pos.train_rows = train.size();
  train_inputs = nullptr;  // memory mode: the rows, not the files, are known (train_rows)
  saved_this_run = false;
  source_paths = train.source_paths();
  source_reader = train.source_reader();
  if (!train.multi_hot()) {  // per-field value statistics: one value per field
    InputStats st(train.field_size());
    st.Add(train.ids(), train.values(), train.size(), train.labels());
    WarnInputs(st, result, st.examples());  // storage order = file order: the rows looked at come first
  }
  result->restored = pos.global_step > 0;
  result->early_stopped = early_stopped;
  result->best_metric = best_value;
  result->best_step = best_step;
  pool->ConfigureThread(0);
  const int64_t N = train.size();
  const int64_t B = options.batch_size;
  // This process's share of each epoch's S batches: step i takes batch i * W + k
  // (remote_parameters.h; locally W = 1, k = 0: every batch in order).
  const int64_t S = (N + B - 1) / B;
  const int64_t W = remote != nullptr ? remote->num_workers() : 1;
  const int64_t k = remote != nullptr ? remote->worker_index() : 0;
  const int64_t steps_per_epoch = remote == nullptr        ? S
                                  : remote->sync_replicas() ? (S + W - 1) / W
                                                            : (S - k + W - 1) / W;
  const int32_t H = options.parallel.hogwild;
  int64_t total = steps_per_epoch * options.epochs;
  if (options.max_steps > 0) total = std::min(total, options.max_steps);

  Progress prog;
  prog.start = prog.last_print = Clock::now();
  prog.start_step = pos.global_step;
  prog.total_steps = total;
  const int64_t start_examples = pos.examples;
  double train_seconds = 0;
  std::vector<int64_t> order;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_n = 0;
  bool stop = early_stopped;  // a resumed run that stopped early has nothing left to do
  int64_t eval_step = -1;  // evaluated at this global step already (no second identical evaluation)
  auto do_eval = [&](const char* when) { return EvaluateAndLog(valid, when, &eval_step, result); };

  while (!stop && pos.epoch < options.epochs && (options.max_steps == 0 || pos.global_step < options.max_steps)) {
    EpochOrder(N, pos.epoch, &order);
    bool ended = false;  // distributed: another rank's shard ended the epoch
    while (pos.batch_in_epoch < steps_per_epoch || (exch != nullptr && !ended)) {
      if (options.max_steps > 0 && pos.global_step >= options.max_steps) {
        stop = true;
        break;
      }
      if (exch != nullptr) {
        bool go = false;
        int sig = 0;
        CTRAIN_RETURN_IF_ERROR(Vote(pos.batch_in_epoch < steps_per_epoch, &go, &sig));
        if (sig != 0) return Stop(prog.start_step, sig);
        if (!go) {
          ReportLeftOver(std::max<int64_t>(0, N - pos.batch_in_epoch * B));
          ended = true;
          break;
        }
      } else if (StopSignal() != 0) {
        return Stop(prog.start_step);
      }
      const auto t0 = Clock::now();
      if (H > 0) {
        // Run freely until the next sync point (checkpoint, eval, epoch end, max_steps).
        int64_t seg = steps_per_epoch - pos.batch_in_epoch;
        if (options.max_steps > 0) seg = std::min(seg, options.max_steps - pos.global_step);
        if (options.save_checkpoints_steps > 0)
          seg = std::min(seg, options.save_checkpoints_steps - pos.global_step % options.save_checkpoints_steps);
        if (options.eval_every_steps > 0)
          seg = std::min(seg, options.eval_every_steps - pos.global_step % options.eval_every_steps);
        std::atomic<int64_t> next{pos.batch_in_epoch};
        const int64_t end_batch = pos.batch_in_epoch + seg;
        int64_t batches = 0;
        double wait = 0;
        CTRAIN_RETURN_IF_ERROR(RunHogwild(
            [&](Replica& rep) -> StatusOr<bool> {
              if (StopSignal() != 0) return false;  // the batches fetched so far are [start, next)
              const int64_t b = next.fetch_add(1);
              if (b >= end_batch) return false;
              const int64_t lo = b * B, hi = std::min(N, lo + B);
              rep.rows.assign(order.begin() + lo, order.begin() + hi);
              train.Gather(rep.rows, &rep.batch);
              return true;
            },
            &prog, &batches, &wait));
        pos.batch_in_epoch = std::min(end_batch - seg + batches, steps_per_epoch);
        prog.examples = pos.examples - start_examples;
      } else {
        // Past the last batch (a sync round without one for this worker): an empty step.
        const int64_t lo = std::min(N, (pos.batch_in_epoch * W + k) * B), hi = std::min(N, lo + B);
        double loss = 0;
        CTRAIN_RETURN_IF_ERROR(SyncStep(
            hi - lo,
            [&](Replica& rep, int64_t a, int64_t b) {
              rep.rows.assign(order.begin() + lo + a, order.begin() + lo + b);
              train.Gather(rep.rows, &rep.batch);
            },
            &loss));
        ++pos.batch_in_epoch;
        prog.examples += step_examples;
        if (hi > lo) {  // an empty sync round has no loss
          prog.loss_sum += loss;
          prog.loss_n += 1;
          epoch_loss_sum += loss;
          epoch_loss_n += 1;
        }
        if (observer != nullptr) observer->OnStep({pos.global_step, step_examples, Seconds(t0, Clock::now()), 0.0, loss});
      }
      train_seconds += Seconds(t0, Clock::now());
      PrintProgress(prog, false);
      if (options.save_checkpoints_steps > 0 && pos.global_step % options.save_checkpoints_steps == 0 &&
          pos.batch_in_epoch < steps_per_epoch)
        CTRAIN_RETURN_IF_ERROR(Save());
      if (options.eval_every_steps > 0 && pos.global_step % options.eval_every_steps == 0 &&
          pos.batch_in_epoch < steps_per_epoch)
        CTRAIN_RETURN_IF_ERROR(do_eval("eval"));
      if (early_stopped) {
        stop = true;
        break;
      }
    }
    if (pos.batch_in_epoch >= steps_per_epoch || ended) {
      // Epoch complete: the position moves to the start of the next epoch
      // before eval/checkpoint, so a resume starts there.
      const int64_t finished = pos.epoch + 1;
      ++pos.epoch;
      pos.batch_in_epoch = 0;
      if (H > 0) {
        epoch_loss_sum = prog.loss_sum;
        epoch_loss_n = prog.loss_n;
      }
      result->last_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : 0;
      const double el = Seconds(prog.start, Clock::now());
      char buf[256];
      std::snprintf(buf, sizeof buf, "%sepoch %lld/%d: step %lld, train loss %.5f, %.0f examples/s",
                    terminal ? "\r\033[K" : "", static_cast<long long>(finished), options.epochs,
                    static_cast<long long>(pos.global_step), result->last_loss,
                    train_seconds > 0 ? prog.examples / train_seconds : 0.0);
      (void)el;
      Log(buf);
      epoch_loss_sum = 0;
      epoch_loss_n = 0;
      CTRAIN_RETURN_IF_ERROR(do_eval("epoch end"));
      if (early_stopped) stop = true;
      // Every epoch end is checkpointed (the last one by the final save below).
      if (!stop && pos.epoch < options.epochs && !(options.max_steps > 0 && pos.global_step >= options.max_steps))
        CTRAIN_RETURN_IF_ERROR(Save());
    }
  }
  if (terminal) PrintProgress(prog, true), Log("");
  if (epoch_loss_n > 0) result->last_loss = epoch_loss_sum / epoch_loss_n;
  // A final evaluation when training stopped mid-epoch (max_steps).
  if (valid != nullptr && (!result->evaluated || pos.batch_in_epoch != 0)) CTRAIN_RETURN_IF_ERROR(do_eval("final"));
  if (!finished) saved_this_run = false;  // the final checkpoint records that the run finished
  finished = true;
  CTRAIN_RETURN_IF_ERROR(SaveFinal());
  result->steps = pos.global_step;
  result->steps_this_run = pos.global_step - prog.start_step;
  result->examples = pos.examples;
  result->examples_this_run = pos.examples - start_examples;
  result->epochs = pos.epoch + static_cast<double>(pos.batch_in_epoch) / steps_per_epoch;
  result->seconds = train_seconds;
  result->examples_per_sec = train_seconds > 0 ? result->examples_this_run / train_seconds : 0;
  result->compute_seconds = train_seconds;
  return Status::OK();
}

Status Trainer::Impl::TrainStream(const StreamInput& input, const Dataset* valid, TrainResult* result) {
  *result = TrainResult();
  if (remote != nullptr)
    return InvalidArgumentError("--ps (" + remote->Describe() +
                                "): a worker reads its training data in memory (--input-mode memory)");
  if (exch != nullptr) {
    if (options.parallel.hogwild > 0)
      return InvalidArgumentError("--hogwild cannot run under mpirun: distributed training is synchronous");
    CTRAIN_RETURN_IF_ERROR(BroadcastState());
  }
  result->streamed = true;
  if (valid != nullptr) CTRAIN_RETURN_IF_ERROR(CheckData(*valid, "validation"));
  saved_this_run = false;
  source_paths = input.files;
  source_reader = input.reader;
  // The first examples of this run; a stream is checked early (its first
  // epoch may be long), memory mode looks at more rows at once.
  InputCheckOptions stream_checks;
  stream_checks.max_examples = kStreamInputCheckExamples;
  InputStats in_stats(options.model.field_size, stream_checks);
  auto check_inputs = [&](const data::Batch& b) {
    if (input_warned) return;
    in_stats.Add(b.ids.data(), b.values.data(), b.size(), b.labels.data());
    if (in_stats.full()) WarnInputs(in_stats, result, kStreamLocateExamples);
  };
  // Ids are range-checked where they are parsed, so the error names the file and line/record.
  StreamInput checked = input;
  if (checked.reader.id_limit <= 0 || checked.reader.id_limit > options.model.feature_size)
    checked.reader.id_limit = options.model.feature_size;
  std::unique_ptr<BatchSource> src;
  if (source_factory) {
    BatchSourceParams params;
    params.input = &checked;
    params.batch_size = options.batch_size;
    params.epochs = options.epochs;
    params.seed = options.seed;
    params.shuffle = options.shuffle;
    params.start_epoch = pos.epoch;
    params.start_batch = pos.batch_in_epoch;
    params.cursor = restored_cursor;
    CTRAIN_ASSIGN_OR_RETURN(src, source_factory(params));
  } else {
    if (!restored_cursor.is_null())
      return FailedPreconditionError(restored_path +
                                     ": the checkpoint was trained through the data service (meta \"data_cursor\"); "
                                     "resume it with the same --data-service and --job-name, or use a new --model-dir");
    CTRAIN_ASSIGN_OR_RETURN(src, EpochBatchSource::Create(checked, options.batch_size, options.epochs, options.seed,
                                                          options.shuffle, pos.epoch, pos.batch_in_epoch));
  }
  // A resume must read the same inputs as the checkpoint (memory mode checks the row count).
  CTRAIN_ASSIGN_OR_RETURN(nlohmann::json inputs, src->DescribeInputs());
  if (!restored_inputs.is_null())
    CTRAIN_RETURN_IF_ERROR(CheckSameStreamInputs(restored_inputs, inputs, restored_path));
  CTRAIN_RETURN_IF_ERROR(CheckNoEmptyFiles(inputs));
  train_inputs = std::move(inputs);
  result->restored = pos.global_step > 0;
  result->early_stopped = early_stopped;
  result->best_metric = best_value;
  result->best_step = best_step;
  stream_src = src.get();
  struct ClearSource {
    const BatchSource** p;
    ~ClearSource() { *p = nullptr; }
  } clear_source{&stream_src};
  stream_known_from.clear();
  for (const std::string& f : input.files)  // an up-front format comes from the files (DetectInputFormats)
    if (f != "-" && f.rfind("pipe:", 0) != 0) stream_known_from += (stream_known_from.empty() ? "" : " ") + f;
  pool->ConfigureThread(0);
  const int64_t B = options.batch_size;
  const int32_t H = options.parallel.hogwild;
  const int32_t T = static_cast<int32_t>(replicas.size());
  // Batches per epoch: known once an epoch was read (train_rows), else 0.
  auto steps_per_epoch = [&]() -> int64_t {
    if (pos.train_rows <= 0) return 0;
    return input.pipeline.drop_remainder ? pos.train_rows / B : (pos.train_rows + B - 1) / B;
  };
  auto total_steps = [&]() -> int64_t {
    const int64_t spe = steps_per_epoch();
    int64_t total = spe > 0 ? spe * options.epochs : 0;
    if (options.max_steps > 0) total = total > 0 ? std::min(total, options.max_steps) : options.max_steps;
    return total;
  };

  Progress prog;
  prog.start = prog.last_print = Clock::now();
  prog.start_step = pos.global_step;
  prog.total_steps = total_steps();
  prog.stream = true;
  const int64_t start_examples = pos.examples;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_n = 0;
  bool stop = early_stopped;  // a resumed run that stopped early has nothing left to do
  data::Batch staging;  // towers: the whole batch, sliced into the replicas
  std::mutex fetch_mu;  // hogwild: Pipeline::Next is called by one thread at a time
  int64_t eval_step = -1;  // evaluated at this global step already (no second identical evaluation)
  auto do_eval = [&](const char* when) { return EvaluateAndLog(valid, when, &eval_step, result); };
  auto max_reached = [&] { return options.max_steps > 0 && pos.global_step >= options.max_steps; };

  while (!stop && pos.epoch < options.epochs && !max_reached()) {
    if (Status st = src->BeginEpoch(pos.epoch, pos.batch_in_epoch); !st.ok())
      return StopSignal() != 0 ? Stop(prog.start_step) : st;
    bool epoch_done = false;
    while (!epoch_done) {
      if (max_reached()) {
        stop = true;
        break;
      }
      if (exch == nullptr && StopSignal() != 0) return Stop(prog.start_step);
      if (H > 0) {
        // Run freely until the next sync point (checkpoint, eval, max_steps) or the epoch end.
        int64_t seg = std::numeric_limits<int64_t>::max();
        if (options.max_steps > 0) seg = std::min(seg, options.max_steps - pos.global_step);
        if (options.save_checkpoints_steps > 0)
          seg = std::min(seg, options.save_checkpoints_steps - pos.global_step % options.save_checkpoints_steps);
        if (options.eval_every_steps > 0)
          seg = std::min(seg, options.eval_every_steps - pos.global_step % options.eval_every_steps);
        int64_t taken = 0, batches = 0;
        bool ended = false;
        double wait = 0;
        const auto t0 = Clock::now();
        CTRAIN_RETURN_IF_ERROR(RunHogwild(
            [&](Replica& rep) -> StatusOr<bool> {
              std::lock_guard<std::mutex> lock(fetch_mu);
              if (ended || taken >= seg || StopSignal() != 0) return false;
              CTRAIN_ASSIGN_OR_RETURN(bool more, src->Next(&rep.batch));
              if (!more) {
                ended = true;
                return false;
              }
              CTRAIN_RETURN_IF_ERROR(CheckBatch(rep.batch));
              check_inputs(rep.batch);
              ++taken;
              return true;
            },
            &prog, &batches, &wait));
        // Thread-seconds: the wait share of all replica time in the segment.
        const double busy = Seconds(t0, Clock::now()) * static_cast<double>(H);
        prog.wait += std::min(wait, busy);
        prog.compute += std::max(0.0, busy - wait);
        pos.batch_in_epoch += batches;
        prog.examples = pos.examples - start_examples;
        epoch_done = ended;
      } else {
        const auto t0 = Clock::now();
        data::Batch* dst = T == 1 ? &replicas[0].batch : &staging;
        StatusOr<bool> next = src->Next(dst);
        if (!next.ok() && StopSignal() != 0) return Stop(prog.start_step);  // interrupted while waiting for input
        CTRAIN_ASSIGN_OR_RETURN(bool more, std::move(next));
        if (exch != nullptr) {  // every rank steps, or none: the shortest shard ends the epoch
          bool go = false;
          int sig = 0;
          CTRAIN_RETURN_IF_ERROR(Vote(more, &go, &sig));
          if (sig != 0) return Stop(prog.start_step, sig);
          if (more && !go) {
            int64_t rest = dst->size();
            for (;;) {  // drain the epoch so the source ends it (and its size counts every record)
              CTRAIN_ASSIGN_OR_RETURN(bool again, src->Next(dst));
              if (!again) break;
              rest += dst->size();
            }
            ReportLeftOver(rest);
            more = false;
          }
        }
        const auto t1 = Clock::now();
        prog.wait += Seconds(t0, t1);
        if (!more) {
          epoch_done = true;
          break;
        }
        CTRAIN_RETURN_IF_ERROR(CheckBatch(*dst));
        check_inputs(*dst);
        // A stream's format is known now: a resume on another encoding stops before training on it.
        if (!restored_data_checked || options.data.format.empty()) CTRAIN_RETURN_IF_ERROR(NoteStreamFormats());
        const int64_t n = dst->size();
        double loss = 0;
        CTRAIN_RETURN_IF_ERROR(SyncStep(
            n,
            [&](Replica& rep, int64_t lo, int64_t hi) {
              if (T == 1) return;  // the pipeline wrote the batch into replica 0
              const int64_t F = staging.field_size;
              rep.batch.field_size = staging.field_size;
              rep.batch.row_splits.clear();
              rep.batch.field_splits.clear();
              rep.batch.labels.assign(staging.labels.begin() + lo, staging.labels.begin() + hi);
              rep.batch.ids.assign(staging.ids.begin() + lo * F, staging.ids.begin() + hi * F);
              rep.batch.values.assign(staging.values.begin() + lo * F, staging.values.begin() + hi * F);
            },
            &loss));
        prog.compute += Seconds(t1, Clock::now());
        ++pos.batch_in_epoch;
        prog.examples += step_examples;
        prog.loss_sum += loss;
        prog.loss_n += 1;
        epoch_loss_sum += loss;
        epoch_loss_n += 1;
        if (observer != nullptr)
          observer->OnStep({pos.global_step, step_examples, Seconds(t0, Clock::now()), Seconds(t0, t1), loss});
      }
      PrintProgress(prog, false);
      if (epoch_done) break;
      // The epoch's end is only known at the next Next(); a checkpoint taken
      // on its last batch resumes by finding the epoch exhausted.
      if (options.save_checkpoints_steps > 0 && pos.global_step % options.save_checkpoints_steps == 0)
        CTRAIN_RETURN_IF_ERROR(Save());
      if (options.eval_every_steps > 0 && pos.global_step % options.eval_every_steps == 0)
        CTRAIN_RETURN_IF_ERROR(do_eval("eval"));
      if (early_stopped) {
        stop = true;
        break;
      }
    }
    if (epoch_done) {
      // An empty pass (empty input, stdin or FIFO that gave 0 bytes, every
      // record dropped by drop_remainder) is an error, never a 0-step run.
      if (src->epoch_records() == 0) {
        std::string kept;  // what an empty later epoch leaves behind
        if (pos.global_step > 0)
          kept = saved_this_run || !restored_path.empty()
                     ? "; training stopped there: the checkpoint of step " +
                           std::to_string(saved_this_run ? saved_pos.global_step : pos.global_step) + " in " +
                           options.model_dir + " stays"
                     : "; training stopped there after step " + std::to_string(pos.global_step) + " (no --model-dir)";
        return EmptyEpochError(input, pos.epoch, B, src->stats(), kept);
      }
      // Every input must give records, not just the epoch as a whole.
      CTRAIN_RETURN_IF_ERROR(CheckEveryInputGaveRecords(src->stats(), pos.epoch));
      CTRAIN_RETURN_IF_ERROR(NoteStreamFormats());
      if (in_stats.examples() > 0) WarnInputs(in_stats, result, kStreamLocateExamples);  // a short first epoch
      const int64_t finished = pos.epoch + 1;
      pos.train_rows = src->epoch_records();
      ++pos.epoch;
      pos.batch_in_epoch = 0;
      prog.total_steps = total_steps();
      if (H > 0) {
        epoch_loss_sum = prog.loss_sum;
        epoch_loss_n = prog.loss_n;
      }
      result->last_loss = epoch_loss_n ? epoch_loss_sum / epoch_loss_n : 0;
      const double secs = prog.wait + prog.compute;
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%sepoch %lld/%d: step %lld, %lld examples%s, train loss %.5f, %.0f examples/s, input wait %.1f%%",
                    terminal ? "\r\033[K" : "", static_cast<long long>(finished), options.epochs,
                    static_cast<long long>(pos.global_step), static_cast<long long>(pos.train_rows),
                    exch != nullptr ? " in rank 0's shard" : "",
                    result->last_loss, secs > 0 ? prog.examples / secs : 0.0,
                    secs > 0 ? 100.0 * prog.wait / secs : 0.0);
      Log(buf);
      epoch_loss_sum = 0;
      epoch_loss_n = 0;
      CTRAIN_RETURN_IF_ERROR(do_eval("epoch end"));
      if (early_stopped) stop = true;
      // Every epoch end is checkpointed (the last one by the final save below).
      if (!stop && pos.epoch < options.epochs && !max_reached()) CTRAIN_RETURN_IF_ERROR(Save());
    }
  }
  if (terminal) PrintProgress(prog, true), Log("");
  if (in_stats.examples() > 0) WarnInputs(in_stats, result, kStreamLocateExamples);  // a run shorter than the check
  if (epoch_loss_n > 0) result->last_loss = epoch_loss_sum / epoch_loss_n;
  if (valid != nullptr && (!result->evaluated || pos.batch_in_epoch != 0)) CTRAIN_RETURN_IF_ERROR(do_eval("final"));
  if (!finished) saved_this_run = false;  // the final checkpoint records that the run finished
  finished = true;
  CTRAIN_RETURN_IF_ERROR(SaveFinal());
  result->steps = pos.global_step;
  result->steps_this_run = pos.global_step - prog.start_step;
  result->examples = pos.examples;
  result->examples_this_run = pos.examples - start_examples;
  const int64_t spe = steps_per_epoch();
  result->epochs = pos.epoch + (spe > 0 ? static_cast<double>(pos.batch_in_epoch) / spe : 0.0);
  result->epoch_size_known = spe > 0 || pos.batch_in_epoch == 0;
  result->input_wait_seconds = prog.wait;
  result->compute_seconds = prog.compute;
  result->seconds = prog.wait + prog.compute;
  result->input_wait_fraction = result->seconds > 0 ? prog.wait / result->seconds : 0;
  result->examples_per_sec = result->seconds > 0 ? result->examples_this_run / result->seconds : 0;
  result->pipeline = src->stats();
  CTRAIN_RETURN_IF_ERROR(src->Finish());
  result->source_metrics = src->Metrics();
  // Too few steps or seconds measure start-up (thread start, first reads,
  // oneDNN primitive creation), not the steady state: no advice from them.
  if (result->steps_this_run >= kMinStepsForInputAdvice && result->seconds >= kMinSecondsForInputAdvice)
    result->input_suggestion =
        source_factory ? result->source_metrics.value("advice", std::string())
                       : data::InputBoundSuggestion(result->input_wait_fraction, input.pipeline.num_parallel_calls,
                                                    input.pipeline.prefetch_buffer_size);
  return Status::OK();
}
// ---------------------------------------------------------------------------

double EvalResult::Metric(const std::string& name) const {
  if (name == "auc") return auc;
  if (name == "gauc") return gauc;
  if (name == "pr_auc") return pr_auc;
  if (name == "logloss") return logloss;
  if (name == "normalized_entropy") return normalized_entropy;
  return std::numeric_limits<double>::quiet_NaN();
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainOptions& options, RemoteParameters* remote) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->remote = remote;
  CTRAIN_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

namespace {

std::string CanonicalDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  std::string s = ec ? dir : p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The model config keys that fix the parameters' shapes: a warm start needs
// them equal (feature_size may grow; dropout, l2 and the like may change).
constexpr const char* kShapeKeys[] = {"field_size", "embedding_size", "deep_layers", "batch_norm",
                                      "use_first_order", "use_fm", "use_deep"};

}  // namespace

Status Trainer::WarmStart(const std::string& from_dir, bool optimizer_slots) {
  Impl& m = *impl_;
  CTRAIN_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck, ReadTrainerCheckpoint(from_dir));
  if (!ck.has_value()) return NotFoundError("--warm-start-from " + from_dir + ": no checkpoint");
  const nlohmann::json& meta = ck->meta;
  CTRAIN_ASSIGN_OR_RETURN(model::DeepFMConfig mc, ModelConfigFromJson(meta.value("model", nlohmann::json())));
  const nlohmann::json want = ModelConfigToJson(m.options.model);
  const nlohmann::json have = ModelConfigToJson(mc);
  for (const char* key : kShapeKeys)
    if (have[key] != want[key])
      return FailedPreconditionError(ck->path + ": warm start: the checkpoint's model has " + key + " = " +
                                     have[key].dump() + ", this run asks for " + want[key].dump() +
                                     " (the parameters' shapes must match; only --feature-size may grow)");
  const int64_t old_rows = mc.feature_size, rows = m.options.model.feature_size;
  if (rows < old_rows)
    return FailedPreconditionError(ck->path + ": warm start: the checkpoint's model has feature_size " +
                                   std::to_string(old_rows) + ", this run asks for " + std::to_string(rows) +
                                   " (a smaller --feature-size would drop trained rows; it may only grow)");
  const std::string opt = meta.value("optimizer", nlohmann::json::object()).value("name", "");
  if (optimizer_slots && opt != m.options.optimizer.name)
    return FailedPreconditionError(ck->path + ": warm start: --warm-start-optimizer needs the same optimizer, the "
                                   "checkpoint's is '" + opt + "', this run asks for '" + m.options.optimizer.name +
                                   "' (drop --warm-start-optimizer to start the optimizer afresh)");
  if (meta.contains("data") && m.options.data.recorded()) {  // the same ids must mean the same features
    CTRAIN_ASSIGN_OR_RETURN(DataSourceOptions d, DataSourceFromJson(meta["data"]));
    const bool hashed = d.hash_buckets > 0 || (m.options.data.format.starts_with("criteo") &&
                                               m.options.data.feature_map.empty());
    if (rows != old_rows && hashed)
      return FailedPreconditionError(ck->path + ": warm start: the checkpoint hashed categories into " +
                                     std::to_string(d.hash_buckets) + " buckets; a different --feature-size (" +
                                     std::to_string(rows) + ") moves every hashed id (keep --feature-size " +
                                     std::to_string(old_rows) + ", or use a --feature-map vocabulary)");
    d.feature_size = rows;  // the rows grew (checked above); the ids keep their meaning
    std::vector<std::string> notes;
    CTRAIN_RETURN_IF_ERROR(CheckInputMatchesModel(d, from_dir, m.options.data, "this run's --train", &notes)
                               .WithContext(ck->path + ": warm start"));
  }
  // Every tensor of this model, from the checkpoint: the tables' first
  // old_rows rows (the rest keep their initialisation), the dense parameters
  // and BN state whole; optimizer slots only with optimizer_slots.
  const CheckpointTensors t = m.Tensors();
  std::set<std::string> slots;  // "<param>/<slot>" of every table and dense parameter (Tensors())
  for (const std::string& param : {m.w_table->name(), m.v_table->name()})
    for (int k = 0; k < m.w_table->num_slots(); ++k)
      slots.insert(param + "/" + std::string(m.w_table->optimizer().SlotName(k)));
  for (const auto& d : m.replicas[0].model->dense_params())
    for (int k = 0; k < m.optimizer->num_slots(); ++k) slots.insert(d.name + "/" + std::string(m.optimizer->SlotName(k)));
  int64_t copied = 0;
  for (const auto& ref : t.refs) {
    const bool table = ref.name.starts_with("embeddings/");
    if (slots.count(ref.name) > 0 && !optimizer_slots) continue;
    const NamedTensor* x = ck->ckpt.Find(ref.name);
    if (x == nullptr) return NotFoundError(ck->path + ": warm start: no tensor '" + ref.name + "'");
    std::vector<int64_t> expect = ref.shape;
    if (table) expect[0] = old_rows;
    if (x->dtype != DType::kF32 || x->shape != expect)
      return InvalidArgumentError(ck->path + ": warm start: tensor '" + ref.name + "' has " +
                                  std::to_string(x->f32.size()) + " float values, expected " +
                                  std::to_string(table ? ref.count / rows * old_rows : ref.count));
    std::memcpy(ref.data, x->f32.data(), x->f32.size() * sizeof(float));
    ++copied;
  }
  const int64_t step = meta.value("global_step", int64_t{0});
  m.pos = TrainPosition();
  m.pos.global_step = step;
  m.warm_start_step = step;
  m.opt_step_base = optimizer_slots ? 0 : step;
  m.warm_start_meta = {{"from", CanonicalDir(from_dir)}, {"checkpoint", ck->path}, {"step", step},
                       {"optimizer", optimizer_slots}, {"rows", old_rows}};
  m.restored_inputs = nullptr;
  m.restored_cursor = nullptr;
  m.train_inputs = nullptr;
  m.restored_path = ck->path;
  m.SyncReplicas();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "ctrain: warm start from %s (step %lld): %lld tensors; embedding rows [0, %lld) from the checkpoint%s; "
                "optimizer slots %s",
                ck->path.c_str(), static_cast<long long>(step), static_cast<long long>(copied),
                static_cast<long long>(old_rows),
                rows > old_rows ? (", rows [" + std::to_string(old_rows) + ", " + std::to_string(rows) +
                                   ") newly initialised").c_str()
                                : "",
                optimizer_slots ? "carried over" : "start afresh");
  m.Log(buf);
  warm_started_ = true;
  return Status::OK();
}

Status Trainer::Restore(bool* restored) {
  *restored = false;
  Impl& m = *impl_;
  if (m.remote != nullptr) return m.RestoreRemote(restored);
  std::optional<LoadedCheckpoint> ck;
  if (!m.options.model_dir.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(ck, ReadTrainerCheckpoint(m.options.model_dir));
  }
  if (!m.options.warm_start_from.empty()) {
    // Resume (the same run, exact) or warm start (a new run): docs/training.md#warm-start.
    const std::string from = CanonicalDir(m.options.warm_start_from);
    const bool same_dir = !m.options.model_dir.empty() && CanonicalDir(m.options.model_dir) == from;
    if (!ck.has_value()) return WarmStart(m.options.warm_start_from, m.options.warm_start_optimizer);
    const nlohmann::json& ws = ck->meta.contains("warm_start") ? ck->meta["warm_start"] : nlohmann::json();
    const bool own_run = ws.is_object() && ws.value("from", "") == from;  // warm-started from this source
    const bool finished = ck->meta.value("finished", false);
    if (same_dir && !(own_run && !finished))
      return WarmStart(m.options.warm_start_from, m.options.warm_start_optimizer);
    if (!same_dir && !own_run)
      return FailedPreconditionError(
          "--model-dir " + m.options.model_dir + " already holds " + ck->path +
          (ws.is_object() ? ", warm-started from " + ws.value("from", "?") : std::string(", another run")) +
          ": a warm start from " + m.options.warm_start_from +
          " needs a new --model-dir, or --model-dir equal to --warm-start-from (continue that model in place); "
          "without --warm-start-from the run in --model-dir is resumed");
    // This warm-started run's own checkpoint: resume it (below), exactly.
  }
  if (!ck.has_value()) return Status::OK();
  CTRAIN_RETURN_IF_ERROR(m.RestoreMeta(ck->meta, ck->path));
  CheckpointTensors t = m.Tensors();
  CTRAIN_RETURN_IF_ERROR(ck->CopyInto(t));
  m.SyncReplicas();
  *restored = true;
  return Status::OK();
}

// The checkpoint meta's model, optimizer and data checks, and the position,
// warm-start and early-stopping state it records (Restore, local and remote).
Status Trainer::Impl::RestoreMeta(const nlohmann::json& meta, const std::string& path) {
  Impl& m = *this;
  CTRAIN_ASSIGN_OR_RETURN(model::DeepFMConfig mc, ModelConfigFromJson(meta.value("model", nlohmann::json())));
  const nlohmann::json want = ModelConfigToJson(m.options.model);
  const nlohmann::json have = ModelConfigToJson(mc);
  for (auto it = want.begin(); it != want.end(); ++it) {
    if (have[it.key()] != it.value())
      return FailedPreconditionError(path + ": checkpoint model has " + it.key() + " = " +
                                     ConfigText(have[it.key()], it.value()) + ", this run asks for " +
                                     ConfigText(it.value(), have[it.key()]) +
                                     " (use the same model flags or a new --model-dir)");
  }
  const std::string opt = meta.value("optimizer", nlohmann::json::object()).value("name", "");
  if (opt != m.options.optimizer.name)
    return FailedPreconditionError(path + ": checkpoint optimizer is '" + opt + "', this run asks for '" +
                                   m.options.optimizer.name + "'");
  // How the files were read: a different id base or feature map would shift every id.
  if (meta.contains("data")) {
    CTRAIN_ASSIGN_OR_RETURN(DataSourceOptions d, DataSourceFromJson(meta["data"]));
    if (!m.options.data.recorded()) {
      m.options.data = d;  // keep the description in later checkpoints
    } else if (d.id_base != m.options.data.id_base) {
      return FailedPreconditionError(path + ": checkpoint was trained with --id-base " +
                                     std::to_string(d.id_base) + ", this run has --id-base " +
                                     std::to_string(m.options.data.id_base) +
                                     " (every id would shift; use the same --id-base or a new --model-dir)");
    } else if (d.feature_map != m.options.data.feature_map) {
      return FailedPreconditionError(path + ": checkpoint was trained with --feature-map '" + d.feature_map +
                                     "', this run has '" + m.options.data.feature_map +
                                     "' (use the same --feature-map or a new --model-dir)");
    } else {
      if (m.options.data.format.empty() && !d.format.empty()) {  // a stream: checked once read (NoteStreamFormats)
        m.restored_data = d;
        m.restored_data_checked = false;
      }
      // Same id base and map: the encoding (format family, hashing, vocabulary content) must match too.
      std::vector<std::string> notes;
      CTRAIN_RETURN_IF_ERROR(CheckInputMatchesModel(d, m.options.model_dir, m.options.data, "this run's --train", &notes)
                                 .WithContext(path + ": resume"));
    }
  }
  m.restored_inputs = meta.contains("train_inputs") ? meta["train_inputs"] : nlohmann::json();
  m.restored_cursor = meta.contains("data_cursor") ? meta["data_cursor"] : nlohmann::json();
  m.train_inputs = m.restored_inputs;  // kept until a Train/TrainStream call replaces it
  m.restored_path = path;
  m.pos.global_step = meta.value("global_step", int64_t{0});
  m.pos.epoch = meta.value("epoch", int64_t{0});
  m.pos.batch_in_epoch = meta.value("batch_in_epoch", int64_t{0});
  m.pos.examples = meta.value("examples", int64_t{0});
  m.pos.train_rows = meta.value("train_rows", int64_t{0});
  if (const auto ws = meta.find("warm_start"); ws != meta.end() && ws->is_object()) {
    m.warm_start_meta = *ws;
    m.warm_start_step = ws->value("step", int64_t{0});
    m.opt_step_base = ws->value("optimizer", false) ? 0 : m.warm_start_step;
  }
  if (const auto es = meta.find("early_stopping"); es != meta.end() && es->is_object() &&
                                                     es->value("metric", "") == m.options.best_metric()) {
    const nlohmann::json& b = (*es)["best"];
    m.best_value = b.is_number() ? b.get<double>() : std::numeric_limits<double>::quiet_NaN();
    m.best_step = es->value("best_step", int64_t{0});
    m.evals_since_best = es->value("evals_since_best", 0);
    m.early_stopped = es->value("stopped", false) && m.options.early_stopping_patience > 0;
  }
  if (meta.value("batch_size", int64_t{0}) != m.options.batch_size && m.pos.batch_in_epoch != 0)
    return FailedPreconditionError(path + ": checkpoint stopped mid-epoch with batch_size " +
                                   std::to_string(meta.value("batch_size", int64_t{0})) +
                                   "; resume with the same --batch-size");
  return Status::OK();
}


// The servers' side of Restore: Init declares the model; what they restored
// gives the position (sync replicas: the global step is the servers').
Status Trainer::Impl::RestoreRemote(bool* restored) {
  std::string text;
  int64_t step = 0;
  CTRAIN_RETURN_IF_ERROR(remote->Init(replicas[0].model->dense_params(), &text, &step));
  remote_ready = true;
  if (remote->sync_replicas()) pos.global_step = step;
  if (text.empty()) return Status::OK();
  const nlohmann::json meta = nlohmann::json::parse(text, nullptr, false);
  const std::string path = "the parameter servers' checkpoint" +
                           (options.model_dir.empty() ? std::string() : " in " + options.model_dir);
  if (!meta.is_object()) return DataLossError(path + ": its trainer meta is not a JSON object");
  CTRAIN_RETURN_IF_ERROR(RestoreMeta(meta, path));
  if (remote->sync_replicas()) pos.global_step = step;
  restored_path = path;
  char buf[320];
  std::snprintf(buf, sizeof buf, "ctrain: %s: the parameter servers restored a checkpoint at global step %lld; "
                "continuing at epoch %lld, batch %lld", remote->Describe().c_str(), static_cast<long long>(step),
                static_cast<long long>(pos.epoch + 1), static_cast<long long>(pos.batch_in_epoch));
  Log(buf);
  *restored = true;
  return Status::OK();
}

Status Trainer::Train(const Dataset& train, const Dataset* valid, TrainResult* result) {
  return impl_->Train(train, valid, result);
}

Status Trainer::TrainStream(const StreamInput& train, const Dataset* valid, TrainResult* result) {
  return impl_->TrainStream(train, valid, result);
}

StatusOr<double> Trainer::MeasureThroughput(const Dataset& train, int64_t steps) {
  Impl& m = *impl_;
  TrainOptions saved = m.options;
  m.options.model_dir.clear();
  m.options.eval_every_steps = 0;
  m.options.save_checkpoints_steps = 0;
  m.options.progress = ProgressMode::kNone;
  m.terminal = false;
  const bool warned = m.input_warned;
  m.input_warned = true;  // a measurement, not a run: no input warnings
  const int32_t R = m.options.parallel.hogwild > 0 ? m.options.parallel.hogwild : 1;
  // One warm-up step (oneDNN primitive creation, first-touch), then the timed ones.
  TrainResult r;
  m.options.max_steps = m.pos.global_step + R;
  m.options.epochs = std::numeric_limits<int32_t>::max() / 2;
  Status st = m.Train(train, nullptr, &r);
  if (st.ok()) {
    m.options.max_steps = m.pos.global_step + steps * R;
    st = m.Train(train, nullptr, &r);
  }
  m.options = saved;
  m.finished = false;
  m.terminal = false;
  m.input_warned = warned;
  CTRAIN_RETURN_IF_ERROR(st);
  return r.examples_per_sec;
}

Status Trainer::Predict(const Dataset& data, std::vector<float>* probs) {
  CTRAIN_RETURN_IF_ERROR(impl_->CheckData(data, "input"));
  probs->clear();
  probs->reserve(data.size());
  impl_->predictions = probs;
  StatusOr<EvalResult> r = impl_->Evaluate(data);
  impl_->predictions = nullptr;
  return r.status();
}

StatusOr<EvalResult> Trainer::Evaluate(const Dataset& data) {
  CTRAIN_RETURN_IF_ERROR(impl_->CheckData(data, "input"));
  return impl_->Evaluate(data);
}

Status Trainer::SaveCheckpoint() { return impl_->Save(); }
int64_t Trainer::global_step() const { return impl_->pos.global_step; }
const TrainOptions& Trainer::options() const { return impl_->options; }
void Trainer::set_log_sink(std::function<void(const std::string&)> sink) { impl_->sink = std::move(sink); }
void Trainer::set_stop_flag(const std::atomic<int>* flag) { impl_->stop_flag = flag; }
void Trainer::set_observer(TrainObserver* observer) { impl_->observer = observer; }
void Trainer::set_batch_source_factory(BatchSourceFactory factory) { impl_->source_factory = std::move(factory); }
void Trainer::set_gradient_exchange(GradientExchange* exchange) { impl_->exch = exchange; }
int64_t Trainer::examples_left_over() const { return impl_->left_over; }
Status Trainer::set_eval_negative_downsampling(double rate) {
  CTRAIN_RETURN_IF_ERROR(ValidateDownsamplingRate(rate));
  impl_->eval_metric_options.negative_downsampling_rate = rate;
  return Status::OK();
}
void Trainer::set_eval_weights(std::vector<float> weights) { impl_->eval_weights = std::move(weights); }

Status Trainer::set_group_field(int32_t field) {
  if (field < -1 || field >= impl_->options.model.field_size)
    return InvalidArgumentError("--gauc-field must be a field index in [0, " +
                                std::to_string(impl_->options.model.field_size) + "), got " + std::to_string(field));
  impl_->options.group_field = field;
  return Status::OK();
}
void Trainer::set_valid_formats(std::vector<InputFormat> formats) { impl_->valid_formats = std::move(formats); }

StatusOr<model::DeepFMConfig> ReadCheckpointModelConfig(const std::string& model_dir) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck, ReadTrainerCheckpoint(model_dir));
  if (!ck.has_value()) return NotFoundError(model_dir + ": no checkpoint");
  return ModelConfigFromJson(ck->meta.value("model", nlohmann::json()));
}

StatusOr<std::unique_ptr<Trainer>> LoadTrainerFromCheckpoint(const std::string& model_dir,
                                                             const ParallelOptions& parallel) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck, ReadTrainerCheckpoint(model_dir));
  if (!ck.has_value()) return NotFoundError(model_dir + ": no checkpoint");
  TrainOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.model, ModelConfigFromJson(ck->meta.value("model", nlohmann::json())));
  CTRAIN_ASSIGN_OR_RETURN(o.optimizer, OptimizerConfigFromJson(ck->meta.value("optimizer", nlohmann::json())));
  o.seed = ck->meta.value("seed", uint64_t{2017});
  o.batch_size = ck->meta.value("batch_size", int64_t{256});
  if (ck->meta.contains("data")) {
    CTRAIN_ASSIGN_OR_RETURN(o.data, DataSourceFromJson(ck->meta["data"]));
  }
  o.negative_downsampling_rate = ck->meta.value("negative_downsampling_rate", 1.0);
  o.model_dir = model_dir;
  o.parallel = parallel;
  o.parallel.towers = 1;
  o.parallel.hogwild = 0;
  o.progress = ProgressMode::kNone;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> t, Trainer::Create(o));
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(t->Restore(&restored));
  CTRAIN_RETURN_IF_ERROR(t->set_eval_negative_downsampling(1.0));  // eval data: not downsampled unless told
  return t;
}

}  // namespace ctrain::train
