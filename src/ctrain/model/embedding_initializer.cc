#include "ctrain/model/embedding_initializer.h"

#include <charconv>
#include <cmath>

#include "ctrain/model/random.h"

namespace ctrain::model {
namespace {

constexpr double kTruncatedNormalStddevCorrection = 0.87962566103423978;  // stddev of N(0,1) truncated to [-2, 2]
constexpr uint64_t kStreamW = 0x57;  // stream ids of the embedding initialisers
constexpr uint64_t kStreamV = 0x56;
constexpr std::string_view kSpellings = "glorot_normal, normal:S, truncated_normal:S or uniform:L";

// One table's entries under one initializer; `counter` is the entry's index (the row for w, row * K + k for V).
struct Draw {
  EmbeddingInitializer init;
  double glorot_stddev = 0;
  uint64_t key = 0;

  double At(uint64_t counter) const {
    switch (init.kind) {
      case EmbeddingInitializer::Kind::kGlorotNormal: return glorot_stddev * TruncatedNormalAt(key, counter);
      case EmbeddingInitializer::Kind::kNormal: return init.scale * NormalAt(key, counter);
      case EmbeddingInitializer::Kind::kTruncatedNormal: return init.scale * TruncatedNormalAt(key, counter);
      case EmbeddingInitializer::Kind::kUniform:
        return init.scale * (2.0 * UniformOpen(CounterBits(key, counter)) - 1.0);
    }
    return 0.0;
  }
};

}  // namespace

StatusOr<EmbeddingInitializer> ParseEmbeddingInitializer(std::string_view spec, std::string_view option) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(std::string(option) + " '" + std::string(spec) + "': " + why + " (expected " +
                                std::string(kSpellings) + ", e.g. normal:1e-4)");
  };
  EmbeddingInitializer init;
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  if (name == "glorot_normal") {
    if (colon != std::string_view::npos) return bad("glorot_normal takes no scale");
    return init;
  }
  if (name == "normal") init.kind = EmbeddingInitializer::Kind::kNormal;
  else if (name == "truncated_normal") init.kind = EmbeddingInitializer::Kind::kTruncatedNormal;
  else if (name == "uniform") init.kind = EmbeddingInitializer::Kind::kUniform;
  else return bad("unknown initializer '" + std::string(name) + "'");
  if (colon == std::string_view::npos) return bad(std::string(name) + " needs its scale after a colon");
  const std::string_view num = spec.substr(colon + 1);
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), init.scale);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size())
    return bad("the scale '" + std::string(num) + "' is not a number");
  if (!std::isfinite(init.scale) || !(init.scale > 0)) return bad("the scale must be finite and > 0");
  return init;
}

std::string ToString(const EmbeddingInitializer& init) {
  const char* name = "glorot_normal";
  switch (init.kind) {
    case EmbeddingInitializer::Kind::kGlorotNormal: return name;
    case EmbeddingInitializer::Kind::kNormal: name = "normal"; break;
    case EmbeddingInitializer::Kind::kTruncatedNormal: name = "truncated_normal"; break;
    case EmbeddingInitializer::Kind::kUniform: name = "uniform"; break;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), init.scale);  // shortest round-trip form
  return std::string(name) + ":" + std::string(buf, r.ptr);
}

void InitEmbeddings(uint64_t seed, int64_t feature_size, int32_t K, float* w, float* V, const EmbeddingInit& init) {
  InitEmbeddingRows(seed, feature_size, K, 0, feature_size, w, V, init);
}

void InitEmbeddingRows(uint64_t seed, int64_t feature_size, int32_t K, int64_t first_row, int64_t num_rows, float* w,
                       float* V, const EmbeddingInit& init) {
  const double n = static_cast<double>(feature_size);
  const uint64_t kw = StreamKey(seed, kStreamW), kv = StreamKey(seed, kStreamV);
  const double glorot_w = std::sqrt(1.0 / n) / kTruncatedNormalStddevCorrection;
  const double glorot_v = std::sqrt(2.0 / (n + K)) / kTruncatedNormalStddevCorrection;
  const Draw rows_w{init.rows, glorot_w, kw}, rows_v{init.rows, glorot_v, kv};
  const Draw numeric_w{init.numeric, glorot_w, kw}, numeric_v{init.numeric, glorot_v, kv};
#pragma omp parallel for schedule(static) if (num_rows >= 4096)
  for (int64_t r = 0; r < num_rows; ++r) {
    const int64_t id = first_row + r;
    const bool numeric = id < init.numeric_rows;
    const Draw& dw = numeric ? numeric_w : rows_w;
    const Draw& dv = numeric ? numeric_v : rows_v;
    const uint64_t row = static_cast<uint64_t>(id);
    if (w != nullptr) w[r] = static_cast<float>(dw.At(row));
    if (V != nullptr)
      for (int32_t k = 0; k < K; ++k) V[r * K + k] = static_cast<float>(dv.At(row * static_cast<uint64_t>(K) + k));
  }
}

}  // namespace ctrain::model
