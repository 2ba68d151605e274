#include "ctrain/train/train_config.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>

namespace ctrain::train {

Status ParallelOptions::Validate() const {
  if (intra_op_threads < 0)
    return InvalidArgumentError("intra_op_parallelism_threads must be >= 0, got " + std::to_string(intra_op_threads));
  if (inter_op_threads < 0)
    return InvalidArgumentError("inter_op_parallelism_threads must be >= 0, got " + std::to_string(inter_op_threads));
  if (towers < 1) return InvalidArgumentError("towers must be >= 1, got " + std::to_string(towers));
  if (hogwild < 0) return InvalidArgumentError("hogwild must be >= 0, got " + std::to_string(hogwild));
  if (hogwild > 0 && towers > 1)
    return InvalidArgumentError("hogwild (" + std::to_string(hogwild) + ") and towers (" + std::to_string(towers) +
                                ") are exclusive: use one kind of replica");
  if (hogwild > 0 && deterministic)
    return InvalidArgumentError("hogwild (" + std::to_string(hogwild) +
                                ") is not deterministic (its replicas race on the embedding tables) and "
                                "deterministic is set: use towers for parallel replicas, or drop deterministic");
  return Status::OK();
}

Status TrainOptions::Validate() const {
  CTRAIN_RETURN_IF_ERROR(model.Validate());
  CTRAIN_RETURN_IF_ERROR(parallel.Validate());
  CTRAIN_RETURN_IF_ERROR(table.Validate());
  if (incremental_checkpoints < 0)
    return InvalidArgumentError("--incremental-checkpoints must be >= 0, got " + std::to_string(incremental_checkpoints));
  if (incremental_checkpoints > 0 && !table.keyed())
    return InvalidArgumentError("--incremental-checkpoints needs --embedding-table keyed (a positional table's "
                                "checkpoint is its whole table)");
  if (batch_size < 1) return InvalidArgumentError("batch_size must be >= 1, got " + std::to_string(batch_size));
  // 0 epochs would train nothing and still write an untrained checkpoint.
  if (epochs < 1)
    return InvalidArgumentError("--epochs must be >= 1, got " + std::to_string(epochs) +
                                " (0 epochs trains nothing; to evaluate a model use `ctrain eval`)");
  if (max_steps < 0) return InvalidArgumentError("max_steps must be >= 0, got " + std::to_string(max_steps));
  if (eval_every_steps < 0)
    return InvalidArgumentError("eval_every_steps must be >= 0, got " + std::to_string(eval_every_steps));
  if (save_checkpoints_steps < 0)
    return InvalidArgumentError("save_checkpoints_steps must be >= 0, got " + std::to_string(save_checkpoints_steps));
  if (keep_checkpoints < 1)
    return InvalidArgumentError("keep_checkpoints must be >= 1, got " + std::to_string(keep_checkpoints));
  CTRAIN_RETURN_IF_ERROR(optim::ValidateLrSchedule(lr_schedule()));
  if (has_lr_schedule() && parallel.hogwild > 0)
    return InvalidArgumentError(std::string(lr_warmup_steps > 0 ? "--lr-warmup-steps" : "--lr-decay") +
                                " needs synchronous training (not --hogwild)");
  if (lr_plateau()) {
    CTRAIN_RETURN_IF_ERROR(optim::PlateauModeOf(plateau_metric()).status());
    CTRAIN_RETURN_IF_ERROR(optim::ValidatePlateau(plateau_config()));
    if (plateau_metric() == "gauc" && group_field < 0)
      return InvalidArgumentError("--lr-plateau-metric gauc needs --gauc-field (the field whose id groups examples)");
  } else {
    const TrainOptions d;  // the plateau's parameters mean nothing without it
    const char* given = !lr_plateau_metric.empty()                    ? "--lr-plateau-metric"
                        : lr_plateau_factor != d.lr_plateau_factor     ? "--lr-plateau-factor"
                        : lr_plateau_patience != d.lr_plateau_patience ? "--lr-plateau-patience"
                        : lr_plateau_cooldown != d.lr_plateau_cooldown ? "--lr-plateau-cooldown"
                        : lr_plateau_min_lr != d.lr_plateau_min_lr     ? "--lr-plateau-min-lr"
                        : lr_plateau_min_delta != d.lr_plateau_min_delta ? "--lr-plateau-min-delta"
                                                                        : nullptr;
    if (given != nullptr)
      return InvalidArgumentError(std::string(given) + " needs --lr-decay plateau (--lr-schedule plateau), this run has "
                                  "--lr-decay " + optim::LrDecayName(lr_decay));
  }
  if (!early_stopping_metric.empty()) {
    static const char* kMetrics[] = {"auc", "gauc", "pr_auc", "logloss", "normalized_entropy"};
    if (std::find(std::begin(kMetrics), std::end(kMetrics), early_stopping_metric) == std::end(kMetrics))
      return InvalidArgumentError("--early-stopping-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, "
                                  "got '" + early_stopping_metric + "'");
    if (early_stopping_patience < 1 && !keep_best)
      return InvalidArgumentError("--early-stopping-metric " + early_stopping_metric +
                                  " needs --early-stopping-patience >= 1 (evaluations without improvement)");
  }
  if (early_stopping_patience < 0)
    return InvalidArgumentError("--early-stopping-patience must be >= 0, got " +
                                std::to_string(early_stopping_patience));
  if (early_stopping_patience > 0 && early_stopping_metric.empty())
    return InvalidArgumentError("--early-stopping-patience needs --early-stopping-metric (e.g. auc)");
  if (!(early_stopping_min_delta >= 0))
    return InvalidArgumentError("--early-stopping-min-delta must be >= 0");
  if (keep_best && model_dir.empty()) return InvalidArgumentError("--keep-best needs --model-dir");
  if ((best_metric() == "gauc" && (early_stopping_patience > 0 || keep_best)) && group_field < 0)
    return InvalidArgumentError("--early-stopping-metric gauc needs --gauc-field (the field whose id groups examples)");
  if (group_field < -1 || group_field >= model.field_size)
    return InvalidArgumentError("--gauc-field must be a field index in [0, " + std::to_string(model.field_size) +
                                "), got " + std::to_string(group_field));
  if (!(negative_downsampling_rate > 0 && negative_downsampling_rate <= 1))
    return InvalidArgumentError("--negative-downsampling: the rate at which negatives were kept must be in (0, 1], "
                                "got " + std::to_string(negative_downsampling_rate));
  if (warm_start_optimizer && warm_start_from.empty())
    return InvalidArgumentError("--warm-start-optimizer needs --warm-start-from DIR");
  if (parallel.towers > batch_size)
    return InvalidArgumentError("towers (" + std::to_string(parallel.towers) + ") must not exceed batch_size (" +
                                std::to_string(batch_size) + ")");
  return Status::OK();
}

optim::LrSchedule TrainOptions::lr_schedule() const {
  optim::LrSchedule s;
  s.warmup_steps = lr_warmup_steps;
  s.warmup_from = lr_warmup_from;
  s.decay = lr_decay;
  s.decay_steps = lr_decay_steps;
  s.decay_rate = lr_decay_rate;
  s.staircase = lr_decay_staircase;
  s.alpha = lr_decay_alpha;
  return s;
}

optim::PlateauConfig TrainOptions::plateau_config() const {
  optim::PlateauConfig c;
  const StatusOr<optim::PlateauMode> mode = optim::PlateauModeOf(plateau_metric());
  c.mode = mode.ok() ? *mode : optim::PlateauMode::kMin;
  c.factor = lr_plateau_factor;
  c.patience = lr_plateau_patience;
  c.cooldown = lr_plateau_cooldown;
  c.min_lr = lr_plateau_min_lr;
  c.min_delta = lr_plateau_min_delta;
  return c;
}

nlohmann::json ModelConfigToJson(const model::DeepFMConfig& c) {
  return nlohmann::json{{"kind", c.kind},
                        {"feature_size", c.feature_size},
                        {"oov_buckets", c.oov_buckets},
                        {"field_size", c.field_size},
                        {"embedding_size", c.embedding_size},
                        {"deep_layers", c.deep_layers},
                        {"dropout", c.dropout},
                        {"batch_norm", c.batch_norm},
                        {"batch_norm_momentum", c.batch_norm_momentum},
                        {"batch_norm_epsilon", c.batch_norm_epsilon},
                        {"l2_reg", c.l2_reg},
                        {"use_first_order", c.use_first_order},
                        {"use_fm", c.use_fm},
                        {"use_deep", c.use_deep},
                        {"seed", c.seed},
                        {"cross_layers", c.cross_layers},
                        {"low_rank", c.low_rank},
                        {"num_experts", c.num_experts},
                        {"model_structure", c.model_structure},
                        {"cin_layer_units", c.cin_layer_units},
                        {"num_dense_fields", c.num_dense_fields},
                        {"bottom_mlp", c.bottom_mlp},
                        {"top_mlp", c.top_mlp},
                        {"embedding_initializer", c.embedding_initializer},
                        {"numeric_embedding_initializer", c.numeric_embedding_initializer}};
}

namespace {

template <typename T>
Status Get(const nlohmann::json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgumentError(std::string("missing key '") + key + "'");
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("key '") + key + "': " + e.what());
  }
  return Status::OK();
}

}  // namespace

