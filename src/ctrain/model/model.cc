#include "ctrain/model/model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "ctrain/model/dcn.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/model/dlrm.h"
#include "ctrain/model/layers/embedding_lookup.h"
#include "ctrain/model/random.h"
#include "ctrain/model/xdeepfm.h"

namespace ctrain::model {

void UniqueIds(const data::Batch& batch, std::vector<int64_t>* unique_ids, std::vector<int32_t>* index) {
  ComputeUniqueIds(batch.ids, unique_ids, index);
}

int AddDenseParam(std::vector<DenseParam>* params, std::string name, std::vector<int64_t> shape, bool trainable) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  DenseParam p;
  p.name = std::move(name);
  p.value.assign(n, 0.0f);
  if (trainable) p.grad.assign(n, 0.0f);
  p.shape = std::move(shape);
  params->push_back(std::move(p));
  return static_cast<int>(params->size()) - 1;
}

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void InitDenseParams(uint64_t seed, std::vector<DenseParam>* dense, std::vector<DenseParam>* state) {
  for (size_t i = 0; i < dense->size(); ++i) {
    DenseParam& p = (*dense)[i];
    if (EndsWith(p.name, "/weights")) {
      double fan_out = 1;
      for (size_t d = 1; d < p.shape.size(); ++d) fan_out *= static_cast<double>(p.shape[d]);
      const double limit = std::sqrt(6.0 / (static_cast<double>(p.shape[0]) + fan_out));
      const uint64_t key = StreamKey(seed, 0x1000 + i);
      for (size_t j = 0; j < p.value.size(); ++j)
        p.value[j] = static_cast<float>((2.0 * UniformOpen(CounterBits(key, j)) - 1.0) * limit);
    } else if (EndsWith(p.name, "/gamma")) {
      std::fill(p.value.begin(), p.value.end(), 1.0f);
    } else {
      std::fill(p.value.begin(), p.value.end(), 0.0f);
    }
  }
  for (DenseParam& s : *state) {
    const bool var = EndsWith(s.name, "moving_variance");
    std::fill(s.value.begin(), s.value.end(), var ? 1.0f : 0.0f);
  }
}

bool IsDeepFmKind(std::string_view kind) {
  return kind == "deepfm" || kind == "lr" || kind == "fm" || kind == "wide_deep";
}

DeepFmTerms DeepFmTermsOf(const ModelConfig& c) {
  if (c.kind == "lr") return {true, false, false};
  if (c.kind == "fm") return {true, true, false};
  if (c.kind == "wide_deep") return {true, false, true};
  return {c.use_first_order, c.use_fm, c.use_deep};
}

bool ModelConfig::reads_w() const {
  if (IsDeepFmKind(kind)) return DeepFmTermsOf(*this).first_order;
  return kind == "xdeepfm";  // its linear part; dcn, dcn_v2 and dlrm have none
}

bool ModelConfig::reads_v() const {
  if (IsDeepFmKind(kind)) {
    const DeepFmTerms t = DeepFmTermsOf(*this);
    return t.fm || t.deep;
  }
  return true;
}

