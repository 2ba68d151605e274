// The tables' start (model/embedding_initializer.h): each spelling's
// distribution, the numeric fields' rows, determinism across row splits, the
// spellings' errors, and the config checks around them.
#include "ctrain/model/embedding_initializer.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/model/model.h"
#include "ctrain/model/random.h"

namespace ctrain::model {
namespace {

struct Moments {
  double mean = 0, stddev = 0, max_abs = 0;
};
Moments Of(const std::vector<float>& v, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, v.size());
  Moments m;
  double s = 0, s2 = 0;
  for (size_t i = from; i < to; ++i) {
    s += v[i];
    s2 += static_cast<double>(v[i]) * v[i];
    m.max_abs = std::max(m.max_abs, std::fabs(static_cast<double>(v[i])));
  }
  const double n = static_cast<double>(to - from);
  m.mean = s / n;
  m.stddev = std::sqrt(s2 / n - m.mean * m.mean);
  return m;
}

EmbeddingInit Init(std::string_view rows, std::string_view numeric = "", int64_t numeric_rows = 0) {
  EmbeddingInit init;
  init.rows = ParseEmbeddingInitializer(rows, "embedding_initializer").value();
  init.numeric = numeric.empty() ? init.rows : ParseEmbeddingInitializer(numeric, "numeric").value();
  init.numeric_rows = numeric_rows;
  return init;
}

TEST(EmbeddingInitializer, GlorotNormalIsTheSeedDeepFMsStartValueForValue) {
  // tf.glorot_normal_initializer over [feature_size, K]: truncated normal, stddev sqrt(2/(n+K))/0.8796...,
  // the draws of model/random.h's streams 0x57 (w) and 0x56 (V): the values checkpoints were trained from.
  const int64_t n = 300;
  const int32_t K = 4;
  std::vector<float> w(n), V(n * K);
  InitEmbeddings(9, n, K, w.data(), V.data());
  const double c = 0.87962566103423978;
  const uint64_t kw = StreamKey(9, 0x57), kv = StreamKey(9, 0x56);
  for (int64_t r = 0; r < n; ++r) {
    ASSERT_EQ(w[r], static_cast<float>(std::sqrt(1.0 / n) / c * TruncatedNormalAt(kw, r))) << r;
    for (int32_t k = 0; k < K; ++k)
      ASSERT_EQ(V[r * K + k], static_cast<float>(std::sqrt(2.0 / (n + K)) / c * TruncatedNormalAt(kv, r * K + k)));
  }
  const Moments m = Of(V);
  EXPECT_NEAR(m.stddev, std::sqrt(2.0 / (n + K)), 0.05 * std::sqrt(2.0 / (n + K)));
  EXPECT_LE(m.max_abs, 2 * std::sqrt(2.0 / (n + K)) / c + 1e-7);
}

TEST(EmbeddingInitializer, EachSpellingDrawsItsDistribution) {
  const int64_t n = 5000;
  const int32_t K = 16;
  std::vector<float> w(n), V(n * K);

  InitEmbeddings(3, n, K, w.data(), V.data(), Init("normal:1e-4"));
  Moments m = Of(V);
  EXPECT_NEAR(m.mean, 0, 3e-6);
  EXPECT_NEAR(m.stddev, 1e-4, 2e-6);
  EXPECT_GT(m.max_abs, 3.5e-4);  // untruncated: 80,000 draws reach beyond 3.5 sigma
  EXPECT_NEAR(Of(w).stddev, 1e-4, 5e-6);

  InitEmbeddings(3, n, K, w.data(), V.data(), Init("truncated_normal:0.5"));
  m = Of(V);
  EXPECT_LE(m.max_abs, 1.0);                       // [-2S, 2S]
  EXPECT_NEAR(m.stddev, 0.5 * 0.8796, 0.01);       // the truncated normal's spread
  EXPECT_NEAR(m.mean, 0, 0.01);

  InitEmbeddings(3, n, K, w.data(), V.data(), Init("uniform:0.3"));
  m = Of(V);
  EXPECT_LT(m.max_abs, 0.3);
  EXPECT_GT(m.max_abs, 0.2999);
  EXPECT_NEAR(m.stddev, 0.3 / std::sqrt(3.0), 0.003);
}

TEST(EmbeddingInitializer, TheNumericFieldsRowsStartTheirOwnWay) {
  const int64_t n = 2000, numeric = 13;
  const int32_t K = 16;
  std::vector<float> w(n), V(n * K), w_all(n), V_all(n * K);
  InitEmbeddings(5, n, K, w.data(), V.data(), Init("normal:1e-4", "normal:0.05", numeric));
  InitEmbeddings(5, n, K, w_all.data(), V_all.data(), Init("normal:1e-4"));
  // Rows [0, 13): normal(0.05); the rest exactly as with one initializer for every row.
  EXPECT_NEAR(Of(V, 0, numeric * K).stddev, 0.05, 0.01);
  EXPECT_NEAR(Of(V, numeric * K).stddev, 1e-4, 3e-6);
  for (int64_t i = numeric * K; i < n * K; ++i) ASSERT_EQ(V[i], V_all[i]);
  for (int64_t r = numeric; r < n; ++r) ASSERT_EQ(w[r], w_all[r]);
  // A numeric row is the rows' draw scaled: the same stream and counter, another spread.
  EXPECT_FLOAT_EQ(V[3 * K + 2] / 0.05f, V_all[3 * K + 2] / 1e-4f);
  EXPECT_FLOAT_EQ(w[7] / 0.05f, w_all[7] / 1e-4f);
}

TEST(EmbeddingInitializer, AShardsRowsAreTheWholeTablesRows) {
  // A parameter server initialises its rows alone (ps/shard.cc): any split into calls gives the same bits.
  const int64_t n = 1000;
  const int32_t K = 8;
  for (const char* spec : {"glorot_normal", "normal:0.01", "truncated_normal:0.02", "uniform:0.05"}) {
    const EmbeddingInit init = Init(spec, "uniform:0.7", 11);
    std::vector<float> w(n), V(n * K);
    InitEmbeddings(17, n, K, w.data(), V.data(), init);
    for (int64_t lo : {0, 5, 11, 300}) {
      const int64_t rows = std::min<int64_t>(257, n - lo);
      std::vector<float> ws(rows), Vs(rows * K);
      InitEmbeddingRows(17, n, K, lo, rows, ws.data(), Vs.data(), init);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(ws[r], w[lo + r]) << spec << " row " << lo + r;
        for (int32_t k = 0; k < K; ++k) ASSERT_EQ(Vs[r * K + k], V[(lo + r) * K + k]) << spec;
      }
    }
  }
}