StatusOr<model::DeepFMConfig> ModelConfigFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgumentError("model config: expected a JSON object");
  model::DeepFMConfig c;
  // Checkpoints written before the kind was recorded are DeepFM's.
  c.kind = j.contains("kind") ? std::string() : std::string("deepfm");
  if (j.contains("kind")) CTRAIN_RETURN_IF_ERROR(Get(j, "kind", &c.kind));
  CTRAIN_RETURN_IF_ERROR(Get(j, "feature_size", &c.feature_size));
  CTRAIN_RETURN_IF_ERROR(Get(j, "field_size", &c.field_size));
  CTRAIN_RETURN_IF_ERROR(Get(j, "embedding_size", &c.embedding_size));
  CTRAIN_RETURN_IF_ERROR(Get(j, "deep_layers", &c.deep_layers));
  CTRAIN_RETURN_IF_ERROR(Get(j, "dropout", &c.dropout));
  CTRAIN_RETURN_IF_ERROR(Get(j, "batch_norm", &c.batch_norm));
  CTRAIN_RETURN_IF_ERROR(Get(j, "batch_norm_momentum", &c.batch_norm_momentum));
  CTRAIN_RETURN_IF_ERROR(Get(j, "batch_norm_epsilon", &c.batch_norm_epsilon));
  CTRAIN_RETURN_IF_ERROR(Get(j, "l2_reg", &c.l2_reg));
  CTRAIN_RETURN_IF_ERROR(Get(j, "use_first_order", &c.use_first_order));
  CTRAIN_RETURN_IF_ERROR(Get(j, "use_fm", &c.use_fm));
  CTRAIN_RETURN_IF_ERROR(Get(j, "use_deep", &c.use_deep));
  CTRAIN_RETURN_IF_ERROR(Get(j, "seed", &c.seed));
  // The zoo's hyper-parameters: checkpoints written before them (DeepFM only) have none; their defaults apply.
  auto optional = [&](const char* key, auto* out) -> Status {
    return j.contains(key) ? Get(j, key, out) : Status::OK();
  };
  CTRAIN_RETURN_IF_ERROR(optional("cross_layers", &c.cross_layers));
  CTRAIN_RETURN_IF_ERROR(optional("low_rank", &c.low_rank));
  CTRAIN_RETURN_IF_ERROR(optional("num_experts", &c.num_experts));
  CTRAIN_RETURN_IF_ERROR(optional("model_structure", &c.model_structure));
  CTRAIN_RETURN_IF_ERROR(optional("cin_layer_units", &c.cin_layer_units));
  CTRAIN_RETURN_IF_ERROR(optional("num_dense_fields", &c.num_dense_fields));
  CTRAIN_RETURN_IF_ERROR(optional("oov_buckets", &c.oov_buckets));
  CTRAIN_RETURN_IF_ERROR(optional("bottom_mlp", &c.bottom_mlp));
  CTRAIN_RETURN_IF_ERROR(optional("top_mlp", &c.top_mlp));
  CTRAIN_RETURN_IF_ERROR(optional("embedding_initializer", &c.embedding_initializer));
  CTRAIN_RETURN_IF_ERROR(optional("numeric_embedding_initializer", &c.numeric_embedding_initializer));
  CTRAIN_RETURN_IF_ERROR(c.Validate());
  return c;
}

