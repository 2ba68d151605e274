// The option matrix's probes (tests/job/option_matrix_acceptance_test.cc, in
// process; option_matrix_mpirun_acceptance_test.cc, under mpirun): for every
// option of the schema, the value a run sets, what it must show, and what it
// needs alongside.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/job/option_schema.h"

namespace ctrain::job::matrix {

namespace fs = std::filesystem;
using json = nlohmann::json;

enum class Expect {
  kChanges,  // a figure of the run (steps, loss, validation metrics) differs from the run without it
  kSame,     // the figures are bit-equal (the option must not change results), and the run succeeds
  kRuns,     // the run succeeds (the effect needs more than one process to see: covered where named)
  kOutput,   // `check(dir)` holds after the run and not after the run without it
  kFails,    // the run fails with a message containing `text` (the option was read and applied)
  kBase,     // set by every run of the matrix (the data, its sizes, the mode's own switches)
};

struct Probe {
  json value;
  Expect expect;
  json extra = json::object();  // options both runs set (what the option needs)
  std::function<bool(const std::string& dir)> check = {};
  std::string text = {};
  json with = json::object();  // options only the probed run sets (what must come with it)
  // Under mpirun (option_matrix_mpirun_acceptance_test.cc), where it differs: what to expect, and instead of `extra`.
  std::optional<Expect> mpirun_expect = std::nullopt;
  std::optional<json> mpirun_extra = std::nullopt;
};

inline bool Exists(const std::string& p) { return fs::exists(p); }
// Checkpoints under `dir` (parameter servers: in their shard directories below it; best/ not counted).
inline int CountCheckpoints(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory() && it->path().filename() == "best") it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".bin") ++n;
  }
  return n;
}

// An incremental keyed-table checkpoint (train/keyed_checkpoint.h) under `dir`: a ckpt-*.bin whose meta names its base.
inline bool HasIncrementalCheckpoint(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("ckpt-", 0) != 0 || name.size() < 4 || name.substr(name.size() - 4) != ".bin") continue;
    std::ifstream in(it->path(), std::ios::binary);
    const std::string head((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (head.find("\"keyed_delta\"") != std::string::npos) return true;  // the meta JSON sits in the file as text
  }
  return false;
}

// A run's options `o` (the mode's base options, then the probe's `extra`): when the probe picks another
// --model, the base options that model does not read (the base sets the MLP's: deep_layers, dropout, ...)
// are left out, as a user of that model would (the model refuses them by name otherwise: CheckOptionModels).
inline void KeepOptionsTheModelReads(json* o, const json& extra) {
  if (!extra.contains("model")) return;
  const std::string kind = extra["model"].get<std::string>();
  for (auto it = o->begin(); it != o->end();) {
    const OptionSpec* s = FindTrainOption(it.key());
    bool reads = s == nullptr || s->models.empty() || extra.contains(it.key());
    for (const std::string& k : s != nullptr ? s->models : std::vector<std::string>{}) reads = reads || k == kind;
    it = reads ? std::next(it) : o->erase(it);
  }
}

