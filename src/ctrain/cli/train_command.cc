// `ctrain train`, `ctrain eval`, `ctrain predict`: the DeepFM training job
// (train/trainer.h). Flags and config files: docs/training.md.
#include <fcntl.h>
#include <malloc.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ctrain/base/signals.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/cli/monitor_flags.h"
#include "ctrain/monitor/train_monitor.h"
#include "ctrain/cli/service_flags.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/data/shard.h"
#if CTRAIN_HAVE_MPI
#include "ctrain/dist/job_setup.h"
#include "ctrain/dist/mpi_exchange.h"
#endif
#include "ctrain/io/file.h"
#include "ctrain/model/layers/bf16.h"
#include "ctrain/train/autotune.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/input_checks.h"
#include "ctrain/train/prediction_output.h"
#include "ctrain/train/model_dir_lock.h"
#include "ctrain/train/threads.h"
#include "ctrain/train/trainer.h"

namespace ctrain::cli {
namespace {

// Rows of the built-in synthetic job (no --train given).
constexpr int64_t kSynthTrainRows = 200000;
constexpr int64_t kSynthValidRows = 20000;

struct ParallelFlags {
  train::ParallelOptions p;
  bool autotune = false;
  int64_t autotune_steps = 5;
  // eval/predict: registered only to be refused (hidden options have no get_name()).
  std::vector<std::pair<CLI::Option*, std::string>> train_only;
  // train: the thread flags, to keep explicit ones fixed under --autotune.
  CLI::Option* intra_opt = nullptr;
  CLI::Option* towers_opt = nullptr;
  CLI::Option* hogwild_opt = nullptr;
  void Register(CLI::App* sub) {
    intra_opt = sub->add_option("--intra-op-parallelism-threads,--intra_op_parallelism_threads,--intra-op-threads",
                                p.intra_op_threads, "OpenMP threads per replica (0 = cores / replicas)")
                    ->capture_default_str();
    sub->add_option("--inter-op-parallelism-threads,--inter_op_parallelism_threads,--inter-op-threads", p.inter_op_threads,
                    "Threads preparing batches ahead of compute (0 = inline)")
        ->capture_default_str();
    towers_opt = sub->add_option("--towers", p.towers, "Synchronous replicas splitting each batch (deterministic)")
                     ->capture_default_str();
    hogwild_opt = sub->add_option("--hogwild", p.hogwild, "Asynchronous lock-free replicas (0 = off; not deterministic)")
                      ->capture_default_str();
    sub->add_option("--affinity", p.affinity, "Pin replica and OpenMP threads to cores (true/false)")
        ->capture_default_str();
    sub->add_flag("--autotune", autotune,
                  "Measure the thread layouts (with --mixed-precision auto: also bf16) for a few steps and train "
                  "with the fastest; --intra-op-threads, --towers or --hogwild given explicitly are kept as given "
                  "and only the rest is measured");
    sub->add_option("--deterministic", p.deterministic,
                    "Refuse settings whose results differ from run to run (hogwild); --autotune then measures "
                    "only deterministic layouts")
        ->capture_default_str();
    sub->add_option("--autotune-steps,--autotune_steps", autotune_steps, "Timed steps per autotune candidate")
        ->capture_default_str();
  }
  // eval/predict run one replica: only --intra-op-parallelism-threads applies.
  // The training-only thread flags are accepted by the parser (hidden) so that
  // RejectTrainOnly can name them instead of ignoring them silently.
  void RegisterInfer(CLI::App* sub) {
    sub->add_option("--intra-op-parallelism-threads,--intra_op_parallelism_threads,--intra-op-threads",
                    p.intra_op_threads, "OpenMP threads (0 = all allowed cores)")
        ->capture_default_str();
    auto hide = [&](CLI::Option* o) {
      std::string name = o->get_name();
      train_only.emplace_back(o->group(""), std::move(name));
    };
    hide(sub->add_option("--inter-op-parallelism-threads,--inter_op_parallelism_threads,--inter-op-threads",
                         p.inter_op_threads));
    hide(sub->add_option("--towers", p.towers));
    hide(sub->add_option("--hogwild", p.hogwild));
    hide(sub->add_option("--affinity", p.affinity));
    hide(sub->add_flag("--autotune", autotune));
    hide(sub->add_option("--autotune-steps,--autotune_steps", autotune_steps));
  }
  Status RejectTrainOnly(const char* command) const {
    for (const auto& [o, name] : train_only)
      if (o->count() > 0)
        return InvalidArgumentError("ctrain " + std::string(command) + ": " + name +
                                    " is a training flag; " + command +
                                    " runs one replica (set its threads with --intra-op-parallelism-threads)");
    return Status::OK();
  }
};

// The up-front output check (a real create + unlink probe) lives in io/file.h.
using io::CheckOutputWritable;

// The absolute path of a --feature-map (as recorded in checkpoints).
std::string AbsolutePath(const std::string& path) {
  if (path.empty()) return path;
  char abs[PATH_MAX];
  return ::realpath(path.c_str(), abs) != nullptr ? std::string(abs) : path;
}

struct TrainFlags {
  std::vector<std::string> train, valid;
  DataFlags data;
  train::TrainOptions o;
  std::string deep_layers = "400,400,400";
  std::string optimizer = "adam";
  float learning_rate = 0.0005f;
  int32_t embedding_size = 32;
  float dropout = 0.5f;
  bool batch_norm = false;
  std::string mixed_precision = "f32";
  float l2_reg = 0.0f;
  std::string metrics_json;
  std::string config;
  std::string progress = "auto";
  ParallelFlags par;
  CLI::App* app = nullptr;
  // Input mode and pipeline knobs (docs/training.md#input-modes).
  std::string input_mode = "auto";
  // mpirun (docs/distributed.md): Horovod's learning-rate scaling and stall detector.
  std::string lr_scaling = "none";
  double stall_warning_secs = 60, stall_shutdown_secs = 0;
  int64_t check_replicas_every = 0;
  int64_t lr_warmup_steps = 0;
  bool per_rank_inputs = false;  // --train held {local_rank} or {rank}
  data::PipelineOptions pipe = DefaultTrainPipeline();
  std::vector<CLI::Option*> pipeline_opts;  // to warn when memory mode ignores them
  CLI::Option* num_shards_opt = nullptr;
  CLI::Option* shard_index_opt = nullptr;
  DataServiceClientFlags data_service;  // --data-service: batches from remote workers (docs/data-service.md)
  MonitorFlags monitor;                 // --monitor-dir (docs/launch.md#monitoring)