nlohmann::json OptimizerConfigToJson(const optim::OptimizerConfig& c) {
  return nlohmann::json{{"name", c.name},
                        {"learning_rate", c.learning_rate},
                        {"beta1", c.beta1},
                        {"beta2", c.beta2},
                        {"epsilon", c.epsilon},
                        {"momentum", c.momentum},
                        {"nesterov", c.nesterov},
                        {"initial_accumulator_value", c.initial_accumulator_value},
                        {"l1", c.l1},
                        {"l2", c.l2},
                        {"lr_power", c.lr_power},
                        {"beta", c.beta}};
}

StatusOr<optim::OptimizerConfig> OptimizerConfigFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgumentError("optimizer config: expected a JSON object");
  optim::OptimizerConfig c;
  CTRAIN_RETURN_IF_ERROR(Get(j, "name", &c.name));
  CTRAIN_RETURN_IF_ERROR(Get(j, "learning_rate", &c.learning_rate));
  CTRAIN_RETURN_IF_ERROR(Get(j, "beta1", &c.beta1));
  CTRAIN_RETURN_IF_ERROR(Get(j, "beta2", &c.beta2));
  CTRAIN_RETURN_IF_ERROR(Get(j, "epsilon", &c.epsilon));
  CTRAIN_RETURN_IF_ERROR(Get(j, "momentum", &c.momentum));
  CTRAIN_RETURN_IF_ERROR(Get(j, "nesterov", &c.nesterov));
  CTRAIN_RETURN_IF_ERROR(Get(j, "initial_accumulator_value", &c.initial_accumulator_value));
  CTRAIN_RETURN_IF_ERROR(Get(j, "l1", &c.l1));
  CTRAIN_RETURN_IF_ERROR(Get(j, "l2", &c.l2));
  CTRAIN_RETURN_IF_ERROR(Get(j, "lr_power", &c.lr_power));
  CTRAIN_RETURN_IF_ERROR(Get(j, "beta", &c.beta));
  return c;
}

