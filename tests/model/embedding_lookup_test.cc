#include "ctrain/model/layers/embedding_lookup.h"

#include <algorithm>
#include <map>
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

std::vector<int64_t> RandomIds(size_t n, int64_t range, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % range) - range / 3;  // includes negatives
  return ids;
}

TEST(UniqueIds, SortedWithDuplicatesInRowAndAcrossBatch) {
  const std::vector<int64_t> ids = {7, 3, 7, 100, 3, 3, -5, 7, 0};
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  ComputeUniqueIds(ids, &u, &idx);
  EXPECT_EQ(u, (std::vector<int64_t>{-5, 0, 3, 7, 100}));
  EXPECT_EQ(idx, (std::vector<int32_t>{3, 2, 3, 4, 2, 2, 0, 3, 1}));
}

TEST(UniqueIds, MatchesStdMapOnLargeInputAndReusesBuffers) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto ids = RandomIds(39 * 1024, 5000 * seed, seed);
    std::vector<int64_t> u;
    std::vector<int32_t> idx;
    ComputeUniqueIds(ids, &u, &idx);
    std::map<int64_t, int32_t> ref;
    for (int64_t id : ids) ref[id] = 0;
    int32_t r = 0;
    for (auto& [id, pos] : ref) pos = r++;
    ASSERT_EQ(u.size(), ref.size());
    size_t i = 0;
    for (auto& [id, pos] : ref) EXPECT_EQ(u[i++], id);
    for (size_t p = 0; p < ids.size(); ++p) ASSERT_EQ(idx[p], ref[ids[p]]) << "p=" << p;
  }
}

TEST(UniqueIds, Empty) {
  std::vector<int64_t> u = {1};
  std::vector<int32_t> idx = {1};
  ComputeUniqueIds({}, &u, &idx);
  EXPECT_TRUE(u.empty());
  EXPECT_TRUE(idx.empty());
}

TEST(RowPositions, CsrInAscendingOrder) {
  RowPositions pos;
  const std::vector<int32_t> index = {2, 0, 2, 1, 2, 0};
  pos.Build(index, 4);
  EXPECT_EQ(pos.offsets, (std::vector<int32_t>{0, 2, 3, 6, 6}));
  EXPECT_EQ(pos.positions, (std::vector<int32_t>{1, 5, 3, 0, 2, 4}));
}

void CheckLookup(int64_t B, int32_t F, int32_t K, int64_t range, uint32_t seed) {
  const std::string repro = "embedding_lookup B=" + std::to_string(B) + " F=" + std::to_string(F) +
                            " K=" + std::to_string(K) + " range=" + std::to_string(range) +
                            " seed=" + std::to_string(seed);
  SCOPED_TRACE(repro);
  const int64_t n = B * F;
  const auto ids = RandomIds(n, range, seed);
  std::vector<int64_t> u;
  std::vector<int32_t> idx;
  ComputeUniqueIds(ids, &u, &idx);
  const int64_t U = u.size();
  auto rows = RandomVector(U * K, seed + 1);
  auto w = RandomVector(U, seed + 2);
  auto values = RandomVector(n, seed + 3, 0.1f, 2.0f);

  // Forward vs naive loop.
  std::vector<float> e(n * K), y(B);
  EmbeddingLookupForward(n, K, idx.data(), values.data(), rows.data(), e.data());
  FirstOrderForward(B, F, idx.data(), values.data(), w.data(), y.data());
  for (int64_t p = 0; p < n; ++p)
    for (int32_t k = 0; k < K; ++k) ASSERT_EQ(e[p * K + k], rows[idx[p] * K + k] * values[p]);
  for (int64_t b = 0; b < B; ++b) {
    double s = 0;
    for (int32_t f = 0; f < F; ++f) s += static_cast<double>(w[idx[b * F + f]]) * values[b * F + f];
    ASSERT_NEAR(y[b], s, 1e-5 * (1 + std::fabs(s)));
  }

  // Backward vs finite differences of sum(r .* e) and sum(ry .* y).
  const auto r = RandomVector(n * K, seed + 4);
  const auto ry = RandomVector(B, seed + 5);
  RowPositions pos;
  pos.Build(idx, U);
  std::vector<float> d_rows(U * K, 123.0f), d_w(U, 123.0f);
  EmbeddingLookupBackward(pos, K, values.data(), r.data(), d_rows.data());
  FirstOrderBackward(pos, F, values.data(), ry.data(), d_w.data());
  auto fe = [&] {
    EmbeddingLookupForward(n, K, idx.data(), values.data(), rows.data(), e.data());
    return Dot(r, e.data(), e.size());
  };
  auto fy = [&] {
    FirstOrderForward(B, F, idx.data(), values.data(), w.data(), y.data());
    return Dot(ry, y.data(), y.size());
  };
  // Both maps are linear, so central differences are exact up to rounding for any step.
  EXPECT_TRUE(CheckGradient(repro, &rows, d_rows, fe, 0.25, 1e-3, 1e-3));
  EXPECT_TRUE(CheckGradient(repro, &w, d_w, fy, 0.25, 1e-3, 1e-3));
}

TEST(EmbeddingLookup, OneByOne) { CheckLookup(1, 1, 1, 3, 11); }
TEST(EmbeddingLookup, OddShapes) { CheckLookup(7, 13, 5, 20, 12); }
TEST(EmbeddingLookup, ManyDuplicates) { CheckLookup(9, 4, 3, 2, 13); }
TEST(EmbeddingLookup, Wide) { CheckLookup(16, 39, 32, 300, 14); }

}  // namespace
}  // namespace ctrain::model