  static data::PipelineOptions DefaultTrainPipeline() {
    data::PipelineOptions p;
    p.shuffle_buffer_size = 100000;
    return p;
  }
  void RegisterPipeline(CLI::App* sub) {
    auto add = [&](CLI::Option* o) {
      pipeline_opts.push_back(o->capture_default_str());
      return o;
    };
    sub->add_option("--input-mode,--input_mode", input_mode,
                    "stream (through the input pipeline) or memory (load everything first); "
                    "auto = stream for --train, memory for the built-in synthetic data")
        ->capture_default_str();
    add(sub->add_option("--num-parallel-reads,--num_parallel_reads", pipe.num_parallel_reads,
                        "Files read concurrently"));
    add(sub->add_option("--num-parallel-calls,--num_parallel_calls", pipe.num_parallel_calls,
                        "Parse threads (each parses a whole batch)"));
    add(sub->add_option("--shuffle-buffer-size,--shuffle_buffer_size", pipe.shuffle_buffer_size,
                        "Records in the shuffle buffer (0 = no shuffling)"));
    add(sub->add_option("--reshuffle-each-iteration,--reshuffle_each_iteration", pipe.reshuffle_each_iteration,
                        "A new shuffle order every epoch (true/false)"));
    add(sub->add_option("--prefetch-buffer-size,--prefetch_buffer_size,--prefetch", pipe.prefetch_buffer_size,
                        "Batches prepared ahead of the trainer (0 = none)"));
    add(sub->add_option("--cache", pipe.cache, "Cache the first epoch: memory or a file path (later epochs replay it)"));
    add(sub->add_option("--cache-max-bytes,--cache_max_bytes", pipe.cache_max_bytes, "Memory cache limit"));
    num_shards_opt = add(sub->add_option("--num-shards,--num_shards", pipe.num_shards,
                                         "Shards of the input (default: OMPI_COMM_WORLD_SIZE or 1)"));
    shard_index_opt = add(sub->add_option("--shard-index,--shard_index", pipe.shard_index,
                                          "This process's shard (default: OMPI_COMM_WORLD_RANK or 0)"));
    add(sub->add_option("--drop-remainder,--drop_remainder", pipe.drop_remainder,
                        "Drop the last partial batch of each epoch (true/false)"));
  }
};

// --config FILE (.toml or .json): a flat table of flag names (dashes or
// underscores) to values. Command-line flags win over the file.
Status ApplyConfigFile(CLI::App* app, const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  std::vector<std::pair<std::string, std::vector<std::string>>> items;
  auto scalar = [](const nlohmann::json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    return v.dump();
  };
  const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  nlohmann::json j;
  if (is_json) {
    j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(path + ": not a JSON object");
  } else {
    toml::table tbl;
    try {
      tbl = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      std::ostringstream os;
      os << e.description() << " (line " << e.source().begin.line << ", column " << e.source().begin.column << ")";
      return InvalidArgumentError(path + ": " + os.str());
    }
    std::ostringstream os;
    os << toml::json_formatter{tbl};
    j = nlohmann::json::parse(os.str(), nullptr, false);
    if (j.is_discarded()) return InternalError(path + ": could not convert TOML");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::vector<std::string> vals;
    if (it.value().is_array()) {
      // deep_layers = [400, 400, 400] or train = ["a", "b"]
      if (it.key() == "deep_layers" || it.key() == "deep-layers") {
        std::string s;
        for (const auto& e : it.value()) s += (s.empty() ? "" : ",") + scalar(e);
        vals.push_back(s);
      } else {
        for (const auto& e : it.value()) vals.push_back(scalar(e));
      }
    } else if (it.value().is_object()) {
      return InvalidArgumentError(path + ": key '" + it.key() + "': nested tables are not supported (use flat keys)");
    } else {
      vals.push_back(scalar(it.value()));
    }
    items.emplace_back(it.key(), std::move(vals));
  }
  for (auto& [key, vals] : items) {
    if (key == "config") return InvalidArgumentError(path + ": 'config' cannot be set from a config file");
    CLI::Option* opt = app->get_option_no_throw("--" + key);
    if (opt == nullptr) {
      std::string alt = key;
      for (char& c : alt) c = (c == '_') ? '-' : c;
      opt = app->get_option_no_throw("--" + alt);
    }
    if (opt == nullptr) return InvalidArgumentError(path + ": unknown key '" + key + "' (not a flag of this command)");
    if (opt->count() > 0) continue;  // the command line wins
    if (opt->get_type_size() == 0 && vals.size() == 1) {  // a flag: true/false
      if (vals[0] != "true" && vals[0] != "false")
        return InvalidArgumentError(path + ": key '" + key + "' must be true or false");
      if (vals[0] == "false") continue;
    }
    try {
      opt->add_result(vals);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return InvalidArgumentError(path + ": key '" + key + "': " + e.what());
    }
  }
  return Status::OK();
}

Status WriteMetricsJson(const std::string& path, const nlohmann::json& j) {
  return io::WriteStringToFileAtomic(path, j.dump(2) + "\n");
}

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

Status LoadData(const std::vector<std::string>& paths, DataFlags& data, int64_t feature_size, train::Dataset* out,
                const char* what, train::LoadStats* stats_out = nullptr, bool model_fixed = false) {
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, data.ReaderOptions());
  ro.feature_size = feature_size;
  ro.id_limit = feature_size;  // the reader's located range error
  ro.id_limit_is_model = model_fixed;
  train::LoadStats local;
  train::LoadStats& stats = stats_out != nullptr ? *stats_out : local;
  StatusOr<train::Dataset> loaded = train::LoadDataset(paths, ro, &stats);
  // --valid / --input errors say which flag; --train errors read as in stream mode.
  if (!loaded.ok()) return std::string(what) == "train" ? loaded.status() : loaded.status().WithContext(std::string("--") + what);
  *out = std::move(loaded).value();
  if (std::string(what) != "input")  // eval/predict log them with the output line they affect
    for (const std::string& d : train::DescribeDropped(stats.dropped, false))
      std::fprintf(stderr, "ctrain: %s: %s\n", what, d.c_str());
  std::fprintf(stderr, "ctrain: %s: %lld examples from %lld file(s), CTR %.4f%s%s\n", what,
               static_cast<long long>(out->size()), static_cast<long long>(stats.files), out->PositiveRate(),
               stats.skipped.empty() ? "" : "; skipped: ", stats.skipped.c_str());
  return Status::OK();
}

#if CTRAIN_HAVE_MPI
using MpiJob = dist::MpiExchange;
#else
struct MpiJob;  // built without MPI (-DCTRAIN_MPI=OFF)
#endif

Status RunTrainJob(TrainFlags& fl, MpiJob* mpi) {
  train::TrainOptions& o = fl.o;
  CTRAIN_ASSIGN_OR_RETURN(o.model.deep_layers, train::ParseLayerList(fl.deep_layers));
  o.model.embedding_size = fl.embedding_size;
  o.model.dropout = fl.dropout;
  o.model.batch_norm = fl.batch_norm;
  o.model.l2_reg = fl.l2_reg;
  // Mixed precision is a runtime choice, not part of the model: checkpoints stay f32
  // and a run may resume with the other setting.
  if (fl.mixed_precision == "bf16" || fl.mixed_precision == "mixed_bfloat16") {
    CTRAIN_RETURN_IF_ERROR(model::Bf16GemmSupported());
    o.model.gemm_dtype = model::DataType::kBF16;
  } else if (fl.mixed_precision == "f32" || fl.mixed_precision == "float32") {
    o.model.gemm_dtype = model::DataType::kF32;
  } else if (fl.mixed_precision == "auto") {  // --autotune measures both (train/autotune.h)
    const Status bf16 = model::Bf16GemmSupported();
    o.model.gemm_dtype = bf16.ok() ? model::DataType::kBF16 : model::DataType::kF32;
    if (!bf16.ok() && !fl.par.autotune)
      std::fprintf(stderr, "ctrain: --mixed-precision auto: f32 (%s)\n", std::string(bf16.message()).c_str());
  } else {
    return InvalidArgumentError("--mixed-precision: expected f32, bf16 or auto, got '" + fl.mixed_precision + "'");
  }
  o.model.field_size = fl.data.field_size;
  o.model.feature_size = fl.data.feature_size;
  o.optimizer.name = fl.optimizer;
  o.optimizer.learning_rate = fl.learning_rate;
  bool report = true;  // this process prints the run's lines (under mpirun: rank 0 only)
#if CTRAIN_HAVE_MPI
  std::string job_line;
  if (mpi != nullptr) {  // one rank of `mpirun -np N ctrain train` (dist/job_setup.h)
    dist::RankSettings rs;
    rs.train = fl.train;
    rs.cache = fl.pipe.cache;
    rs.learning_rate = fl.learning_rate;
    rs.lr_scaling = fl.lr_scaling;
    rs.lr_warmup_steps = fl.lr_warmup_steps;
    rs.batch_size = o.batch_size;
    rs.autotune = fl.par.autotune;
    CTRAIN_RETURN_IF_ERROR(dist::SetUpRank(*mpi, &rs));
    fl.train = rs.train;
    fl.pipe.cache = rs.cache;
    fl.per_rank_inputs = rs.per_rank_inputs;
    o.optimizer.learning_rate = rs.learning_rate;
    o.lr_warmup_steps = rs.lr_warmup_steps;
    o.lr_warmup_from = rs.lr_warmup_from;
    job_line = rs.job_line;
    if (!mpi->is_chief()) {  // rank 0 alone checkpoints, validates and reports
      o.model_dir.clear();
      fl.metrics_json.clear();
      fl.valid.clear();
      fl.progress = "none";
      report = false;
    }
  }
#else
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n != nullptr && std::atoi(n) > 1)
    return FailedPreconditionError("started by mpirun with " + std::string(n) +
                                   " ranks, but this ctrain was built without MPI (-DCTRAIN_MPI=OFF or no "
                                   "libopenmpi-dev): the ranks would train separate models");
#endif
  o.parallel = fl.par.p;
  if (fl.progress == "auto") o.progress = train::ProgressMode::kAuto;
  else if (fl.progress == "bar") o.progress = train::ProgressMode::kTerminal;
  else if (fl.progress == "log") o.progress = train::ProgressMode::kLog;
  else if (fl.progress == "none") o.progress = train::ProgressMode::kNone;
  else return InvalidArgumentError("--progress must be auto|bar|log|none, got '" + fl.progress + "'");

