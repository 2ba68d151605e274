#include "ctrain/train/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "ctrain/data/synth.h"

namespace ctrain::train {
namespace {

Partitioner Make(const char* name, int64_t rows, int32_t shards) {
  StatusOr<Partitioner> p = Partitioner::Create(name, rows, shards);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

TEST(PartitionerTest, FixedSizeIsTensorFlowsContiguousPieces) {
  // tf.fixed_size_partitioner(3) on 10 rows: pieces of 4, 3, 3.
  Partitioner p = Make("fixed_size", 10, 3);
  EXPECT_EQ(p.ShardRows(0), 4);
  EXPECT_EQ(p.ShardRows(1), 3);
  EXPECT_EQ(p.ShardRows(2), 3);
  const std::vector<int32_t> want = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  for (int64_t id = 0; id < 10; ++id) EXPECT_EQ(p.ShardOf(id), want[id]) << id;
  EXPECT_EQ(p.LocalRow(4), 0);
  EXPECT_EQ(p.LocalRow(9), 2);
  EXPECT_EQ(p.GlobalId(2, 1), 8);
}

TEST(PartitionerTest, ModIsIdModShards) {
  Partitioner p = Make("mod", 10, 3);
  EXPECT_EQ(p.ShardRows(0), 4);  // 0 3 6 9
  EXPECT_EQ(p.ShardRows(1), 3);
  EXPECT_EQ(p.ShardRows(2), 3);
  EXPECT_EQ(p.ShardOf(7), 1);
  EXPECT_EQ(p.LocalRow(7), 2);
  EXPECT_EQ(p.GlobalId(1, 2), 7);
}

TEST(PartitionerTest, EveryIdRoundTripsAndLocalRowsKeepOrder) {
  for (const char* name : {"fixed_size", "mod"})
    for (int32_t S : {1, 2, 3, 7}) {
      Partitioner p = Make(name, 1001, S);
      int64_t total = 0;
      std::vector<int64_t> last(S, -1);
      for (int64_t id = 0; id < 1001; ++id) {
        const int32_t s = p.ShardOf(id);
        ASSERT_GE(s, 0);
        ASSERT_LT(s, S);
        const int64_t l = p.LocalRow(id);
        ASSERT_GE(l, 0);
        ASSERT_LT(l, p.ShardRows(s));
        ASSERT_EQ(p.GlobalId(s, l), id) << name << " S=" << S;
        ASSERT_GT(l, last[s]) << "local rows must increase with the id (sorted pushes stay sorted)";
        last[s] = l;
      }
      for (int32_t s = 0; s < S; ++s) total += p.ShardRows(s);
      EXPECT_EQ(total, 1001);
    }
}

TEST(PartitionerTest, Errors) {
  EXPECT_EQ(Partitioner::Create("div", 10, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Partitioner::Create("mod", 10, 0).status().code(), StatusCode::kInvalidArgument);
  StatusOr<Partitioner> p = Partitioner::Create("fixed_size", 2, 3);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "partitioner: 2 rows cannot fill 3 shards (every shard needs a row)");
}

// The balance criterion: rows per shard within 1 % of each other on
// the synthetic data (the seed config's id space), for both partitioners;
// also the distinct rows 20,000 rows touch per shard (printed; bounded for mod).
TEST(PartitionerTest, RowsPerShardWithinOnePercentOnSynthData) {
  data::SynthOptions so;
  so.rows = 20000;
  StatusOr<std::unique_ptr<data::SynthGenerator>> gen = data::SynthGenerator::Create(so);
  ASSERT_TRUE(gen.ok()) << gen.status().ToString();
  std::vector<int64_t> ids(so.field_size);
  std::vector<float> values(so.field_size);
  std::set<int64_t> touched;
  for (int64_t r = 0; r < so.rows; ++r) {
    float label;
    (*gen)->Row(r, &label, ids.data(), values.data());
    touched.insert(ids.begin(), ids.end());
  }
  for (const char* name : {"fixed_size", "mod"})
    for (int32_t S : {2, 4, 8}) {
      Partitioner p = Make(name, so.feature_size, S);
      std::vector<int64_t> held(S), seen(S, 0);
      for (int32_t s = 0; s < S; ++s) held[s] = p.ShardRows(s);
      for (int64_t id : touched) ++seen[p.ShardOf(id)];
      const auto [hmin, hmax] = std::minmax_element(held.begin(), held.end());
      EXPECT_LE(static_cast<double>(*hmax) / *hmin, 1.01) << name << " S=" << S;
      const auto [smin, smax] = std::minmax_element(seen.begin(), seen.end());
      std::printf("%s S=%d: rows held %lld..%lld, distinct rows touched %lld..%lld\n", name, S,
                  static_cast<long long>(*hmin), static_cast<long long>(*hmax), static_cast<long long>(*smin),
                  static_cast<long long>(*smax));
      // mod spreads the touched rows too, up to sampling noise (~8000 rows a shard at S=8: ~1 %);
      // fixed_size gives its first pieces more of each field's frequent low ids.
      if (std::string(name) == "mod") {
        EXPECT_LE(static_cast<double>(*smax) / *smin, 1.02) << "mod: touched rows per shard, S=" << S;
      }
    }
}

}  // namespace
}  // namespace ctrain::train