nlohmann::json DataSourceToJson(const DataSourceOptions& d, int32_t field_size) {
  nlohmann::json j{{"format", d.format},
                   {"compression", d.compression},
                   {"id_base", d.id_base},
                   {"field_size", field_size},
                   {"feature_size", d.feature_size},
                   {"feature_map", d.feature_map}};
  if (!d.feature_spec.empty()) j["feature_spec"] = nlohmann::json::parse(d.feature_spec, nullptr, false);
  // How Criteo rows became ids (written unless the format is known to carry ids).
  if (d.format == "libsvm" || d.format == "tfrecord" || d.format == "libffm" || !d.feature_spec.empty()) {
    if (!d.feature_map.empty())  // the map the files' ids came from (ctrain convert --vocab-min-count)
      j["id_map"] = {{"feature_map", d.feature_map}, {"fingerprint", d.vocab_fingerprint},
                     {"entries", d.vocab_entries}};
    return j;
  }
  if (!d.feature_map.empty())
    j["criteo"] = {{"encoding", "vocabulary"}, {"feature_map", d.feature_map}, {"fingerprint", d.vocab_fingerprint},
                   {"entries", d.vocab_entries}};
  else
    j["criteo"] = {{"encoding", "hash"}, {"hash_buckets", d.hash_buckets}, {"hash_seed", d.hash_seed}};
  return j;
}