  std::string mode = fl.input_mode;
  if (mode == "auto") mode = fl.train.empty() ? "memory" : "stream";
  if (mode != "stream" && mode != "memory")
    return InvalidArgumentError("--input-mode must be stream or memory (or auto), got '" + fl.input_mode + "'");
  if (mode == "stream" && fl.train.empty())
    return InvalidArgumentError("--input-mode stream needs --train (the built-in synthetic data is generated in memory)");
  const bool remote = !fl.data_service.address.empty();
  if (remote && (fl.train.empty() || mode != "stream"))
    return InvalidArgumentError("--data-service streams --train through the service: give --train, and not "
                                "--input-mode memory");
  if (remote && fl.par.autotune)
    return InvalidArgumentError("--autotune measures on local rows; with --data-service give the thread layout");
  const bool stream = mode == "stream";
  if (!o.model_dir.empty()) {
    // Created now (checkpoints would create it later) so that a --metrics-json
    // inside it passes the up-front check, and an unusable directory fails early.
    std::error_code ec;
    std::filesystem::create_directories(o.model_dir, ec);
    if (ec) return ErrnoError(o.model_dir, "--model-dir: cannot create the directory", ec.value());
  }
  // One writer per model dir, and a read-only one fails now, not after an epoch.
  std::unique_ptr<train::ModelDirLock> model_dir_lock;
  if (!o.model_dir.empty()) {
    CTRAIN_RETURN_IF_ERROR(io::CheckDirWritable("--model-dir", o.model_dir));
    CTRAIN_ASSIGN_OR_RETURN(model_dir_lock, train::ModelDirLock::Acquire(o.model_dir));
  }
  CTRAIN_RETURN_IF_ERROR(CheckOutputWritable("--metrics-json", fl.metrics_json));
  const bool cache_file = !fl.pipe.cache.empty() && fl.pipe.cache != "memory";
  if (stream && cache_file) CTRAIN_RETURN_IF_ERROR(CheckOutputWritable("--cache", fl.pipe.cache));
  {  // No output may overwrite an input (or another output), before any work.
    std::vector<io::FlagPath> in, out;
    for (const std::string& p : fl.train) in.push_back({"--train", p});
    for (const std::string& p : fl.valid) in.push_back({"--valid", p});
    in.push_back({"--feature-map", fl.data.feature_map});
    in.push_back({"--config", fl.config});
    if (stream && cache_file) out.push_back({"--cache", fl.pipe.cache});
    out.push_back({"--metrics-json", fl.metrics_json});
    auto checkpoint_file = [](std::string_view name) {  // train/checkpoint.h, train/model_dir_lock.h
      return name == "checkpoint" || name == train::kModelDirLockName || name.starts_with("ckpt-");
    };
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out, {{"--model-dir", o.model_dir, checkpoint_file}}));
  }
  if (!stream)
    for (CLI::Option* opt : fl.pipeline_opts)
      if (opt->count() > 0)
        std::fprintf(stderr, "ctrain: warning: %s is ignored with --input-mode memory\n", opt->get_name().c_str());

  for (const std::string& t : fl.train)
    for (const std::string& v : fl.valid)
      if (t == "-" && v == "-")
        return InvalidArgumentError("--train - and --valid - both read stdin, which can be read once: give one of "
                                    "them as a file");
  train::Dataset tr, va;
  train::LoadStats tr_stats, va_stats;
  train::StreamInput si;
  train::BatchSourceFactory data_service_factory;
  bool have_valid = false;
  if (stream) {
    si.files = fl.train;
    CTRAIN_ASSIGN_OR_RETURN(si.reader, fl.data.ReaderOptions());
    si.reader.feature_size = o.model.feature_size;
    si.reader.id_limit = o.model.feature_size;
    si.pipeline = fl.pipe;
    si.pipeline.pipe_timeout_ms = fl.data.pipe_timeout_ms;  // --pipe-timeout-ms is a data flag (all commands)
    if (fl.num_shards_opt->count() == 0 && fl.shard_index_opt->count() == 0 && !fl.per_rank_inputs) {
      CTRAIN_ASSIGN_OR_RETURN(data::ShardSpec shard, data::ShardFromEnvironment());
      si.pipeline.num_shards = shard.num_shards;
      si.pipeline.shard_index = shard.index;
    }
    if (remote) {
      CTRAIN_ASSIGN_OR_RETURN(dataservice::DataServiceClientOptions dso,
                              fl.data_service.Options(/*ordered=*/true, AbsolutePath(fl.data.feature_map)));
      data_service_factory = dataservice::MakeDataServiceSourceFactory(dso);
      // Received batches are decoded on the stream threads and freed on the
      // trainer's: one malloc arena per core keeps RSS near the byte limits
      // (docs/data-service.md#memory).
      mallopt(M_ARENA_MAX, std::max(2, train::AvailableCpus()));
      if (report)
        std::fprintf(stderr, "ctrain: training data from the data service at %s (%s, job %s)\n",
                     dso.dispatcher.c_str(), fl.data_service.processing_mode.c_str(),
                     dso.job_name.empty() ? "by dataset" : dso.job_name.c_str());
    } else if (report)
    std::fprintf(stderr,
                 "ctrain: streaming training data from %zu input(s): reads=%d calls=%d shuffle_buffer=%lld "
                 "prefetch=%d cache=%s shard %d/%d\n",
                 si.files.size(), si.pipeline.num_parallel_reads, si.pipeline.num_parallel_calls,
                 static_cast<long long>(o.shuffle ? si.pipeline.shuffle_buffer_size : 0),
                 si.pipeline.prefetch_buffer_size, si.pipeline.cache.empty() ? "none" : si.pipeline.cache.c_str(),
                 si.pipeline.shard_index, si.pipeline.num_shards);
    if (!fl.valid.empty()) {
      CTRAIN_RETURN_IF_ERROR(LoadData(fl.valid, fl.data, o.model.feature_size, &va, "valid", &va_stats));
      have_valid = true;
    }
  } else if (fl.train.empty()) {
    if (!fl.valid.empty()) return InvalidArgumentError("--valid given without --train");
    if (o.model.field_size != 39)
      return InvalidArgumentError("the built-in synthetic data has field_size 39, got --field-size " +
                                  std::to_string(o.model.field_size));
    std::fprintf(stderr,
                 "ctrain: no --train given: training on built-in synthetic Criteo-like data "
                 "(data/synth.h, seed %llu): %lld train + %lld validation rows, field_size 39, feature_size %lld\n",
                 static_cast<unsigned long long>(o.seed), static_cast<long long>(kSynthTrainRows),
                 static_cast<long long>(kSynthValidRows), static_cast<long long>(o.model.feature_size));
    CTRAIN_ASSIGN_OR_RETURN(tr, train::MakeSynthDataset(o.seed, 0, kSynthTrainRows, o.model.feature_size));
#if CTRAIN_HAVE_MPI
    if (mpi != nullptr && mpi->size() > 1) tr = dist::ShardRows(tr, mpi->size(), mpi->rank());
#endif
    CTRAIN_ASSIGN_OR_RETURN(va, train::MakeSynthDataset(o.seed, kSynthTrainRows, kSynthValidRows, o.model.feature_size));
    have_valid = true;
  } else {
    CTRAIN_RETURN_IF_ERROR(LoadData(fl.train, fl.data, o.model.feature_size, &tr, "train", &tr_stats));
#if CTRAIN_HAVE_MPI
    if (mpi != nullptr && mpi->size() > 1 && !fl.per_rank_inputs) {  // memory mode shards its rows too
      tr = dist::ShardRows(tr, mpi->size(), mpi->rank());
      std::fprintf(stderr, "ctrain: %s: memory mode: %lld training rows (every %d-th row from %d)\n",
                   mpi->RankName(mpi->rank()).c_str(), static_cast<long long>(tr.size()), mpi->size(), mpi->rank());
    }
#endif
    if (!fl.valid.empty()) {
      CTRAIN_RETURN_IF_ERROR(LoadData(fl.valid, fl.data, o.model.feature_size, &va, "valid", &va_stats));
      have_valid = true;
    }
  }
  if (!fl.train.empty()) {
    // Recorded in checkpoints: the format actually read (never auto), id base,
    // sizes, hashing or vocabulary (train/data_source.h).
    CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, fl.data.ReaderOptions());
    ro.feature_size = o.model.feature_size;
    std::vector<train::InputFormat> formats;
    if (remote) {  // the files are read on the workers' hosts: the format is known once read
      for (const std::string& f : fl.train) formats.push_back({f, fl.data.format == "auto" ? "" : fl.data.format, ""});
    } else if (stream) {
      CTRAIN_ASSIGN_OR_RETURN(formats, train::DetectInputFormats(fl.train, ro));
    } else {
      formats = train::InputFormatsRead(tr_stats);
    }
    CTRAIN_ASSIGN_OR_RETURN(o.data, train::DescribeTrainingData(formats, ro, AbsolutePath(fl.data.feature_map)));
    // --valid must be encoded like --train (the check eval makes against a checkpoint).
    if (have_valid)
      CTRAIN_RETURN_IF_ERROR(train::CheckValidMatchesTraining(o.data, fl.train, train::InputFormatsRead(va_stats), ro,
                                                              AbsolutePath(fl.data.feature_map)));
  }
  CTRAIN_RETURN_IF_ERROR(o.Validate());

  if (fl.par.autotune && stream) {
    // Autotune measures on in-memory rows: a sample read through the pipeline.
    for (const std::string& f : si.files)
      if (f == "-" || f.rfind("pipe:", 0) == 0)
        return FailedPreconditionError("--autotune cannot sample a stream input (" + f +
                                       "): it would consume the training data; give the thread layout instead");
    const int64_t want = (fl.par.autotune_steps + 1) * o.batch_size * std::max(2, train::AvailableCpus());
    data::PipelineOptions po = si.pipeline;
    po.epochs = 1;
    po.batch_size = o.batch_size;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<data::Pipeline> p, data::Pipeline::Create(si.files, si.reader, po));
    tr = train::Dataset(o.model.field_size);
    data::Batch b;
    while (tr.size() < want) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, p->Next(&b));
      if (!more) break;
      if (b.field_size != o.model.field_size || !b.row_splits.empty())
        return InvalidArgumentError("training data has field_size " + std::to_string(b.field_size) +
                                    " or variable-length rows; the model needs " +
                                    std::to_string(o.model.field_size) + " fields per example");
      for (int64_t r = 0; r < b.size(); ++r)
        tr.Append(b.labels[r], b.ids.data() + r * b.field_size, b.values.data() + r * b.field_size);
    }
  }
  if (fl.par.autotune) {
    std::fprintf(stderr, "ctrain: autotune: measuring thread layouts on %d cores (%lld steps each)...\n",
                 train::AvailableCpus(), static_cast<long long>(fl.par.autotune_steps));
    train::AutotuneOptions ao;
    ao.steps = fl.par.autotune_steps;
    ao.try_bf16 = fl.mixed_precision == "auto";
    if (fl.par.intra_opt->count() > 0) ao.fixed_intra_op_threads = fl.par.p.intra_op_threads;
    if (fl.par.towers_opt->count() > 0) ao.fixed_towers = fl.par.p.towers;
    if (fl.par.hogwild_opt->count() > 0) ao.fixed_hogwild = fl.par.p.hogwild;
    CTRAIN_ASSIGN_OR_RETURN(train::AutotuneResult at, train::Autotune(o, tr, ao));
    std::fprintf(stderr, "%s", train::FormatAutotuneTable(at).c_str());
    train::ApplyAutotune(at, &o);
  }
  const int32_t replicas = o.parallel.replicas();
  const int32_t intra = o.parallel.intra_op_threads > 0 ? o.parallel.intra_op_threads
                                                        : std::max(1, train::AvailableCpus() / replicas);
  if (report)
  std::fprintf(stderr,
               "ctrain: DeepFM F=%d K=%d deep=%s dropout=%g%s l2=%g gemm=%s | %s lr=%g batch=%lld epochs=%d | "
               "threads: intra_op=%d towers=%d hogwild=%d%s\n",
               o.model.field_size, o.model.embedding_size, fl.deep_layers.c_str(), o.model.dropout,
               o.model.batch_norm ? " bn" : "", o.model.l2_reg, model::DataTypeName(o.model.gemm_dtype),
               o.optimizer.name.c_str(), o.optimizer.learning_rate,
               static_cast<long long>(o.batch_size), o.epochs, intra, o.parallel.towers, o.parallel.hogwild,
               o.parallel.affinity ? " affinity" : "");
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> trainer, train::Trainer::Create(o));
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(trainer->Restore(&restored));
  if (restored)
    std::fprintf(stderr, "ctrain: resumed from %s at step %lld\n", o.model_dir.c_str(),
                 static_cast<long long>(trainer->global_step()));