Status ModelConfig::Validate() const {
  auto bad = [](const std::string& what) { return InvalidArgumentError("ModelConfig: " + what); };
  auto check_widths = [&](const char* name, const std::vector<int32_t>& v) -> Status {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] < 1)
        return bad(std::string(name) + "[" + std::to_string(i) + "] must be >= 1, got " + std::to_string(v[i]));
    return Status::OK();
  };
  CTRAIN_RETURN_IF_ERROR(CheckModelKind(kind));
  if (feature_size < 1) return bad("feature_size must be >= 1, got " + std::to_string(feature_size));
  if (field_size < 1) return bad("field_size must be >= 1, got " + std::to_string(field_size));
  if (oov_buckets && feature_size <= field_size)
    return bad("with oov_buckets, feature_size " + std::to_string(feature_size) + " must exceed field_size " +
               std::to_string(field_size) + " (the vocabulary, then one out-of-vocabulary row per field)");
  if (embedding_size < 1) return bad("embedding_size must be >= 1, got " + std::to_string(embedding_size));
  CTRAIN_RETURN_IF_ERROR(check_widths("deep_layers", deep_layers));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    return bad("dropout (drop probability) must be in [0, 1), got " + std::to_string(dropout));
  if (!(batch_norm_momentum >= 0.0f && batch_norm_momentum <= 1.0f))
    return bad("batch_norm_momentum must be in [0, 1], got " + std::to_string(batch_norm_momentum));
  if (!(batch_norm_epsilon > 0.0f)) return bad("batch_norm_epsilon must be > 0");
  if (!(l2_reg >= 0.0f) || !std::isfinite(l2_reg)) return bad("l2_reg must be finite and >= 0");
  if (kind == "deepfm" && !use_first_order && !use_fm && !use_deep)
    return bad("at least one of use_first_order/use_fm/use_deep");
  if (gemm_dtype != DataType::kF32 && gemm_dtype != DataType::kBF16)
    return bad("gemm_dtype must be f32 or bf16, got " + std::to_string(static_cast<int>(gemm_dtype)));
  if (cross_layers < 0) return bad("cross_layers must be >= 0, got " + std::to_string(cross_layers));
  if (low_rank < 0) return bad("low_rank must be >= 0 (0 = full rank), got " + std::to_string(low_rank));
  if (num_experts < 1) return bad("num_experts must be >= 1, got " + std::to_string(num_experts));
  if (num_experts > 1 && low_rank == 0)
    return bad("num_experts " + std::to_string(num_experts) + " needs low_rank > 0 (a mixture of low-rank experts)");
  if (model_structure != "parallel" && model_structure != "stacked")
    return bad("model_structure must be parallel or stacked, got '" + model_structure + "'");
  CTRAIN_RETURN_IF_ERROR(check_widths("cin_layer_units", cin_layer_units));
  if (kind == "xdeepfm" && cin_layer_units.empty()) return bad("cin_layer_units: xdeepfm needs at least one CIN layer");
  CTRAIN_RETURN_IF_ERROR(check_widths("bottom_mlp", bottom_mlp));
  CTRAIN_RETURN_IF_ERROR(check_widths("top_mlp", top_mlp));
  if (num_dense_fields < 0 || num_dense_fields > field_size)
    return bad("num_dense_fields must be in [0, field_size = " + std::to_string(field_size) + "], got " +
               std::to_string(num_dense_fields));
  CTRAIN_RETURN_IF_ERROR(EmbeddingInitOf(*this).status().WithContext("ModelConfig"));
  if (!numeric_embedding_initializer.empty() && num_dense_fields == 0)
    return bad("numeric_embedding_initializer needs num_dense_fields > 0 (the numeric fields' rows are ids 0..N-1)");
  if (kind == "dlrm" && !numeric_embedding_initializer.empty())
    return bad("numeric_embedding_initializer: dlrm does not embed its dense fields (they feed the bottom MLP)");
  if (kind == "dlrm" && num_dense_fields == 0 && field_size < 2)
    return bad("dlrm without dense fields (num_dense_fields 0) needs field_size >= 2: the dot interaction of one "
               "vector is empty and the top MLP would have no input");
  return Status::OK();
}

StatusOr<EmbeddingInit> EmbeddingInitOf(const ModelConfig& config) {
  EmbeddingInit init;
  CTRAIN_ASSIGN_OR_RETURN(init.rows, ParseEmbeddingInitializer(config.embedding_initializer, "embedding_initializer"));
  init.numeric = init.rows;
  if (!config.numeric_embedding_initializer.empty()) {
    CTRAIN_ASSIGN_OR_RETURN(init.numeric, ParseEmbeddingInitializer(config.numeric_embedding_initializer,
                                                                    "numeric_embedding_initializer"));
  }
  init.numeric_rows = std::min<int64_t>(config.num_dense_fields, config.feature_size);
  return init;
}

const std::vector<std::string>& ModelKinds() {
  static const auto* kinds =
      new std::vector<std::string>{"deepfm", "lr", "fm", "wide_deep", "dcn", "dcn_v2", "dlrm", "xdeepfm"};
  return *kinds;
}

Status CheckModelKind(std::string_view kind) {
  for (const std::string& k : ModelKinds())
    if (k == kind) return Status::OK();
  std::string known;
  for (const std::string& k : ModelKinds()) known += (known.empty() ? "" : ", ") + k;
  return InvalidArgumentError("unknown model '" + std::string(kind) + "' (models: " + known + ")");
}

StatusOr<std::unique_ptr<Model>> MakeModel(const ModelConfig& config) {
  CTRAIN_RETURN_IF_ERROR(CheckModelKind(config.kind));
  if (IsDeepFmKind(config.kind)) return std::unique_ptr<Model>(std::make_unique<DeepFM>(config));
  if (config.kind == "dcn" || config.kind == "dcn_v2") return std::unique_ptr<Model>(std::make_unique<DCN>(config));
  if (config.kind == "dlrm") return std::unique_ptr<Model>(std::make_unique<Dlrm>(config));
  if (config.kind == "xdeepfm") return std::unique_ptr<Model>(std::make_unique<XDeepFM>(config));
  return InvalidArgumentError("model '" + config.kind + "' has no implementation linked");
}

}  // namespace ctrain::model
