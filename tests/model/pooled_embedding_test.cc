// Multi-hot (pooled) embedding kernels: naive-loop forward reference and
// finite-difference gradients, with empty fields and ids repeated inside a field.
#include "ctrain/model/layers/pooled_embedding.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/grad_check.h"

namespace ctrain::model {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

// Random ragged layout: each of the S slots holds 0..max_len ids from [0, range).
struct Ragged {
  std::vector<int64_t> splits{0};
  std::vector<int64_t> ids;
};
Ragged RandomRagged(int64_t S, int32_t max_len, int64_t range, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Ragged r;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t n = static_cast<int64_t>(rng() % (max_len + 1));
    for (int64_t i = 0; i < n; ++i) r.ids.push_back(static_cast<int64_t>(rng() % range));
    r.splits.push_back(static_cast<int64_t>(r.ids.size()));
  }
  return r;
}

void CheckPooled(int64_t B, int32_t F, int32_t K, int32_t max_len, int64_t range, uint32_t seed) {
  const std::string repro = "pooled_embedding B=" + std::to_string(B) + " F=" + std::to_string(F) +
                            " K=" + std::to_string(K) + " max_len=" + std::to_string(max_len) +
                            " range=" + std::to_string(range) + " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  const int64_t S = B * F;
  const Ragged rg = RandomRagged(S, max_len, range, seed);
  const int64_t nnz = static_cast<int64_t>(rg.ids.size());
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  ComputeUniqueIds(rg.ids, &u, &idx);
  const int64_t U = static_cast<int64_t>(u.size());
  auto rows = RandomVector(U * K, seed + 1);
  auto w = RandomVector(U, seed + 2);
  const auto values = RandomVector(nnz, seed + 3, 0.1f, 2.0f);

  // Forward vs a naive loop (empty slots are zero vectors).
  std::vector<float> e(S * K, 7.0f), y(B, 7.0f);
  PooledEmbeddingForward(S, rg.splits.data(), K, idx.data(), values.data(), rows.data(), e.data());
  PooledFirstOrderForward(B, F, rg.splits.data(), idx.data(), values.data(), w.data(), y.data());
  int64_t empty = 0;
  for (int64_t s = 0; s < S; ++s) {
    empty += rg.splits[s] == rg.splits[s + 1];
    for (int32_t k = 0; k < K; ++k) {
      double ref = 0;
      for (int64_t p = rg.splits[s]; p < rg.splits[s + 1]; ++p)
        ref += static_cast<double>(rows[idx[p] * K + k]) * values[p];
      ASSERT_NEAR(e[s * K + k], ref, 1e-5 * (1 + std::fabs(ref))) << "slot " << s << " k " << k;
    }
  }
  if (max_len > 1 && S > 8) {
    EXPECT_GT(empty, 0) << "test setup: the layout should hold empty fields";
  }
  for (int64_t b = 0; b < B; ++b) {
    double ref = 0;
    for (int64_t p = rg.splits[b * F]; p < rg.splits[(b + 1) * F]; ++p)
      ref += static_cast<double>(w[idx[p]]) * values[p];
    ASSERT_NEAR(y[b], ref, 1e-5 * (1 + std::fabs(ref)));
  }

  // Backward vs central differences of sum(r .* e) and sum(ry .* y).
  std::vector<int32_t> slot_of(nnz, -1);
  SlotOfOccurrence(S, rg.splits.data(), slot_of.data());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t p = rg.splits[s]; p < rg.splits[s + 1]; ++p) ASSERT_EQ(slot_of[p], s);
  const auto r = RandomVector(S * K, seed + 4);
  const auto ry = RandomVector(B, seed + 5);
  RowPositions pos;
  pos.Build(idx, U);
  std::vector<float> d_rows(U * K, 123.0f), d_w(U, 123.0f);
  PooledEmbeddingBackward(pos, slot_of.data(), K, values.data(), r.data(), d_rows.data());
  PooledFirstOrderBackward(pos, slot_of.data(), F, values.data(), ry.data(), d_w.data());
  auto fe = [&] {
    PooledEmbeddingForward(S, rg.splits.data(), K, idx.data(), values.data(), rows.data(), e.data());
    return Dot(r, e.data(), e.size());
  };
  auto fy = [&] {
    PooledFirstOrderForward(B, F, rg.splits.data(), idx.data(), values.data(), w.data(), y.data());
    return Dot(ry, y.data(), y.size());
  };
  EXPECT_TRUE(CheckGradient(repro + " rows", &rows, d_rows, fe, 0.25, 1e-3, 1e-3));
  EXPECT_TRUE(CheckGradient(repro + " w", &w, d_w, fy, 0.25, 1e-3, 1e-3));
}

TEST(PooledEmbedding, OneByOne) { CheckPooled(1, 1, 1, 1, 3, 21); }
TEST(PooledEmbedding, EmptyFieldsAndRepeats) { CheckPooled(6, 3, 4, 5, 4, 22); }
TEST(PooledEmbedding, OddShapes) { CheckPooled(7, 13, 5, 3, 40, 23); }
TEST(PooledEmbedding, LongHistories) { CheckPooled(4, 2, 8, 50, 30, 24); }

// One id per slot: the pooled kernels give exactly the one-hot kernels' bits.
TEST(PooledEmbedding, OneIdPerFieldEqualsOneHotKernels) {
  const int64_t B = 5;
  const int32_t F = 7, K = 4;
  std::vector<int64_t> ids(B * F), splits(B * F + 1);
  std::mt19937_64 rng(9);
  for (int64_t p = 0; p < B * F; ++p) {
    ids[p] = static_cast<int64_t>(rng() % 11);
    splits[p + 1] = p + 1;
  }
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  ComputeUniqueIds(ids, &u, &idx);
  const int64_t U = static_cast<int64_t>(u.size());
  const auto rows = RandomVector(U * K, 1), w = RandomVector(U, 2), values = RandomVector(B * F, 3);
  std::vector<float> e1(B * F * K), e2(B * F * K), y1(B), y2(B);
  EmbeddingLookupForward(B * F, K, idx.data(), values.data(), rows.data(), e1.data());
  PooledEmbeddingForward(B * F, splits.data(), K, idx.data(), values.data(), rows.data(), e2.data());
  FirstOrderForward(B, F, idx.data(), values.data(), w.data(), y1.data());
  PooledFirstOrderForward(B, F, splits.data(), idx.data(), values.data(), w.data(), y2.data());
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(y1, y2);
  RowPositions pos;
  pos.Build(idx, U);
  std::vector<int32_t> slot_of(B * F);
  SlotOfOccurrence(B * F, splits.data(), slot_of.data());
  const auto de = RandomVector(B * F * K, 4), dy = RandomVector(B, 5);
  std::vector<float> g1(U * K), g2(U * K), gw1(U), gw2(U);
  EmbeddingLookupBackward(pos, K, values.data(), de.data(), g1.data());
  PooledEmbeddingBackward(pos, slot_of.data(), K, values.data(), de.data(), g2.data());
  FirstOrderBackward(pos, F, values.data(), dy.data(), gw1.data());
  PooledFirstOrderBackward(pos, slot_of.data(), F, values.data(), dy.data(), gw2.data());
  EXPECT_EQ(g1, g2);
  EXPECT_EQ(gw1, gw2);
}

}  // namespace
}  // namespace ctrain::model