#if CTRAIN_HAVE_MPI
  if (mpi != nullptr) {
    trainer->set_gradient_exchange(mpi);
    mpi->set_check_replicas_every(fl.check_replicas_every);
    if (mpi->is_chief()) std::fprintf(stderr, "ctrain: %s\n", job_line.c_str());
  }
#endif
  train::TrainResult r;
  trainer->set_stop_flag(PendingInterruptFlag());
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<monitor::Monitor> mon, fl.monitor.Start("trainer"));
  std::unique_ptr<monitor::TrainMonitor> train_mon;
  if (mon) trainer->set_observer((train_mon = std::make_unique<monitor::TrainMonitor>(mon.get(), 1)).get());
  if (have_valid && !fl.valid.empty()) trainer->set_valid_formats(train::InputFormatsRead(va_stats));
  if (data_service_factory) trainer->set_batch_source_factory(data_service_factory);
#if CTRAIN_HAVE_MPI
  std::vector<int64_t> bytes0;  // traffic before training, by kind
  if (mpi != nullptr)
    for (int k = 0; k < dist::MpiExchange::kTrafficKinds; ++k)
      bytes0.push_back(mpi->payload_bytes(static_cast<dist::MpiExchange::Traffic>(k)));
  const int64_t mpi_colls0 = mpi != nullptr ? mpi->collectives() : 0;
  const double mpi_secs0 = mpi != nullptr ? mpi->collective_seconds() : 0;
  const int64_t wchar0 = mpi != nullptr ? dist::ProcessBytesWritten() : 0;
