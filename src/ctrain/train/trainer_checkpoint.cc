// Checkpoints (docs/checkpoint.md): the tensors and meta of a trainer, saving,
// restoring (a local checkpoint or what the parameter servers restored) and
// warm starts (docs/training.md#warm-start).
#include "ctrain/base/path.h"
#include "ctrain/train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "ctrain/train/remote_parameters.h"

namespace ctrain::train {
namespace {

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

Status Trainer::Impl::NoteStreamFormats() {
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

CheckpointTensors Trainer::Impl::Tensors(bool tables, bool keyed_delta) {
  CheckpointTensors t;
  if (tables && keys != nullptr) {
    AddKeyedTensors(&t, keyed_delta);
  } else if (tables) {
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

nlohmann::json Trainer::Impl::Meta() const {
  nlohmann::json m;
  m["format"] = "ctrain-deepfm-checkpoint-v1";
  m["model"] = ModelConfigToJson(options.model);
  m["optimizer"] = OptimizerConfigToJson(options.optimizer);
  m["seed"] = options.seed;
  m["batch_size"] = options.batch_size;
  m["shuffle"] = options.shuffle;
  if (options.table.keyed()) {
    m["embedding_table"] = KeyedTableOptionsToJson(options.table);
    if (keys != nullptr) m["keyed_table"] = keys->counters().ToJson();
  }
  m["global_step"] = pos.global_step;
  m["epoch"] = pos.epoch;
  m["batch_in_epoch"] = pos.batch_in_epoch;
  m["examples"] = pos.examples;
  m["train_rows"] = pos.train_rows;
  if (options.data.recorded()) m["data"] = DataSourceToJson(options.data, options.model.field_size);
  if (options.negative_downsampling_rate != 1.0) m["negative_downsampling_rate"] = options.negative_downsampling_rate;
  if (!warm_start_meta.is_null()) m["warm_start"] = warm_start_meta;
  m["finished"] = finished;
  if (!options.run_record.is_null()) m["run_record"] = options.run_record;
  if (tracking_best())
    m["early_stopping"] = {{"metric", options.best_metric()},
                           {"best", std::isnan(best_value) ? nlohmann::json(nullptr) : nlohmann::json(best_value)},
                           {"best_step", best_step},
                           {"evals_since_best", evals_since_best},
                           {"stopped", early_stopped}};
  if (options.lr_plateau()) m["lr_plateau"] = PlateauMeta();
  if (!train_inputs.is_null()) m["train_inputs"] = train_inputs;
  if (stream_src != nullptr) {
    nlohmann::json cursor = stream_src->Cursor();
    if (!cursor.is_null()) m["data_cursor"] = std::move(cursor);
  }
  return m;
}

Status Trainer::Impl::Save() {
  // (A keyed table evicts at the scheduled checkpoints alone, in RunEpochs before their evaluation: a stop or
  // max_steps in between saves without evicting, so a resumed run evicts at the same steps.)
  if (options.model_dir.empty()) return Status::OK();
  if (remote != nullptr) {  // the servers save their shards, the chief the manifest
    CTRAIN_RETURN_IF_ERROR(FlushRemoteDense());  // the dense parameters this worker keeps, into the servers' copy
    CTRAIN_RETURN_IF_ERROR(remote->Save(options.model_dir, Meta(), replicas[0].model->state()));
    saved_this_run = true;
    saved_pos = pos;
    return Status::OK();
  }
  CTRAIN_RETURN_IF_ERROR(NoteStreamFormats());  // the format a stream was read in, never ""
  if (!hog_master.empty()) SyncReplicas();
  // A keyed table's incremental checkpoint (train/keyed_checkpoint.h): on a full one of an earlier step, until
  // incremental_checkpoints of them were written.
  // A second save of one step (an epoch end that is also a save step, a stop right after one) rewrites the same
  // file: the same incremental checkpoint, under its number.
  const bool resave = keyed_delta_step == pos.global_step;
  const bool delta = keys != nullptr && options.incremental_checkpoints > 0 && !keyed_base.empty() &&
                     keyed_base_step != pos.global_step &&
                     (resave || deltas_since_full < options.incremental_checkpoints);
  if (delta && resave) --deltas_since_full;
  CheckpointTensors t = Tensors(/*tables=*/true, delta);
  nlohmann::json meta = Meta();
  if (delta)
    meta["keyed_delta"] = {{"base", keyed_base}, {"base_step", keyed_base_step}, {"index", deltas_since_full + 1}};
  CTRAIN_RETURN_IF_ERROR(WriteTrainerCheckpoint(options.model_dir, pos.global_step, t, meta,
                                                options.keep_checkpoints, delta ? keyed_base : ""));
  if (keys != nullptr && delta) {
    ++deltas_since_full;
    keyed_delta_step = pos.global_step;
  } else if (keys != nullptr) {
    keyed_delta_step = -1;
    keys->MarkClean();
    keyed_base = CheckpointFileName(pos.global_step);
    keyed_base_step = pos.global_step;
    deltas_since_full = 0;
  }
  saved_this_run = true;
  saved_pos = pos;
  return Status::OK();
}

Status Trainer::Impl::FlushRemoteDense() {
  if (remote == nullptr || !remote->keeps_dense() || dense_flushed_step == pos.global_step) return Status::OK();
  // The chief's dense optimizer slots are the ones the servers checkpoint and export.
  CTRAIN_RETURN_IF_ERROR(
      remote->FlushDense(replicas[0].model->dense_params(), remote->worker_index() == 0 ? &dense_slots : nullptr));
  dense_flushed_step = pos.global_step;
  return Status::OK();
}

Status Trainer::Impl::SaveFinal() {
  if (saved_this_run && saved_pos.global_step == pos.global_step && saved_pos.epoch == pos.epoch &&
      saved_pos.batch_in_epoch == pos.batch_in_epoch)
    return Status::OK();
  return Save();
}

namespace {

std::string CanonicalDir(const std::string& dir) { return CanonicalPath(dir); }  // base/path.h

// The model config keys that fix the parameters' shapes: a warm start needs
// them equal (feature_size may grow; dropout, l2 and the like may change).
constexpr const char* kShapeKeys[] = {"kind",        "field_size",      "embedding_size",   "deep_layers",
                                      "batch_norm",  "use_first_order", "use_fm",           "use_deep",
                                      "cross_layers", "low_rank",       "num_experts",      "model_structure",
                                      "cin_layer_units", "num_dense_fields", "bottom_mlp",   "top_mlp",
                                      "oov_buckets"};

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
  {
    CTRAIN_ASSIGN_OR_RETURN(KeyedTableOptions t, KeyedTableOptionsFromJson(meta.value("embedding_table", nlohmann::json())));
    if (t.keyed() != m.options.table.keyed())
      return FailedPreconditionError(
          ck->path + ": warm start: the checkpoint's embedding table is " + t.embedding_table + ", this run's is " +
          m.options.table.embedding_table +
          " (a positional row and a key are different things: warm-start with the same --embedding-table)");
  }
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
    d.feature_size = m.options.model.vocabulary_size();  // the rows grew (checked above); the ids keep their meaning
    if (!d.feature_map.empty()) {  // ids from a vocabulary: this run's must be it or extend it append-only
      std::optional<io::CriteoVocabulary> vocab;
      if (!m.options.data.feature_map.empty()) {
        CTRAIN_ASSIGN_OR_RETURN(io::CriteoVocabulary v, io::CriteoVocabulary::LoadFeatureMap(m.options.data.feature_map));
        vocab = std::move(v);
      }
      std::vector<std::string> map_notes;
      CTRAIN_RETURN_IF_ERROR(CheckFeatureMapExtends(d, from_dir, m.options.data, vocab ? &*vocab : nullptr, &map_notes)
                                 .WithContext(ck->path + ": warm start"));
      for (const std::string& n : map_notes) m.Log("ctrain: note: " + n);
      if (map_notes.empty()) {  // checked: the extended map's ids keep their meaning
        d.feature_map = m.options.data.feature_map;
        d.vocab_fingerprint = m.options.data.vocab_fingerprint;
        d.vocab_entries = m.options.data.vocab_entries;
      }
    }
    std::vector<std::string> notes;
    CTRAIN_RETURN_IF_ERROR(CheckInputMatchesModel(d, from_dir, m.options.data, "this run's --train", &notes)
                               .WithContext(ck->path + ": warm start"));
  }
  // Every tensor of this model, from the checkpoint: the tables' first
  // old_rows rows (the rest keep their initialisation), the dense parameters
  // and BN state whole; optimizer slots only with optimizer_slots.
  const CheckpointTensors t = m.Tensors(/*tables=*/m.keys == nullptr);
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
    if (table && m.options.model.oov_buckets && rows > old_rows) {
      // The vocabulary's rows stay; the out-of-vocabulary rows (the last field_size) move after the grown one.
      const size_t dim = ref.count / static_cast<size_t>(rows);
      const size_t oov = static_cast<size_t>(m.options.model.field_size) * dim;
      const size_t vocab = x->f32.size() - oov;
      std::memcpy(ref.data, x->f32.data(), vocab * sizeof(float));
      std::memcpy(ref.data + ref.count - oov, x->f32.data() + vocab, oov * sizeof(float));
    } else {
      std::memcpy(ref.data, x->f32.data(), x->f32.size() * sizeof(float));
    }
    ++copied;
  }
  if (m.keys != nullptr) CTRAIN_RETURN_IF_ERROR(m.RestoreKeyed(ck->ckpt, optimizer_slots, /*warm=*/true));
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
  if (m.keys != nullptr)
    std::snprintf(buf, sizeof buf, "ctrain: warm start from %s (step %lld): %lld tensors; the keyed table's %lld keys keep their rows; optimizer slots %s",
                  ck->path.c_str(), static_cast<long long>(step), static_cast<long long>(copied),
                  static_cast<long long>(m.keys->counters().live_rows), optimizer_slots ? "carried over" : "start afresh");
  else if (m.options.model.oov_buckets)
    std::snprintf(buf, sizeof buf,
                  "ctrain: warm start from %s (step %lld): %lld tensors; vocabulary rows [0, %lld) and the %d "
                  "out-of-vocabulary rows from the checkpoint%s; optimizer slots %s",
                  ck->path.c_str(), static_cast<long long>(step), static_cast<long long>(copied),
                  static_cast<long long>(mc.vocabulary_size()), m.options.model.field_size,
                  rows > old_rows ? (", rows [" + std::to_string(mc.vocabulary_size()) + ", " +
                                     std::to_string(m.options.model.vocabulary_size()) + ") newly initialised").c_str()
                                  : "",
                  optimizer_slots ? "carried over" : "start afresh");
  else
    std::snprintf(buf, sizeof buf,
                  "ctrain: warm start from %s (step %lld): %lld tensors; embedding rows [0, %lld) from the "
                  "checkpoint%s; optimizer slots %s",
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
  CheckpointTensors t = m.Tensors(/*tables=*/m.keys == nullptr);
  CTRAIN_RETURN_IF_ERROR(ck->CopyInto(t));
  if (m.keys != nullptr) CTRAIN_RETURN_IF_ERROR(m.RestoreKeyed(ck->ckpt, /*slots=*/true, /*warm=*/false));
  m.SyncReplicas();
  m.resumed = true;
  *restored = true;
  return Status::OK();
}

// The checkpoint meta's model, optimizer and data checks, and the position,
// warm-start and early-stopping state it records (Restore, local and remote).
Status Trainer::Impl::RestoreMeta(const nlohmann::json& meta, const std::string& path) {
  Impl& m = *this;
  CTRAIN_ASSIGN_OR_RETURN(model::DeepFMConfig mc, ModelConfigFromJson(meta.value("model", nlohmann::json())));
  if (mc.kind != m.options.model.kind)  // before the hyper-parameters, which differ with it
    return FailedPreconditionError(path + ": checkpoint model has kind = \"" + mc.kind + "\" (--model " + mc.kind +
                                   "), this run asks for \"" + m.options.model.kind + "\" (--model " +
                                   m.options.model.kind + "); use --model " + mc.kind + " or a new --model-dir");
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
  {  // the table's layout and rules: a resume continues them exactly
    CTRAIN_ASSIGN_OR_RETURN(KeyedTableOptions t, KeyedTableOptionsFromJson(meta.value("embedding_table", nlohmann::json())));
    const nlohmann::json have_t = KeyedTableOptionsToJson(t), want_t = KeyedTableOptionsToJson(m.options.table);
    for (auto it = want_t.begin(); it != want_t.end(); ++it)
      if (have_t[it.key()] != it.value()) {
        std::string flag = "--" + it.key();
        std::replace(flag.begin(), flag.end(), '_', '-');
        return FailedPreconditionError(path + ": checkpoint was trained with " + flag + " " + have_t[it.key()].dump() +
                                       ", this run asks for " + it.value().dump() +
                                       " (use the same embedding-table options or a new --model-dir)");
      }
  }
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
  if (m.options.lr_plateau()) {
    if (const auto p = meta.find("lr_plateau"); p != meta.end())
      CTRAIN_RETURN_IF_ERROR(m.RestorePlateau(*p, path));
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
  // Keeping the dense parameters: start from the servers' copy (a restored checkpoint's values and slots).
  if (remote->keeps_dense()) CTRAIN_RETURN_IF_ERROR(remote->PullDenseState(&replicas[0].model->dense_params(), &dense_slots));
  if (remote->sync_replicas()) pos.global_step = step;
  if (text.empty()) return Status::OK();
  const nlohmann::json meta = nlohmann::json::parse(text, nullptr, false);
  const std::string path = "the parameter servers' checkpoint" +
                           (options.model_dir.empty() ? std::string() : " in " + options.model_dir);
  if (!meta.is_object()) return DataLossError(path + ": its trainer meta is not a JSON object");
  CTRAIN_RETURN_IF_ERROR(RestoreMeta(meta, path));
  // The chief's BN moving statistics, saved with the checkpoint on shard 0.
  if (!replicas[0].model->state().empty()) CTRAIN_RETURN_IF_ERROR(remote->PullState(&replicas[0].model->state()));
  if (remote->sync_replicas()) pos.global_step = step;
  restored_path = path;
  char buf[320];
  std::snprintf(buf, sizeof buf, "ctrain: %s: the parameter servers restored a checkpoint at global step %lld; "
                "continuing at epoch %lld, batch %lld", remote->Describe().c_str(), static_cast<long long>(step),
                static_cast<long long>(pos.epoch + 1), static_cast<long long>(pos.batch_in_epoch));
  Log(buf);
  resumed = true;
  *restored = true;
  return Status::OK();
}

// Meta "lr_plateau": the scheduler's state (optim/lr_plateau.h) under the
// metric and learning rate it was started with; best is null while none was
// seen (+-inf in memory).
nlohmann::json Trainer::Impl::PlateauMeta() const {
  nlohmann::json drops = nlohmann::json::array();
  for (const LrDrop& d : lr_drops) drops.push_back({{"step", d.step}, {"lr", d.lr}});
  return {{"metric", options.plateau_metric()},
          {"learning_rate", static_cast<double>(options.optimizer.learning_rate)},
          {"lr", plateau.lr},
          {"best", std::isfinite(plateau.best) ? nlohmann::json(plateau.best) : nlohmann::json(nullptr)},
          {"num_bad_evals", plateau.num_bad},
          {"cooldown_counter", plateau.cooldown_counter},
          {"reductions", plateau.reductions},
          {"drops", std::move(drops)}};
}

// A checkpoint of another metric or learning rate (or without the plateau)
// leaves the scheduler at its start: its state measured something else.
Status Trainer::Impl::RestorePlateau(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return DataLossError(path + ": meta \"lr_plateau\" is not a JSON object");
  if (j.value("metric", "") != options.plateau_metric() ||
      j.value("learning_rate", -1.0) != static_cast<double>(options.optimizer.learning_rate)) {
    Log("ctrain: " + path + ": its learning-rate plateau state was kept for --lr-plateau-metric " +
        j.value("metric", std::string("?")) + " at another --learning-rate or metric: the scheduler starts afresh");
    return Status::OK();
  }
  try {
    optim::PlateauState s = optim::PlateauState::Start(options.plateau_config(), 0);
    s.lr = j.at("lr").get<double>();
    if (!j.at("best").is_null()) s.best = j.at("best").get<double>();
    s.num_bad = j.at("num_bad_evals").get<int32_t>();
    s.cooldown_counter = j.at("cooldown_counter").get<int32_t>();
    s.reductions = j.at("reductions").get<int32_t>();
    std::vector<LrDrop> drops;
    for (const nlohmann::json& d : j.at("drops")) drops.push_back({d.at("step").get<int64_t>(), d.at("lr").get<double>()});
    if (!(s.lr >= 0) || !std::isfinite(s.lr) || s.num_bad < 0 || s.cooldown_counter < 0)
      return DataLossError(path + ": meta \"lr_plateau\" holds an invalid state: " + j.dump());
    plateau = s;
    lr_drops = std::move(drops);
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(path + ": meta \"lr_plateau\": " + e.what());
  }
  return Status::OK();
}

}  // namespace ctrain::train
