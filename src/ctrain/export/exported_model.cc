#include "ctrain/export/exported_model.h"

#include <algorithm>

#include <optional>
#include <utility>

#include "ctrain/data/feature_spec.h"
#include "ctrain/model/model.h"
#include "ctrain/train/train_config.h"
#include "ctrain/train/trainer_state.h"

namespace ctrain::exporter {

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The model options the exporters build graphs for. A checkpoint from a ctrain
// with more options (e.g. a new pooling or layer kind) that sets one of them
// to a non-default value is refused, never exported as a different model.
constexpr const char* kUnderstoodModelKeys[] = {
    "feature_size", "field_size", "embedding_size", "deep_layers", "dropout", "batch_norm", "batch_norm_momentum",
    "batch_norm_epsilon", "l2_reg", "use_first_order", "use_fm", "use_deep", "seed",
    // The model zoo's (model/model.h): each kind's head writer (onnx_heads.h) reads the ones of its kind,
    // and a kind without a head writer is refused by ExportOnnx.
    "kind", "cross_layers", "low_rank", "num_experts", "model_structure", "cin_layer_units", "num_dense_fields",
    "bottom_mlp", "top_mlp",
    // How training started the tables: nothing an inference graph reads.
    "embedding_initializer", "numeric_embedding_initializer",
    // --oov bucket: the ONNX graph maps an id at or above the vocabulary to its field's row (onnx_export.cc);
    // the .npy export records it in its model config for the reader of its tables.
    "oov_buckets"};

Status CheckModelKeysUnderstood(const std::string& path, const nlohmann::json& model) {
  if (!model.is_object()) return Status::OK();  // ModelConfigFromJson reports it
  const nlohmann::json defaults = train::ModelConfigToJson(model::DeepFMConfig{});
  for (auto it = model.begin(); it != model.end(); ++it) {
    bool known = false;
    for (const char* k : kUnderstoodModelKeys) known = known || it.key() == k;
    if (known) continue;
    auto d = defaults.find(it.key());
    if (d != defaults.end() && *d == it.value()) continue;  // a newer option left at its default
    return UnimplementedError(path + ": model option '" + it.key() + "' = " + it.value().dump() +
                              " is not supported by ctrain export (the exported graph would compute a different model)");
  }
  return Status::OK();
}

}  // namespace