#endif
  {
    InterruptDeferral defer;  // SIGINT/SIGTERM: checkpoint at the current step, then exit 130/143
    if (stream)
      CTRAIN_RETURN_IF_ERROR(trainer->TrainStream(si, have_valid ? &va : nullptr, &r));
    else
      CTRAIN_RETURN_IF_ERROR(trainer->Train(tr, have_valid ? &va : nullptr, &r));
  }
  if (!report) {
    // The other ranks' lines would repeat rank 0's (docs/distributed.md).
  } else if (r.steps_this_run == 0) {
    std::fprintf(stderr, "ctrain: nothing to do: already at step %lld (%lld examples, %.2f epochs)",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs);
  } else if (!r.epoch_size_known) {
    std::fprintf(stderr,
                 "ctrain: done: %lld steps, %lld examples (%lld epochs completed; epoch size unknown until the "
                 "first epoch ends), %.0f examples/s",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples),
                 static_cast<long long>(r.epochs), r.examples_per_sec);
  } else {
    std::fprintf(stderr, "ctrain: done: %lld steps, %lld examples (%.2f epochs), %.0f examples/s",
                 static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.epochs, r.examples_per_sec);
  }
  if (report) {
    if (r.evaluated) std::fprintf(stderr, ", valid auc %.5f logloss %.5f", r.eval.auc, r.eval.logloss);
    if (r.streamed && r.steps_this_run > 0 && remote)
      std::fprintf(stderr, ", input wait %.1f%% (data service)", 100.0 * r.input_wait_fraction);
    else if (r.streamed && r.steps_this_run > 0)
      std::fprintf(stderr, ", input wait %.1f%%, pipeline %.0f records/s", 100.0 * r.input_wait_fraction,
                   r.pipeline.records_per_second);
    std::fprintf(stderr, "\n");
    if (r.streamed && r.input_wait_fraction > 0.1 && !r.input_suggestion.empty())
      std::fprintf(stderr, "ctrain: %s\n", r.input_suggestion.c_str());
  }
  nlohmann::json mpi_json;