StatusOr<DataSourceOptions> DataSourceFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgumentError("data options: expected a JSON object");
  DataSourceOptions d;
  d.from_files = true;
  CTRAIN_RETURN_IF_ERROR(Get(j, "format", &d.format));
  if (d.format == "auto") d.format.clear();  // written before the detected format was recorded
  CTRAIN_RETURN_IF_ERROR(Get(j, "id_base", &d.id_base));
  CTRAIN_RETURN_IF_ERROR(Get(j, "feature_map", &d.feature_map));
  auto optional = [&](const nlohmann::json& o, const char* key, auto* out) -> Status {
    return o.contains(key) ? Get(o, key, out) : Status::OK();
  };
  CTRAIN_RETURN_IF_ERROR(optional(j, "compression", &d.compression));
  CTRAIN_RETURN_IF_ERROR(optional(j, "field_size", &d.field_size));
  CTRAIN_RETURN_IF_ERROR(optional(j, "feature_size", &d.feature_size));
  if (j.contains("feature_spec")) {
    if (!j["feature_spec"].is_object()) return InvalidArgumentError("data options: key 'feature_spec': expected a JSON object");
    d.feature_spec = j["feature_spec"].dump(2) + "\n";  // FeatureSpec::ToJson's form
  }
  if (j.contains("criteo")) {
    const nlohmann::json& c = j["criteo"];
    if (!c.is_object()) return InvalidArgumentError("data options: key 'criteo': expected a JSON object");
    CTRAIN_RETURN_IF_ERROR(optional(c, "fingerprint", &d.vocab_fingerprint));
    CTRAIN_RETURN_IF_ERROR(optional(c, "entries", &d.vocab_entries));
    CTRAIN_RETURN_IF_ERROR(optional(c, "hash_buckets", &d.hash_buckets));
    CTRAIN_RETURN_IF_ERROR(optional(c, "hash_seed", &d.hash_seed));
  }
  if (j.contains("id_map")) {
    const nlohmann::json& c = j["id_map"];
    if (!c.is_object()) return InvalidArgumentError("data options: key 'id_map': expected a JSON object");
    CTRAIN_RETURN_IF_ERROR(optional(c, "fingerprint", &d.vocab_fingerprint));
    CTRAIN_RETURN_IF_ERROR(optional(c, "entries", &d.vocab_entries));
  }
  return d;
}

StatusOr<std::vector<int32_t>> ParseLayerList(std::string_view text, std::string_view name) {
  std::vector<int32_t> out;
  size_t i = 0;
  for (size_t element = 1; i <= text.size() && !text.empty(); ++element) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view tok = text.substr(i, j - i);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    int32_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size() || v <= 0)
      return InvalidArgumentError(std::string(name) + " '" + std::string(text) + "': element " + std::to_string(element) +
                                  (tok.empty() ? " is empty" : " ('" + std::string(tok) + "') is not a positive width") +
                                  "; expected positive widths like 400,400,400");
    out.push_back(v);
    i = j + 1;
  }
  return out;
}

std::string FormatLayerList(const std::vector<int32_t>& layers) {
  std::string s;
  for (size_t i = 0; i < layers.size(); ++i) s += (i ? "," : "") + std::to_string(layers[i]);
  return s;
}

}  // namespace ctrain::train