// The probes; `dir` placeholders "@" are replaced by the run's directory.
inline const std::map<std::string, Probe>& Probes() {
  static const auto* p = new std::map<std::string, Probe>{
      {"config", {"@/lr.json", Expect::kChanges}},
      {"train", {nullptr, Expect::kBase}},
      {"valid", {nullptr, Expect::kBase}},
      {"format", {"libsvm", Expect::kSame}},
      {"compression", {"none", Expect::kSame}},
      {"field_size", {nullptr, Expect::kBase}},
      {"id_base", {1, Expect::kChanges}},
      {"feature_map", {"@/vocab.txt", Expect::kFails, {}, {}, "vocab.txt"}},
      {"skip_corrupt_records", {true, Expect::kSame}},
      {"max_skipped_records", {5, Expect::kSame}},
      {"pipe_timeout_ms", {1000, Expect::kSame}},
      {"max_line_bytes", {8, Expect::kFails, {}, {}, "max-line-bytes"}},
      // LibSVM data here: the readers of every mode refuse it by name (its effect on Criteo: tests/cli, tests/io).
      {"criteo_pad_missing_trailing",
       {true, Expect::kFails, {}, {}, "--criteo-pad-missing-trailing reads Criteo TSV/CSV rows whose trailing empty "
                                      "cells were stripped, but this input is libsvm"}},
      {"feature_size", {128, Expect::kChanges}},
      // The data's ids reach 42: with the table at 30 the probed run reads the ids at or above 30 as their field's
      // out-of-vocabulary row (without --oov bucket it would stop at the first of them).
      {"oov", {"bucket", Expect::kChanges, json::object(), {}, {}, {{"feature_size", 30}}}},
      {"feature_spec", {"@/spec.json", Expect::kFails, {}, {}, "spec.json"}},
      {"model", {"wide_deep", Expect::kChanges}},  // reads every model option the matrix sets (deep_layers: fm does not)
      {"embedding_size", {8, Expect::kChanges}},
      {"deep_layers", {json::array({16, 8}), Expect::kChanges}},
      // The zoo's hyper-parameters, each with a model that reads it (another model refuses it by name:
      // tests/job/train_job_test.cc).
      {"cross_layers", {1, Expect::kChanges, {{"model", "dcn"}}}},
      {"low_rank", {2, Expect::kChanges, {{"model", "dcn_v2"}}}},
      {"num_experts", {2, Expect::kChanges, {{"model", "dcn_v2"}, {"low_rank", 2}}}},
      {"model_structure", {"stacked", Expect::kChanges, {{"model", "dcn"}}}},
      {"cin_layer_units", {json::array({4, 4}), Expect::kChanges, {{"model", "xdeepfm"}}}},
      {"num_dense_fields", {2, Expect::kChanges, {{"model", "dlrm"}}}},
      {"bottom_mlp", {json::array({8}), Expect::kChanges, {{"model", "dlrm"}, {"num_dense_fields", 2}}}},
      {"top_mlp", {json::array({8}), Expect::kChanges, {{"model", "dlrm"}}}},
      {"embedding_initializer", {"normal:0.01", Expect::kChanges}},
      // The matrix's data has no numeric fields (field 0 carries id 1 or 2): a bad spelling shows it is read
      // in every mode; tests/model/embedding_initializer_test.cc and tests/job/model_kinds_test.cc, its rows.
      {"numeric_embedding_initializer",
       {"normal:0", Expect::kFails, {}, {}, "numeric_embedding_initializer 'normal:0': the scale must be finite and > 0",
        {{"num_dense_fields", 1}}}},
      {"dropout", {0.4, Expect::kChanges}},
      {"batch_norm", {true, Expect::kChanges}},
      {"l2_reg", {0.01, Expect::kChanges}},
      {"mixed_precision", {"f32", Expect::kSame}},
      {"batch_size", {32, Expect::kChanges}},
      {"epochs", {3, Expect::kChanges}},
      {"max_steps", {5, Expect::kChanges}},
      {"learning_rate", {0.05, Expect::kChanges}},
      {"optimizer", {"adagrad", Expect::kChanges}},
      {"seed", {7, Expect::kChanges}},
      {"dropout_seed", {7, Expect::kChanges}},
      {"shuffle", {false, Expect::kChanges}},
      {"model_dir", {"@/model", Expect::kOutput, {}, [](const std::string& d) { return CountCheckpoints(d + "/model") > 0; }}},
      {"save_checkpoints_steps",
       {3, Expect::kOutput, {{"model_dir", "@/model"}}, [](const std::string& d) { return CountCheckpoints(d + "/model") > 1; }}},
      {"keep_checkpoints",
       {1, Expect::kOutput, {{"model_dir", "@/model"}, {"save_checkpoints_steps", 3}},
        [](const std::string& d) { return CountCheckpoints(d + "/model") == 1; }}},
      // Under mpirun early stopping is refused (rank 0 alone validates): the extra evaluations leave no final figure.
      {"eval_every_steps",
       {2, Expect::kChanges, {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0}},
        {}, {}, json::object(), Expect::kRuns, json::object()}},
      {"monitor_dir", {"@/mon", Expect::kOutput, {}, [](const std::string& d) {  // under mpirun: mon/rank<R>/
                         return Exists(d + "/mon/metrics.jsonl") || Exists(d + "/mon/rank0/metrics.jsonl");
                       }}},
      {"monitor_interval_ms", {50, Expect::kSame, {{"monitor_dir", "@/mon"}}}},
      {"metrics_json", {"@/m.json", Expect::kOutput, {}, [](const std::string& d) { return Exists(d + "/m.json"); }}},
      {"progress", {"log", Expect::kSame}},
      {"input_mode", {nullptr, Expect::kBase}},
      {"num_parallel_reads", {2, Expect::kSame}},
      {"num_parallel_calls", {2, Expect::kSame}},
      {"shuffle_buffer_size", {10, Expect::kChanges}},
      {"reshuffle_each_iteration", {false, Expect::kChanges}},
      {"prefetch_buffer_size", {0, Expect::kSame}},
      {"cache", {"memory", Expect::kSame}},
      {"cache_max_bytes", {1 << 20, Expect::kSame, {{"cache", "memory"}}}},
      {"num_shards", {2, Expect::kChanges}},
      {"shard_index", {1, Expect::kChanges, {{"num_shards", 2}}}},
      {"drop_remainder", {true, Expect::kChanges}},
      {"data_service", {nullptr, Expect::kBase}},
      {"processing_mode", {"parallel_epochs", Expect::kRuns}},  // one worker: the same rows (dataservice tests: more)
      {"job_name", {"named-job", Expect::kRuns}},
      {"num_splits", {2, Expect::kChanges}},
      {"consumer_index", {nullptr, Expect::kBase}},  // one consumer here; tests/dataservice run several
      {"data_service_compression", {"zstd", Expect::kSame}},
      {"data_service_buffer_bytes", {1 << 20, Expect::kSame}},
      {"data_service_max_open_splits", {1, Expect::kSame}},
      {"data_service_wait_seconds", {-1, Expect::kFails, {}, {}, "--data-service-wait-seconds"}},
      {"token_file", {"@/missing-token", Expect::kFails, {}, {}, "missing-token"}},
      {"tls_cert", {"@/missing.pem", Expect::kFails, {}, {}, "--tls-cert"}},  // without --tls-ca: refused by name
      {"tls_key", {"@/missing.key", Expect::kFails, {}, {}, "--tls-key"}},
      {"training_job_name", {"matrix-job", Expect::kRuns}},  // servers without a name accept it; tests/dataservice: refusals
      {"tls_ca", {"@/missing-ca.pem", Expect::kFails, {}, {}, "missing-ca.pem"}},
      {"ps", {nullptr, Expect::kBase}},
      {"worker_index", {nullptr, Expect::kBase}},  // one worker here; tests/ps run several
      {"num_workers", {nullptr, Expect::kBase}},
      {"sync_replicas", {nullptr, Expect::kBase}},
      {"max_staleness", {1, Expect::kSame}},
      {"ps_wait_seconds", {5.0, Expect::kSame}},
      // Read and checked (tests/ps/chunking_test.cc: chunks give the same parameters).
      {"ps_max_message_bytes", {1000, Expect::kFails, {}, {}, "--ps-max-message-bytes 1000 is not in [65536"}},
      // One worker: the dense parameters on the servers train the same model as kept by the worker (auto).
      {"ps_dense", {"servers", Expect::kSame}},
      // Read and checked here (one worker has nothing to average); tests/ps/ps_training_test.cc runs two.
      {"ps_dense_sync_steps", {0, Expect::kFails, {}, {}, "--ps-dense-sync-steps 0 must be >= 1"}},
      {"ps_export_dir", {"@/export", Expect::kOutput, {}, [](const std::string& d) { return CountCheckpoints(d + "/export") > 0; }}},
      {"intra_op_parallelism_threads", {2, Expect::kRuns}},  // GEMM sums may reassociate
      {"inter_op_parallelism_threads", {1, Expect::kSame}},
      {"towers", {nullptr, Expect::kBase}},
      {"hogwild", {nullptr, Expect::kBase}},
      {"affinity", {true, Expect::kSame}},
      {"autotune", {true, Expect::kRuns, {{"autotune_steps", 1}}}},
      {"deterministic", {true, Expect::kSame}},
      {"autotune_steps", {2, Expect::kRuns, {{"autotune", true}}}},
      // mpirun only: refused in every in-process mode; option_matrix_mpirun_acceptance_test.cc runs them.
      {"lr_scaling", {"sqrt", Expect::kChanges}},
      {"stall_warning_secs", {5.0, Expect::kSame}},
      {"stall_shutdown_secs", {30.0, Expect::kSame}},
      {"check_replicas_every", {2, Expect::kSame}},
      {"lr_warmup_steps", {5, Expect::kChanges}},
      {"lr_decay", {"exponential", Expect::kChanges, {{"lr_decay_steps", 2}}}},
      {"lr_decay_steps", {5, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 2}}}},
      {"lr_decay_rate", {0.5, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 2}}}},
      {"lr_decay_staircase", {true, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 3}}}},
      {"lr_decay_alpha", {0.5, Expect::kChanges, {{"lr_decay", "cosine"}, {"lr_decay_steps", 10}}}},
      // Reduce on plateau: evaluations every 2 steps; min_delta 1 makes every evaluation after the first a plateau.
      // gauc grouped by field 0 (which decides the label: one class per group) is NaN: every evaluation is a
      // plateau, where the default (logloss) improves.
      {"lr_plateau_metric",
       {"gauc", Expect::kChanges,
        {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_patience", 0}, {"lr_plateau_min_delta", 0.0}, {"gauc_field", 0}}}},
      {"lr_plateau_factor",
       {0.5, Expect::kChanges, {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_patience", 0}, {"lr_plateau_min_delta", 1.0}}}},
      {"lr_plateau_patience",
       {0, Expect::kChanges, {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_min_delta", 1.0}}}},
      {"lr_plateau_cooldown",
       {3, Expect::kChanges, {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_patience", 0}, {"lr_plateau_min_delta", 1.0}}}},
      {"lr_plateau_min_lr",
       {0.005, Expect::kChanges, {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_patience", 0}, {"lr_plateau_min_delta", 1.0}}}},
      {"lr_plateau_min_delta",
       {1.0, Expect::kChanges, {{"lr_decay", "plateau"}, {"eval_every_steps", 2}, {"lr_plateau_patience", 0}}}},
      {"warm_start_from", {"@/../warm", Expect::kChanges}},
      {"warm_start_optimizer", {true, Expect::kChanges, {{"warm_start_from", "@/../warm"}}}},
      // A first run in its model dir trains as without it (the rerun it forces: tests/cli/daily_loop_cli_test.cc).
      {"force", {true, Expect::kSame, {{"model_dir", "@/model"}}}},
      {"early_stopping_metric",
       {"logloss", Expect::kChanges, {{"eval_every_steps", 2}}, {}, {},
        {{"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0}}}},
      {"early_stopping_patience",
       {3, Expect::kChanges,
        {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0},
         {"eval_every_steps", 2}}}},
      {"early_stopping_min_delta",
       {1.0, Expect::kChanges, {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"eval_every_steps", 2}}}},
      {"keep_best", {true, Expect::kOutput, {{"model_dir", "@/model"}}, [](const std::string& d) { return CountCheckpoints(d + "/model/best") > 0; }}},
      {"gauc_field", {1, Expect::kChanges}},
      {"negative_downsampling", {0.5, Expect::kChanges}},
      // Keyed tables (tests/train/keyed_table_test.cc, tests/train/key_index_test.cc for their exact counts).
      {"embedding_table", {"keyed", Expect::kChanges}},  // glorot's n: the live-row bound, not feature_size
      {"max_rows", {20, Expect::kChanges, {{"embedding_table", "keyed"}}}},  // 40 rows between evictions: refusals
      {"min_count", {5, Expect::kChanges, {{"embedding_table", "keyed"}}}},
      // No collision among 2^24 counters: the Bloom filter admits exactly when the exact counter does.
      {"admission", {"bloom", Expect::kSame, {{"embedding_table", "keyed"}, {"min_count", 3}}}},
      // 16 counters for the data's 32 keys: collisions count sightings early, keys are admitted sooner.
      {"bloom_counters", {16, Expect::kChanges, {{"embedding_table", "keyed"}, {"min_count", 3}, {"admission", "bloom"}}}},
      // Eviction runs at the scheduled checkpoints (every 2 steps here), but each step of this data sees all of its
      // 32 keys, so none goes stale: the run must succeed; tests/train/keyed_table_test.cc counts the evictions.
      {"steps_to_live", {1, Expect::kRuns, {{"embedding_table", "keyed"}, {"save_checkpoints_steps", 2}}}},
      {"l2_weight_threshold", {10.0, Expect::kChanges, {{"embedding_table", "keyed"}, {"save_checkpoints_steps", 2}}}},
      // An incremental checkpoint is written (tests/train/keyed_table_test.cc: it restores bit for bit).
      {"incremental_checkpoints",
       {3, Expect::kOutput, {{"embedding_table", "keyed"}, {"save_checkpoints_steps", 2}, {"model_dir", "@/model"}},
        HasIncrementalCheckpoint}},
  };
  return *p;
}

// LibSVM rows whose label follows field 0's id (1 or 2); ids start at 1 (so
// that --id-base 1 is valid and moves every id).
inline void WriteRows(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream f(path);
  for (int r = 0; r < rows; ++r) {
    const int click = rng() % 4 == 0 ? 1 : 0;
    f << click << " " << (1 + click) << ":1";
    for (int j = 1; j < 4; ++j) f << " " << (3 + j * 10 + rng() % 10) << ":" << (1 + rng() % 3) * 0.5;
    f << "\n";
  }
}

inline std::string Replace(std::string s, const std::string& dir) {
  for (size_t at = s.find('@'); at != std::string::npos; at = s.find('@', at + dir.size())) s.replace(at, 1, dir);
  return s;
}
inline json Placed(const json& v, const std::string& dir) {
  if (v.is_string()) return Replace(v.get<std::string>(), dir);
  if (v.is_object()) {
    json o = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) o[it.key()] = Placed(it.value(), dir);
    return o;
  }
  return v;
}

// The modes of this test's runs in `mode` (a run with towers reads in memory, ...).
inline ModeSet RunModesOf(TrainMode mode) {
  switch (mode) {
    case TrainMode::kTowers:
    case TrainMode::kHogwild:
    case TrainMode::kPsAsync:
    case TrainMode::kPsSync: return TrainMode::kLocalMemory | mode;
    case TrainMode::kDataService: return TrainMode::kLocalStream | mode;
    default: return static_cast<ModeSet>(mode);
  }
}

}  // namespace ctrain::job::matrix