#if CTRAIN_HAVE_MPI
  if (mpi != nullptr && r.steps_this_run > 0) {  // traffic per step of this rank (docs/distributed.md#traffic)
    const double steps = static_cast<double>(r.steps_this_run);
    const int64_t wchar1 = dist::ProcessBytesWritten();
    auto per_step = [&](dist::MpiExchange::Traffic k) {
      return static_cast<double>(mpi->payload_bytes(k) - bytes0[k]) / steps;
    };
    mpi_json = {{"ranks", mpi->size()},
                {"collectives_per_step", static_cast<double>(mpi->collectives() - mpi_colls0) / steps},
                {"dense_bytes_per_step", per_step(dist::MpiExchange::kDense)},
                {"sparse_bytes_per_step", per_step(dist::MpiExchange::kSparse)},
                {"control_bytes_per_step", per_step(dist::MpiExchange::kControl)},
                {"broadcast_bytes", mpi->payload_bytes(dist::MpiExchange::kBroadcast) - bytes0[dist::MpiExchange::kBroadcast]},
                {"collective_seconds_per_step", (mpi->collective_seconds() - mpi_secs0) / steps},
                {"written_bytes_per_step", wchar0 >= 0 && wchar1 >= 0 ? (wchar1 - wchar0) / steps : -1.0},
                {"examples_left_over", trainer->examples_left_over()}};
    if (mpi->is_chief())
      std::fprintf(stderr,
                   "ctrain: mpirun: rank 0 per step: %.1f collectives, payload %.0f dense + %.0f sparse + %.0f control "
                   "bytes; %.0f bytes written to sockets (/proc/self/io, counting the initial broadcast of %lld "
                   "bytes spread over the steps; ~0 when Open MPI moves the data through shared memory)\n",
                   mpi_json["collectives_per_step"].get<double>(), mpi_json["dense_bytes_per_step"].get<double>(),
                   mpi_json["sparse_bytes_per_step"].get<double>(), mpi_json["control_bytes_per_step"].get<double>(),
                   mpi_json["written_bytes_per_step"].get<double>(),
                   static_cast<long long>(mpi_json["broadcast_bytes"].get<int64_t>()));
  }
#endif
  if (!fl.metrics_json.empty()) {
    nlohmann::json j{{"auc", r.evaluated ? Num(r.eval.auc) : nlohmann::json(nullptr)},
                     {"logloss", r.evaluated ? Num(r.eval.logloss) : nlohmann::json(nullptr)},
                     {"examples_per_sec", r.examples_per_sec},
                     {"examples", r.examples},
                     {"examples_this_run", r.examples_this_run},
                     {"steps", r.steps},
                     {"epochs", r.epochs},
                     {"train_loss", Num(r.last_loss)},
                     {"seconds", r.seconds},
                     {"restored", r.restored},
                     {"intra_op_parallelism_threads", intra},
                     {"towers", o.parallel.towers},
                     {"hogwild", o.parallel.hogwild},
                     {"input_mode", stream ? "stream" : "memory"},
                     {"input_wait_fraction", r.input_wait_fraction},
                     {"input_wait_seconds", r.input_wait_seconds},
                     {"compute_seconds", r.compute_seconds},
                     {"warnings", r.warnings}};
    if (!mpi_json.is_null()) j["mpi"] = mpi_json;
    if (r.streamed) {
      j["pipeline_records_per_sec"] = r.pipeline.records_per_second;
      j["input_suggestion"] = r.input_suggestion;
      nlohmann::json pj = nlohmann::json::parse(r.pipeline.ToJson(), nullptr, false);
      j["pipeline"] = pj.is_discarded() ? nlohmann::json(r.pipeline.ToJson()) : pj;
      if (!r.source_metrics.is_null()) j["data_service"] = r.source_metrics;
    }
    CTRAIN_RETURN_IF_ERROR(WriteMetricsJson(fl.metrics_json, j));
  }
  return Status::OK();
}

struct InferFlags {
  std::vector<std::string> input;
  std::string model_dir, output, metrics_json;
  std::string output_columns = "prediction";
  DataFlags data;
  ParallelFlags par;
  CLI::App* app = nullptr;
};

// eval/predict read their input as the training run read its files (checkpoint
// meta "data"), unless a flag says otherwise. Flags that agree with the model
// are accepted; the model's field_size and feature_size are fixed.
// The input's format is not taken from the checkpoint: it is detected (or
// given) and compared with the checkpoint's (CheckInputEncoding), so data in
// another format is named as such instead of failing to parse.
Status ApplyCheckpointDataOptions(InferFlags& fl, const train::TrainOptions& to) {
  auto fixed = [&](const char* flag, int64_t given, int64_t model, const char* what) -> Status {
    if (fl.app->get_option(flag)->count() == 0 || given == model) return Status::OK();
    return InvalidArgumentError(std::string(flag) + " " + std::to_string(given) + " contradicts the model in " +
                                fl.model_dir + ", which has " + what + " " + std::to_string(model) +
                                " (fixed at training time; leave " + flag + " out)");
  };
  CTRAIN_RETURN_IF_ERROR(fixed("--field-size", fl.data.field_size, to.model.field_size, "field_size"));
  CTRAIN_RETURN_IF_ERROR(fixed("--feature-size", fl.data.feature_size, to.model.feature_size, "feature_size"));
  fl.data.field_size = to.model.field_size;
  fl.data.feature_size = to.model.feature_size;
  if (!to.data.recorded()) return Status::OK();
  std::string used;
  auto from_checkpoint = [&](const char* flag) {
    if (fl.app->get_option(flag)->count() > 0) return false;
    used += std::string(used.empty() ? "" : " ") + flag + " ";
    return true;
  };
  if (from_checkpoint("--id-base")) used += std::to_string(fl.data.id_base = to.data.id_base);
  if (!to.data.feature_map.empty() && from_checkpoint("--feature-map")) used += fl.data.feature_map = to.data.feature_map;
  if (!used.empty()) std::fprintf(stderr, "ctrain: reading --input as the model's training data: %s\n", used.c_str());
  return Status::OK();
}

// Refuses eval/predict input encoded differently from the model's training
// data (train/data_source.h). `formats`: the inputs' formats as detected.
Status CheckInputEncoding(InferFlags& fl, const train::TrainOptions& to, const std::vector<train::InputFormat>& formats,
                          std::vector<std::string>* notes) {
  CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions ro, fl.data.ReaderOptions());
  return train::CheckInputsMatchModel(to.data, fl.model_dir, formats, ro, AbsolutePath(fl.data.feature_map), notes);
}