TEST(EmbeddingInitializer, SpellingsRoundTripAndBadOnesNameTheOption) {
  for (const char* spec : {"glorot_normal", "normal:1e-04", "normal:0.01", "truncated_normal:0.02", "uniform:0.5"}) {
    StatusOr<EmbeddingInitializer> p = ParseEmbeddingInitializer(spec, "embedding_initializer");
    ASSERT_TRUE(p.ok()) << spec << ": " << p.status().ToString();
    EXPECT_EQ(ToString(*p), spec);
  }
  EXPECT_EQ(ToString(ParseEmbeddingInitializer("normal:0.0001", "x").value()), "normal:1e-04");  // shortest form
  struct Bad {
    const char* spec;
    const char* why;
  };
  for (const Bad& b : {Bad{"xavier", "unknown initializer 'xavier'"}, Bad{"normal", "normal needs its scale"},
                       Bad{"normal:", "the scale '' is not a number"}, Bad{"normal:abc", "is not a number"},
                       Bad{"normal:1e-4x", "is not a number"}, Bad{"uniform:0", "finite and > 0"},
                       Bad{"normal:-1", "finite and > 0"}, Bad{"normal:inf", "finite and > 0"},
                       Bad{"glorot_normal:1", "glorot_normal takes no scale"}, Bad{"", "unknown initializer ''"}}) {
    StatusOr<EmbeddingInitializer> p = ParseEmbeddingInitializer(b.spec, "--embedding-initializer");
    ASSERT_FALSE(p.ok()) << b.spec;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    const std::string msg(p.status().message());
    EXPECT_EQ(msg.rfind(std::string("--embedding-initializer '") + b.spec + "': ", 0), 0u) << msg;
    EXPECT_NE(msg.find(b.why), std::string::npos) << msg;
    EXPECT_NE(msg.find("glorot_normal, normal:S, truncated_normal:S or uniform:L"), std::string::npos) << msg;
  }
}

TEST(EmbeddingInitializer, TheModelConfigChecksItsInitializers) {
  ModelConfig c;
  c.feature_size = 100;
  c.field_size = 5;
  c.embedding_initializer = "normal:1e-4";
  ASSERT_TRUE(c.Validate().ok());
  StatusOr<EmbeddingInit> init = EmbeddingInitOf(c);
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(ToString(init->rows), "normal:1e-04");
  EXPECT_EQ(ToString(init->numeric), "normal:1e-04");  // "" = the rows' initializer
  EXPECT_EQ(init->numeric_rows, 0);

  c.numeric_embedding_initializer = "normal:0.05";
  EXPECT_EQ(c.Validate().message(),
            "ModelConfig: numeric_embedding_initializer needs num_dense_fields > 0 (the numeric fields' rows are ids "
            "0..N-1)");
  c.num_dense_fields = 3;
  ASSERT_TRUE(c.Validate().ok());
  EXPECT_EQ(EmbeddingInitOf(c)->numeric_rows, 3);
  EXPECT_EQ(ToString(EmbeddingInitOf(c)->numeric), "normal:0.05");

  c.kind = "dlrm";
  EXPECT_NE(c.Validate().message().find("numeric_embedding_initializer: dlrm does not embed its dense fields"),
            std::string::npos);
  c.numeric_embedding_initializer.clear();
  EXPECT_TRUE(c.Validate().ok());

  c.embedding_initializer = "gaussian:1";
  EXPECT_NE(c.Validate().message().find("embedding_initializer 'gaussian:1': unknown initializer 'gaussian'"),
            std::string::npos)
      << c.Validate().message();
}

}  // namespace
}  // namespace ctrain::model
