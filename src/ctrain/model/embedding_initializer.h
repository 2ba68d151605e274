// How the embedding tables start: w [feature_size] (first-order weights) and
// V [feature_size, K] (embeddings), the option `embedding_initializer` (and
// `numeric_embedding_initializer` for the numeric fields' rows).
//
// Spellings (ParseEmbeddingInitializer), the names of Keras/TF initialisers:
//   glorot_normal          truncated normal (2 sigma), stddev sqrt(1/n)/0.87962566
//                          (tf.glorot_normal_initializer over the whole table: n = feature_size
//                          for w, (feature_size + K)/2 for V). The seed DeepFM's start, ctrain's
//                          default. Its spread falls as the table grows: 0.046 at 922 rows, 0.0009
//                          at Criteo's 2.6 M.
//   normal:S               N(0, S^2), S > 0: FuxiCTR's and DeepCTR's embedding start is normal:1e-4
//                          (FuxiCTR `embedding_initializer: partial(nn.init.normal_, std=1e-4)`,
//                          DeepCTR RandomNormal(stddev=1e-4)).
//   truncated_normal:S     N(0, S^2) resampled to [-2S, 2S] (tf.truncated_normal_initializer(stddev=S)).
//   uniform:L              U(-L, L), L > 0 (tf.random_uniform_initializer(-L, L); TorchRec's tables start
//                          at uniform:sqrt(1/rows)).
// Every value is a pure function of (seed, row, k) (model/random.h), so a
// parameter-server shard computes exactly the rows a single process would.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::model {

struct EmbeddingInitializer {
  enum class Kind { kGlorotNormal, kNormal, kTruncatedNormal, kUniform };
  Kind kind = Kind::kGlorotNormal;
  double scale = 0;  // stddev (normal, truncated_normal), limit (uniform); unused by glorot_normal
};

// InvalidArgument naming `option` and the spellings for anything else (an
// unknown name, a missing, non-numeric, non-finite or non-positive scale).
StatusOr<EmbeddingInitializer> ParseEmbeddingInitializer(std::string_view spec, std::string_view option);
// The canonical spelling ("glorot_normal", "normal:1e-04", ...): Parse(ToString(x)) == x.
std::string ToString(const EmbeddingInitializer& init);

// Which rows start how: rows [0, numeric_rows) with `numeric`, the rest with `rows`.
// numeric_rows are the numeric fields' rows in ctrain's Criteo layout, where numeric field i
// has id i (ModelConfig::num_dense_fields; io/criteo.h).
struct EmbeddingInit {
  EmbeddingInitializer rows;
  EmbeddingInitializer numeric;
  int64_t numeric_rows = 0;
};

// Initialises rows [first_row, first_row + num_rows) of the tables of
// feature_size rows: w [num_rows], V [num_rows, K]; either may be null.
// Deterministic in (seed, row, k) whatever the thread count or the split
// into calls.
void InitEmbeddingRows(uint64_t seed, int64_t feature_size, int32_t K, int64_t first_row, int64_t num_rows, float* w,
                       float* V, const EmbeddingInit& init = {});
// The whole tables: w [feature_size], V [feature_size, K].
void InitEmbeddings(uint64_t seed, int64_t feature_size, int32_t K, float* w, float* V,
                    const EmbeddingInit& init = {});

}  // namespace ctrain::model