// `ctrain train`, alone or as one rank under mpirun: a failing rank ends the
// whole job (MPI_Abort) so no rank waits for it; a stop request (Cancelled)
// ends every rank at the same step.
Status RunTrain(TrainFlags& fl) {
  if (!fl.config.empty()) CTRAIN_RETURN_IF_ERROR(ApplyConfigFile(fl.app, fl.config));
#if CTRAIN_HAVE_MPI
  if (dist::LaunchedByMpirun()) {
    dist::DistOptions d;
    d.stall_warning_secs = fl.stall_warning_secs;
    d.stall_shutdown_secs = fl.stall_shutdown_secs;
    d.check_replicas_every = fl.check_replicas_every;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<dist::MpiExchange> mpi, dist::MpiExchange::Create(d));
    mpi->set_stop_flag(PendingInterruptFlag());
    Status s = RunTrainJob(fl, mpi.get());
    if (!s.ok() && s.code() != StatusCode::kCancelled && mpi->size() > 1) mpi->Abort(s.ToString(), 1);
    return s;
  }
#endif
  return RunTrainJob(fl, nullptr);
}

Status RunInfer(InferFlags& fl, bool predict) {
  const char* command = predict ? "predict" : "eval";
  CTRAIN_RETURN_IF_ERROR(fl.par.RejectTrainOnly(command));
  {  // globs and directories expand as for train and inspect (data/file_list.h)
    StatusOr<std::vector<std::string>> expanded = data::ExpandFileList(fl.input);
    if (!expanded.ok()) return expanded.status().WithContext("--input");
    fl.input = std::move(expanded).value();
  }
  CTRAIN_RETURN_IF_ERROR(CheckOutputWritable(predict ? "--output" : "--metrics-json",
                                             predict ? fl.output : fl.metrics_json));
  {  // The output must not overwrite an input or the model (eval/predict read the model dir).
    const std::string out_flag = predict ? "--output" : "--metrics-json";
    std::vector<io::FlagPath> in{{"--feature-map", fl.data.feature_map}};
    for (const std::string& p : fl.input) in.push_back({"--input", p});
    std::error_code ec;  // the model's files (other files in the model dir, e.g. eval.json, may be written)
    for (const auto& e : std::filesystem::directory_iterator(fl.model_dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name == "checkpoint" || name.starts_with("ckpt-")) in.push_back({"--model-dir", e.path().string()});
    }
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, {{out_flag, predict ? fl.output : fl.metrics_json}}));
  }
  std::vector<train::PredictColumn> columns;
  if (predict) {
    CTRAIN_ASSIGN_OR_RETURN(columns, train::ParsePredictColumns(fl.output_columns));
  }
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<train::Trainer> t, train::LoadTrainerFromCheckpoint(fl.model_dir, fl.par.p));
  const train::TrainOptions& to = t->options();
  // What the files are, before the checkpoint's defaults decide how to read them:
  // a Criteo TSV read "as libsvm" would only give a parse error.
  const bool format_given = fl.app->get_option("--format")->count() > 0;
  std::vector<train::InputFormat> detected;
  {
    CTRAIN_ASSIGN_OR_RETURN(data::ExampleReaderOptions sniff, fl.data.ReaderOptions());
    if (!format_given) sniff.format = data::RecordFormat::kAuto;
    for (const std::string& p : fl.input) {
      StatusOr<std::vector<train::InputFormat>> f = train::DetectInputFormats({p}, sniff);
      if (f.ok()) detected.insert(detected.end(), f->begin(), f->end());  // else: reading reports it
    }
  }
  CTRAIN_RETURN_IF_ERROR(ApplyCheckpointDataOptions(fl, to));
  std::vector<std::string> notes;
  CTRAIN_RETURN_IF_ERROR(CheckInputEncoding(fl, to, detected, &notes));
  train::Dataset ds;
  train::LoadStats stats;
  CTRAIN_RETURN_IF_ERROR(LoadData(fl.input, fl.data, to.model.feature_size, &ds, "input", &stats, /*model_fixed=*/true));
  // Again as actually read (covers stdin and FIFOs, which cannot be sniffed first).
  CTRAIN_RETURN_IF_ERROR(CheckInputEncoding(fl, to, train::InputFormatsRead(stats), &notes));
  for (const std::string& n : notes) std::fprintf(stderr, "ctrain: note: %s\n", n.c_str());
  {  // values the model cannot handle give saturated predictions, not errors: say so
    train::InputStats st(ds.field_size());
    st.Add(ds.ids(), ds.values(), ds.size(), ds.labels());
    for (const std::string& w : st.Warnings("input examples", &ds.source_paths(), &ds.source_reader(), st.examples()))
      std::fprintf(stderr, "ctrain: warning: %s\n", w.c_str());
  }
  for (const std::string& d : train::DescribeDropped(stats.dropped, predict))
    std::fprintf(stderr, "ctrain: %s: %s\n", command, d.c_str());
  if (predict) {
    CTRAIN_RETURN_IF_ERROR(train::CheckDroppedAlignable(stats.dropped));
    std::vector<float> probs;
    CTRAIN_RETURN_IF_ERROR(t->Predict(ds, &probs));
    io::WriteOptions wo;
    wo.atomic = true;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> f, io::OpenWritableFile(fl.output, wo));
    CTRAIN_RETURN_IF_ERROR(f->Append(train::FormatPredictions(columns, ds, probs, stats.dropped)));
    CTRAIN_RETURN_IF_ERROR(f->Close());
    int64_t dropped = 0;
    for (const auto& d : stats.dropped) dropped += static_cast<int64_t>(d.where.records);
    std::fprintf(stderr, "ctrain: wrote %lld lines to %s: %zu predictions, %lld nan for dropped records (model step %lld)\n",
                 static_cast<long long>(probs.size() + dropped), fl.output.c_str(), probs.size(),
                 static_cast<long long>(dropped), static_cast<long long>(t->global_step()));
    return Status::OK();
  }
  CTRAIN_ASSIGN_OR_RETURN(train::EvalResult r, t->Evaluate(ds));
  const std::string saturated = train::SaturationWarning(r.saturated_fraction, r.examples, t->global_step());
  if (!saturated.empty()) std::fprintf(stderr, "ctrain: warning: %s\n", saturated.c_str());
  std::printf("auc %.6f\nlogloss %.6f\nexamples %lld\n", r.auc, r.logloss, static_cast<long long>(r.examples));
  if (!fl.metrics_json.empty()) {
    nlohmann::json j{{"auc", Num(r.auc)},
                     {"logloss", Num(r.logloss)},
                     {"examples", r.examples},
                     {"label_mean", r.label_mean},
                     {"prediction_mean", r.prediction_mean},
                     {"saturated_fraction", r.saturated_fraction},
                     {"steps", t->global_step()}};
    CTRAIN_RETURN_IF_ERROR(WriteMetricsJson(fl.metrics_json, j));
  }
  return Status::OK();
}

