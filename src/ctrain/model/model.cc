#include "ctrain/model/model.h"

#include <cmath>

#include "ctrain/model/deepfm.h"
#include "ctrain/model/layers/embedding_lookup.h"
#include "ctrain/model/random.h"

namespace ctrain::model {
namespace {

constexpr double kTruncatedNormalStddevCorrection = 0.87962566103423978;  // stddev of N(0,1) truncated to [-2, 2]
constexpr uint64_t kStreamW = 0x57;  // stream ids of the embedding initialisers
constexpr uint64_t kStreamV = 0x56;

}  // namespace

void UniqueIds(const data::Batch& batch, std::vector<int64_t>* unique_ids, std::vector<int32_t>* index) {
  ComputeUniqueIds(batch.ids, unique_ids, index);
}

void InitEmbeddings(uint64_t seed, int64_t feature_size, int32_t K, float* w, float* V) {
  InitEmbeddingRows(seed, feature_size, K, 0, feature_size, w, V);
}

void InitEmbeddingRows(uint64_t seed, int64_t feature_size, int32_t K, int64_t first_row, int64_t num_rows, float* w,
                       float* V) {
  const double sw = std::sqrt(1.0 / static_cast<double>(feature_size)) / kTruncatedNormalStddevCorrection;
  const double sv = std::sqrt(2.0 / static_cast<double>(feature_size + K)) / kTruncatedNormalStddevCorrection;
  const uint64_t kw = StreamKey(seed, kStreamW), kv = StreamKey(seed, kStreamV);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint64_t row = static_cast<uint64_t>(first_row + r);
    if (w != nullptr) w[r] = static_cast<float>(sw * TruncatedNormalAt(kw, row));
    if (V != nullptr)
      for (int32_t k = 0; k < K; ++k)
        V[r * K + k] = static_cast<float>(sv * TruncatedNormalAt(kv, row * static_cast<uint64_t>(K) + k));
  }
}

const std::vector<std::string>& ModelKinds() {
  static const auto* kinds = new std::vector<std::string>{"deepfm"};
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
  return std::unique_ptr<Model>(std::make_unique<DeepFM>(config));  // the one kind so far
}

}  // namespace ctrain::model