int64_t ExportTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const ExportTensor* ExportedModel::Find(std::string_view name) const {
  for (const ExportTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

StatusOr<ExportedModel> LoadModelForExport(const std::string& model_dir) {
  CTRAIN_ASSIGN_OR_RETURN(std::optional<train::LoadedCheckpoint> ck, train::ReadTrainerCheckpoint(model_dir));
  if (!ck.has_value()) return NotFoundError(model_dir + ": no checkpoint");
  ExportedModel m;
  m.checkpoint_path = ck->path;
  m.step = ck->step;
  CTRAIN_RETURN_IF_ERROR(CheckModelKeysUnderstood(ck->path, ck->meta.value("model", nlohmann::json())));
  {
    StatusOr<model::DeepFMConfig> c = train::ModelConfigFromJson(ck->meta.value("model", nlohmann::json()));
    if (!c.ok()) return c.status().WithContext(ck->path + ": meta \"model\"");
    m.config = std::move(c).value();
  }
  CTRAIN_RETURN_IF_ERROR(m.config.Validate().WithContext(ck->path));
  m.data_source = ck->meta.contains("data") ? ck->meta["data"] : nlohmann::json();
  if (m.data_source.is_object() && m.data_source.contains("feature_spec")) {
    StatusOr<data::FeatureSpec> spec =
        data::ParseFeatureSpec(m.data_source["feature_spec"].dump(), ck->path + ": meta data.feature_spec");
    if (!spec.ok()) return spec.status();
    m.multi_hot_input = spec->multi_hot;
  }

  // The tensors the config implies, named and shaped as the trainer saves them.
  std::vector<std::pair<std::string, std::vector<int64_t>>> want;
  m.keyed = ck->meta.value("embedding_table", nlohmann::json::object()).value("embedding_table", "fixed") == "keyed";
  const int64_t D = m.config.num_dense_fields;
  if (m.keyed) {  // docs/checkpoint.md#keyed-tables: rows [0, D) numeric, then keys[i]'s at D + i
    const train::NamedTensor* k = ck->ckpt.Find("embeddings/keys");
    if (k == nullptr || k->dtype != train::DType::kI64 || k->shape.size() != 1)
      return DataLossError(ck->path + ": a keyed table's checkpoint without its int64 tensor 'embeddings/keys'");
    m.keys = k->i64;
  }
  const int64_t N = m.keyed ? D + static_cast<int64_t>(m.keys.size()) : m.config.feature_size,
                K = m.config.embedding_size;
  if (m.config.reads_w()) want.push_back({"embeddings/w", {N}});
  if (m.config.reads_v()) want.push_back({"embeddings/V", {N, K}});
  {
    // The model interface (model/model.h) of the checkpoint's kind: its parameter list is the single
    // source of names and shapes.
    StatusOr<std::unique_ptr<model::Model>> made = model::MakeModel(m.config);
    if (!made.ok()) return made.status().WithContext(ck->path + ": meta \"model\"");
    model::Model& shape_only = **made;
    CTRAIN_RETURN_IF_ERROR(shape_only.status());
    for (const model::DenseParam& p : shape_only.dense_params()) want.push_back({p.name, p.shape});
    for (const model::DenseParam& p : shape_only.state()) want.push_back({p.name, p.shape});
  }
  for (auto& [name, shape] : want) {
    train::NamedTensor* t = nullptr;
    for (train::NamedTensor& x : ck->ckpt.tensors)
      if (x.name == name) t = &x;
    if (t == nullptr) return DataLossError(ck->path + ": tensor '" + name + "' is missing (the model config needs it)");
    if (t->dtype != train::DType::kF32)
      return DataLossError(ck->path + ": tensor '" + name + "' is not f32");
    // The trainer stores w 1-D; accept [N, 1] too (same bytes).
    const bool same = t->shape == shape || (name == "embeddings/w" && t->shape == std::vector<int64_t>{N, 1});
    if (!same || static_cast<int64_t>(t->f32.size()) != t->num_elements())
      return DataLossError(ck->path + ": tensor '" + name + "' has shape " + ShapeText(t->shape) +
                           ", the model config implies " + ShapeText(shape));
    m.tensors.push_back({name, shape, std::move(t->f32)});
    if (m.keyed && name.starts_with("embeddings/")) {  // the zero row of unknown keys at D
      ExportTensor& e = m.tensors.back();
      const int64_t dim = e.shape.size() == 2 ? e.shape[1] : 1;
      e.value.insert(e.value.begin() + D * dim, static_cast<size_t>(dim), 0.0f);
      e.shape[0] += 1;
    }
  }
  return m;
}

int64_t ExportedModel::table_rows() const {
  return keyed ? config.num_dense_fields + 1 + static_cast<int64_t>(keys.size()) : config.feature_size;
}

std::vector<int64_t> KeyedRows(const ExportedModel& m, const std::vector<int64_t>& ids) {
  const int64_t D = m.config.num_dense_fields, F = m.config.field_size;
  std::vector<int64_t> rows(ids.size());
  for (size_t p = 0; p < ids.size(); ++p) {
    if (static_cast<int64_t>(p) % F < D) {
      rows[p] = ids[p];
      continue;
    }
    const auto it = std::lower_bound(m.keys.begin(), m.keys.end(), ids[p]);
    rows[p] = it != m.keys.end() && *it == ids[p] ? D + 1 + (it - m.keys.begin()) : D;
  }
  return rows;
}

std::string DescribeModel(const ExportedModel& m) {
  const model::ModelConfig& c = m.config;
  const std::string head = "model " + c.kind + " step " + std::to_string(m.step) + ": " +
                           (m.keyed ? "keyed table of " + std::to_string(m.keys.size()) + " keys"
                                    : "feature_size " + std::to_string(c.feature_size)) +
                           ", field_size " + std::to_string(c.field_size) + ", K " + std::to_string(c.embedding_size);
  if (!model::IsDeepFmKind(c.kind)) return head;
  const model::DeepFmTerms t = model::DeepFmTermsOf(c);
  std::string terms;
  if (t.first_order) terms += "first_order ";
  if (t.fm) terms += "fm ";
  if (t.deep) terms += "deep ";
  if (!terms.empty()) terms.pop_back();
  return head + ", terms " + terms +
         (t.deep ? ", deep_layers " + (c.deep_layers.empty() ? std::string("none") : train::FormatLayerList(c.deep_layers)) +
                       ", batch_norm " + (c.batch_norm ? "on" : "off")
                 : std::string());
}

}  // namespace ctrain::exporter