Command AddInferCommand(CLI::App& app, bool predict) {
  auto fl = std::make_shared<InferFlags>();
  CLI::App* sub = predict ? app.add_subcommand("predict", "Write one click probability per input example")
                          : app.add_subcommand("eval", "AUC and logloss of a trained model on labelled data");
  sub->add_option("--model-dir,--model_dir", fl->model_dir, "Directory with the trained model's checkpoints")
      ->required();
  sub->add_option("--input,--eval,--test", fl->input, "Input files")->required();
  if (predict) {
    sub->add_option("--output,-o", fl->output, "Output file, one line per input record ('-' = stdout)")->required();
    sub->add_option("--output-columns,--output_columns", fl->output_columns,
                    "Tab-separated columns: prediction, label, index (e.g. index,label,prediction); a record "
                    "dropped by --skip-corrupt-records has nan in label and prediction")
        ->capture_default_str();
  } else {
    sub->add_option("--metrics-json,--metrics_json", fl->metrics_json, "Also write the metrics as JSON here");
  }
  // --field-size / --feature-size are accepted when they agree with the model.
  fl->data.Register(sub, /*with_feature_size=*/true);
  fl->par.RegisterInfer(sub);
  fl->app = sub;
  return {sub, [fl, predict]() {
            Status s = RunInfer(*fl, predict);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace

Command AddTrainCommand(CLI::App& app) {
  auto fl = std::make_shared<TrainFlags>();
  CLI::App* sub = app.add_subcommand("train", "Train DeepFM (without --train: on built-in synthetic data)");
  fl->app = sub;
  train::TrainOptions& o = fl->o;
  sub->add_option("--config", fl->config, "Config file (.toml or .json) with flag values; flags win");
  sub->add_option("--train", fl->train, "Training files (LibSVM, TFRecord, Criteo TSV/CSV; gzip ok)");
  sub->add_option("--valid", fl->valid, "Validation files (evaluated at each epoch end)");
  fl->data.Register(sub, /*with_feature_size=*/false);
  sub->add_option("--feature-size,--feature_size", fl->data.feature_size, "Rows of the embedding tables")
      ->capture_default_str();
  sub->add_option("--embedding-size,--embedding_size", fl->embedding_size, "K: embedding width")->capture_default_str();
  sub->add_option("--deep-layers,--deep_layers", fl->deep_layers, "Hidden layer widths")->capture_default_str();
  sub->add_option("--dropout", fl->dropout, "Drop probability of each hidden layer")->capture_default_str();
  sub->add_option("--batch-norm,--batch_norm", fl->batch_norm, "Batch normalisation after each hidden layer")
      ->capture_default_str();
  sub->add_option("--l2-reg,--l2_reg", fl->l2_reg, "L2 on the embedding rows of each batch")->capture_default_str();
  sub->add_option("--mixed-precision,--mixed_precision", fl->mixed_precision,
                  "GEMM precision: f32, or bf16 (mixed precision: bf16 operands, f32 accumulation and master "
                  "weights; needs AVX512_BF16), or auto (bf16 where supported; with --autotune: the faster)")
      ->capture_default_str();
  sub->add_option("--batch-size,--batch_size", o.batch_size, "Examples per step")->capture_default_str();
  sub->add_option("--epochs,--num-epochs,--num_epochs", o.epochs, "Passes over the training data")
      ->capture_default_str();
  sub->add_option("--max-steps,--max_steps", o.max_steps, "Stop at this global step (0 = no limit)")
      ->capture_default_str();
  sub->add_option("--learning-rate,--learning_rate", fl->learning_rate, "Step size")->capture_default_str();
  sub->add_option("--optimizer", fl->optimizer, "adam|adagrad|sgd|momentum|ftrl")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of shuffling and initialisation")->capture_default_str();
  sub->add_option("--dropout-seed,--dropout_seed", o.model.seed, "Seed of the dropout masks")->capture_default_str();
  sub->add_option("--shuffle", o.shuffle, "Shuffle every epoch (true/false)")->capture_default_str();
  sub->add_option("--model-dir,--model_dir", o.model_dir, "Checkpoint directory (resumes from it)");
  sub->add_option("--save-checkpoints-steps,--save_checkpoints_steps", o.save_checkpoints_steps,
                  "Also checkpoint every N steps (0 = only at the end)")
      ->capture_default_str();
  sub->add_option("--keep-checkpoints,--keep_checkpoints", o.keep_checkpoints, "Checkpoints kept")
      ->capture_default_str();
  sub->add_option("--eval-every-steps,--eval_every_steps", o.eval_every_steps,
                  "Also evaluate on --valid every N steps (0 = epoch ends only)")
      ->capture_default_str();
  fl->monitor.Register(sub);
  sub->add_option("--metrics-json,--metrics_json", fl->metrics_json,
                  "Write final auc, logloss, examples_per_sec, examples, steps, epochs as JSON");
  sub->add_option("--progress", fl->progress, "auto|bar|log|none")->capture_default_str();
  fl->RegisterPipeline(sub);
  fl->data_service.Register(sub, /*required=*/false);
  fl->par.Register(sub);
  sub->add_option("--lr-scaling,--lr_scaling", fl->lr_scaling,
                  "Under mpirun: scale --learning-rate with the N ranks: none, linear (x N) or sqrt (x sqrt N)")
      ->capture_default_str();
  sub->add_option("--stall-warning-secs,--stall_warning_secs", fl->stall_warning_secs,
                  "Under mpirun: name the ranks a collective has waited for this long (0 = never)")
      ->capture_default_str();
  sub->add_option("--stall-shutdown-secs,--stall_shutdown_secs", fl->stall_shutdown_secs,
                  "Under mpirun: abort the job when a collective waited this long (0 = never)")
      ->capture_default_str();
  sub->add_option("--lr-warmup-steps,--lr_warmup_steps", fl->lr_warmup_steps,
                  "Under mpirun: ramp the learning rate from lr / N to lr over this many steps (Horovod's warmup; "
                  "0 = none)")
      ->capture_default_str();
  sub->add_option("--check-replicas-every,--check_replicas_every", fl->check_replicas_every,
                  "Under mpirun: compare parameter hashes across ranks every K steps (0 = never; debug)")
      ->capture_default_str();
  return {sub, [fl]() {
            Status s = RunTrain(*fl);
            const int sig = PendingInterrupt();  // deferred while training (checkpoint written)
            if (sig != 0) {
              if (!s.ok()) ReportError(s);
              ExitForSignal(sig);
            }
            return s.ok() ? 0 : ReportError(s);
          }};
}

Command AddEvalCommand(CLI::App& app) { return AddInferCommand(app, false); }
Command AddPredictCommand(CLI::App& app) { return AddInferCommand(app, true); }

}  // namespace ctrain::cli
