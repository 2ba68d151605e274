// `ctrain train`, `ctrain eval`, `ctrain predict`: their flags and config files
// (docs/training.md), parsed onto the jobs' options (job/train_job.h,
// job/infer_job.h), which do the work.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ctrain/base/signals.h"
#include "ctrain/cli/arg_parsing.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/cli/service_flags.h"
#include "ctrain/io/file.h"
#include "ctrain/job/infer_job.h"
#include "ctrain/job/train_job.h"
#include "ctrain/train/trainer.h"

namespace ctrain::cli {
namespace {

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

struct TrainFlags {
  job::TrainJobOptions job;  // the flags below are registered onto its fields
  DataFlags data;
  ParallelFlags par;
  DataServiceClientFlags data_service;  // --data-service: batches from remote workers (docs/data-service.md)
  CLI::App* app = nullptr;

  // The job's options as parsed (the flag groups above copied in, and which
  // options were given).
  job::TrainJobOptions& Options() {
    job.data = data;
    job.parallel = par.p;
    job.autotune = par.autotune;
    job.autotune_steps = par.autotune_steps;
    job.data_service = data_service.Settings();
    job.given = GivenOptions(app);
    return job;
  }
  void RegisterPipeline(CLI::App* sub) {
    data::PipelineOptions& pipe = job.pipeline;
    auto add = [](CLI::Option* o) { return o->capture_default_str(); };
    sub->add_option("--input-mode,--input_mode", job.input_mode,
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
    add(sub->add_option("--num-shards,--num_shards", pipe.num_shards,
                                         "Shards of the input (default: OMPI_COMM_WORLD_SIZE or 1)"));
    add(sub->add_option("--shard-index,--shard_index", pipe.shard_index,
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

struct InferFlags {
  job::InferJobOptions job;  // input, model_dir, output, metrics_json, output_columns
  DataFlags data;
  ParallelFlags par;
  CLI::App* app = nullptr;
};

// `ctrain train`: the config file's values for flags not given, then the job;
// the job's error is printed by the job (*reported), before it leaves mpirun.
Status RunTrain(TrainFlags& fl, bool* reported) {
  if (!fl.job.config.empty()) CTRAIN_RETURN_IF_ERROR(ApplyConfigFile(fl.app, fl.job.config));
  return job::RunTrain(fl.Options(), nullptr, [reported](const Status& s) {
    if (!s.ok()) ReportError(s);
    *reported = true;
  });
}

// `ctrain eval` / `ctrain predict`.
Status RunInfer(InferFlags& fl, bool predict) {
  CTRAIN_RETURN_IF_ERROR(fl.par.RejectTrainOnly(predict ? "predict" : "eval"));
  job::InferJobOptions& o = fl.job;
  o.data = fl.data;
  o.parallel = fl.par.p;
  o.given = GivenOptions(fl.app);
  return predict ? job::RunPredict(o) : job::RunEval(o);
}

Command AddInferCommand(CLI::App& app, bool predict) {
  auto fl = std::make_shared<InferFlags>();
  CLI::App* sub = predict ? app.add_subcommand("predict", "Write one click probability per input example")
                          : app.add_subcommand("eval", "AUC and logloss of a trained model on labelled data");
  sub->add_option("--model-dir,--model_dir", fl->job.model_dir, "Directory with the trained model's checkpoints")
      ->required();
  sub->add_option("--input,--eval,--test", fl->job.input, "Input files")->required();
  if (predict) {
    sub->add_option("--output,-o", fl->job.output, "Output file, one line per input record ('-' = stdout)")->required();
    sub->add_option("--output-columns,--output_columns", fl->job.output_columns,
                    "Tab-separated columns: prediction, label, index or id (the record index), e.g. "
                    "id,label,prediction; a record dropped by --skip-corrupt-records has nan in label and prediction")
        ->capture_default_str();
    sub->add_flag("--no-label,--no_label", fl->job.no_label,
                  "The input has no label column (LibSVM, Criteo text); without it a file whose first record has "
                  "no label (an id:value first token, 39 Criteo cells) is read as unlabelled");
  } else {
    sub->add_option("--metrics-json,--metrics_json", fl->job.metrics_json, "Also write the metrics as JSON here");
    sub->add_option("--negative-downsampling,--negative_downsampling", fl->job.negative_downsampling,
                    "The input kept its negatives at this rate (each counts 1 / rate in the metrics)")
        ->capture_default_str();
    sub->add_option("--gauc-field,--gauc_field", fl->job.gauc_field,
                    "GAUC: group examples by their id in this field (0-based, e.g. the user id; -1 = no GAUC)")
        ->capture_default_str();
    sub->add_option("--weights", fl->job.weights,
                    "Sample weights: a file with one weight per input example, one per line (XGBoost's .weight)");
  }
  // --field-size / --feature-size are accepted when they agree with the model.
  fl->data.Register(sub, /*with_feature_size=*/true);
  sub->add_option("--feature-spec,--feature_spec", fl->data.feature_spec,
                  "Feature spec (JSON/TOML); default: the one the model was trained with (the checkpoint keeps it)");
  fl->par.RegisterInfer(sub);
  fl->app = sub;
  return {sub, [fl, predict]() {
            Status s = RunInfer(*fl, predict);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace

namespace {
// Registers `ctrain train` and its flags onto `app`; the flags land in the returned object.
std::shared_ptr<TrainFlags> RegisterTrainCommand(CLI::App& app) {
  auto fl = std::make_shared<TrainFlags>();
  CLI::App* sub = app.add_subcommand("train", "Train DeepFM (without --train: on built-in synthetic data)");
  fl->app = sub;
  train::TrainOptions& o = fl->job.train_options;
  sub->add_option("--config", fl->job.config, "Config file (.toml or .json) with flag values; flags win");
  sub->add_option("--train", fl->job.train, "Training files (LibSVM, TFRecord, Criteo TSV/CSV; gzip ok)");
  sub->add_option("--valid", fl->job.valid, "Validation files (evaluated at each epoch end)");
  fl->data.Register(sub, /*with_feature_size=*/false);
  sub->add_option("--feature-size,--feature_size", fl->data.feature_size, "Rows of the embedding tables")
      ->capture_default_str();
  sub->add_option("--feature-spec,--feature_spec", fl->data.feature_spec,
                  "Feature spec (JSON/TOML, docs/feature-spec.md): tf.Example keys, a LibSVM field map or libFFM "
                  "fields -> fields, multi-hot too; sets the field and feature sizes (inspect --suggest-spec writes one)");
  sub->add_option("--embedding-size,--embedding_size", fl->job.embedding_size, "K: embedding width")->capture_default_str();
  sub->add_option("--deep-layers,--deep_layers", fl->job.deep_layers, "Hidden layer widths")->capture_default_str();
  sub->add_option("--dropout", fl->job.dropout, "Drop probability of each hidden layer")->capture_default_str();
  sub->add_option("--batch-norm,--batch_norm", fl->job.batch_norm, "Batch normalisation after each hidden layer")
      ->capture_default_str();
  sub->add_option("--l2-reg,--l2_reg", fl->job.l2_reg, "L2 on the embedding rows of each batch")->capture_default_str();
  sub->add_option("--mixed-precision,--mixed_precision", fl->job.mixed_precision,
                  "GEMM precision: f32, or bf16 (mixed precision: bf16 operands, f32 accumulation and master "
                  "weights; needs AVX512_BF16), or auto (bf16 where supported; with --autotune: the faster)")
      ->capture_default_str();
  sub->add_option("--batch-size,--batch_size", o.batch_size, "Examples per step")->capture_default_str();
  sub->add_option("--epochs,--num-epochs,--num_epochs", o.epochs, "Passes over the training data")
      ->capture_default_str();
  sub->add_option("--max-steps,--max_steps", o.max_steps, "Stop at this global step (0 = no limit)")
      ->capture_default_str();
  sub->add_option("--learning-rate,--learning_rate", fl->job.learning_rate, "Step size")->capture_default_str();
  sub->add_option("--optimizer", fl->job.optimizer, "adam|adagrad|sgd|momentum|ftrl")->capture_default_str();
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
  sub->add_option("--monitor-dir,--monitor_dir", fl->job.monitor_dir,
                  "Sample this process (CPU total and per core, RSS, GPU via NVML) and the training steps into "
                  "TensorBoard event files and metrics.jsonl here (docs/launch.md#monitoring)");
  sub->add_option("--monitor-interval-ms,--monitor_interval_ms", fl->job.monitor_interval_ms,
                  "Sampling interval of --monitor-dir")
      ->capture_default_str();
  sub->add_option("--metrics-json,--metrics_json", fl->job.metrics_json,
                  "Write final auc, logloss, examples_per_sec, examples, steps, epochs as JSON");
  sub->add_option("--progress", fl->job.progress, "auto|bar|log|none")->capture_default_str();
  fl->RegisterPipeline(sub);
  fl->data_service.Register(sub, /*required=*/false);
  sub->add_option("--ps", fl->job.ps.addresses,
                  "Train as one worker of a parameter-server job: the servers' HOST:PORT,... in shard order "
                  "(docs/parameter-servers.md)")
      ->delimiter(',');
  sub->add_option("--worker-index,--worker_index", fl->job.ps.worker_index, "--ps: this worker (0 = the chief)")
      ->capture_default_str();
  sub->add_option("--num-workers,--num_workers", fl->job.ps.num_workers, "--ps: workers in the job")
      ->capture_default_str();
  sub->add_flag("--sync-replicas,--sync_replicas", fl->job.ps.sync_replicas,
                "--ps: synchronous rounds over all workers (TF's SyncReplicasOptimizer); default asynchronous");
  sub->add_option("--max-staleness,--max_staleness", fl->job.ps.max_staleness,
                  "--ps, async: servers drop gradients computed on parameters more than N updates old (0 = keep all)")
      ->capture_default_str();
  sub->add_option("--ps-wait-seconds,--ps_wait_seconds", fl->job.ps.wait_seconds,
                  "--ps: how long an unavailable parameter server is waited for")
      ->capture_default_str();
  fl->par.Register(sub);
  sub->add_option("--lr-scaling,--lr_scaling", fl->job.lr_scaling,
                  "Under mpirun: scale --learning-rate with the N ranks: none, linear (x N) or sqrt (x sqrt N)")
      ->capture_default_str();
  sub->add_option("--stall-warning-secs,--stall_warning_secs", fl->job.stall_warning_secs,
                  "Under mpirun: name the ranks a collective has waited for this long (0 = never)")
      ->capture_default_str();
  sub->add_option("--stall-shutdown-secs,--stall_shutdown_secs", fl->job.stall_shutdown_secs,
                  "Under mpirun: abort the job when a collective waited this long (0 = never)")
      ->capture_default_str();
  sub->add_option("--lr-warmup-steps,--lr_warmup_steps", fl->job.lr_warmup_steps,
                  "Ramp the learning rate linearly to lr over this many steps, from 0 (under mpirun from lr / N, "
                  "Horovod's warmup; 0 = none)")
      ->capture_default_str();
  sub->add_option("--lr-decay,--lr_decay", fl->job.lr_decay,
                  "Learning-rate decay after the warm-up: none, exponential or cosine")
      ->capture_default_str();
  sub->add_option("--lr-decay-steps,--lr_decay_steps", o.lr_decay_steps,
                  "exponential: steps per factor --lr-decay-rate; cosine: steps to reach --lr-decay-alpha * lr")
      ->capture_default_str();
  sub->add_option("--lr-decay-rate,--lr_decay_rate", o.lr_decay_rate, "exponential: factor per --lr-decay-steps")
      ->capture_default_str();
  sub->add_flag("--lr-decay-staircase,--lr_decay_staircase", o.lr_decay_staircase,
                "exponential: decay in whole periods of --lr-decay-steps");
  sub->add_option("--lr-decay-alpha,--lr_decay_alpha", o.lr_decay_alpha, "cosine: the final rate as a fraction of lr")
      ->capture_default_str();
  sub->add_option("--warm-start-from,--warm_start_from", o.warm_start_from,
                  "Start a new run from the parameters of this model dir's latest checkpoint (incremental "
                  "training on new data; may be --model-dir itself)");
  sub->add_flag("--warm-start-optimizer,--warm_start_optimizer", o.warm_start_optimizer,
                "With --warm-start-from: also take the optimizer slots (the same --optimizer)");
  sub->add_option("--early-stopping-metric,--early_stopping_metric", o.early_stopping_metric,
                  "Stop when this validation metric stops improving: auc, gauc, pr_auc, logloss, normalized_entropy");
  sub->add_option("--early-stopping-patience,--early_stopping_patience", o.early_stopping_patience,
                  "Evaluations without improvement before stopping")
      ->capture_default_str();
  sub->add_option("--early-stopping-min-delta,--early_stopping_min_delta", o.early_stopping_min_delta,
                  "The least change that counts as an improvement")
      ->capture_default_str();
  sub->add_flag("--keep-best,--keep_best", o.keep_best,
                "Also save the checkpoint with the best validation metric to --model-dir/best");
  sub->add_option("--gauc-field,--gauc_field", o.group_field,
                  "GAUC: group validation examples by their id in this field (0-based, e.g. the user id; -1 = none)")
      ->capture_default_str();
  sub->add_option("--negative-downsampling,--negative_downsampling", o.negative_downsampling_rate,
                  "The training (and --valid) data kept negatives at this rate: predictions and validation metrics "
                  "are corrected; recorded in checkpoints")
      ->capture_default_str();
  sub->add_option("--check-replicas-every,--check_replicas_every", fl->job.check_replicas_every,
                  "Under mpirun: compare parameter hashes across ranks every K steps (0 = never; debug)")
      ->capture_default_str();
  return fl;
}
}  // namespace

Command AddTrainCommand(CLI::App& app) {
  std::shared_ptr<TrainFlags> fl = RegisterTrainCommand(app);
  return {fl->app, [fl]() {
            bool reported = false;
            Status s = RunTrain(*fl, &reported);
            const int sig = PendingInterrupt();  // deferred while training (checkpoint written)
            if (sig != 0) {
              if (!s.ok() && !reported) ReportError(s);
              ExitForSignal(sig);
            }
            if (s.ok()) return 0;
            return reported ? 1 : ReportError(s);
          }};
}

StatusOr<job::TrainJobOptions> ParseTrainJobOptions(const std::vector<std::string>& args) {
  CLI::App app{"ctrain"};
  std::shared_ptr<TrainFlags> fl = RegisterTrainCommand(app);
  DescribeBoolSwitches(app);
  std::vector<std::string> a = {"train"};
  a.insert(a.end(), args.begin(), args.end());
  if (const std::string usage = CheckCommandAndFlags(app, a); !usage.empty()) return InvalidArgumentError(usage);
  a = NormalizeBoolSwitches(app, std::move(a));
  std::vector<std::string> reversed(a.rbegin(), a.rend());  // CLI11 takes them last-first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  }
  if (!fl->job.config.empty()) CTRAIN_RETURN_IF_ERROR(ApplyConfigFile(fl->app, fl->job.config));
  return fl->Options();
}

std::vector<std::string> TrainOptionNames() {
  CLI::App app{"ctrain"};
  std::shared_ptr<TrainFlags> fl = RegisterTrainCommand(app);
  std::vector<std::string> names;
  for (const CLI::Option* o : fl->app->get_options()) {
    if (o->get_lnames().empty() || o->get_lnames().front() == "help") continue;
    std::string name = o->get_lnames().front();
    for (char& c : name) c = c == '-' ? '_' : c;
    names.push_back(std::move(name));
  }
  return names;
}

Command AddEvalCommand(CLI::App& app) { return AddInferCommand(app, false); }
Command AddPredictCommand(CLI::App& app) { return AddInferCommand(app, true); }

}  // namespace ctrain::cli
