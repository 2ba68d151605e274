#include "ctrain/train/sharded_checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>

#include "ctrain/train/checkpoint.h"
#include "ctrain/train/partitioner.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

// Writes S shard files of a [10] w and [10, 2] V table whose values are their global ids
// (w[id] = id, V[id, k] = 100 id + k), plus a dense tensor on shard 0, and the manifest.
// `drop_v_from`: shards >= it leave V out (a damaged save).
void WriteShards(const std::string& dir, const std::string& part_name, int32_t S, int32_t drop_v_from = 1 << 30) {
  Partitioner p = *Partitioner::Create(part_name, 10, S);
  nlohmann::json files = nlohmann::json::array();
  for (int32_t s = 0; s < S; ++s) {
    const int64_t n = p.ShardRows(s);
    std::vector<float> w(n), v(n * 2);
    for (int64_t r = 0; r < n; ++r) {
      const int64_t id = p.GlobalId(s, r);
      w[r] = static_cast<float>(id);
      v[r * 2] = 100.0f * id, v[r * 2 + 1] = 100.0f * id + 1;
    }
    std::vector<float> bias = {42.0f};
    std::vector<TensorRef> refs = {TensorRef::F32("embeddings/w", {n}, w.data())};
    if (s < drop_v_from) refs.push_back(TensorRef::F32("embeddings/V", {n, 2}, v.data()));
    if (s == 0) refs.push_back(TensorRef::F32("fm_bias", {1}, bias.data()));
    nlohmann::json meta{{"format", kShardFormat}, {"shard", s}, {"num_shards", S}, {"partitioner", part_name},
                        {"feature_size", 10}};
    const std::string sd = dir + "/" + ShardDirName(s, S);
    ASSERT_TRUE(SaveCheckpoint(sd, 7, refs, meta).ok());
    files.push_back(ShardDirName(s, S) + "/" + CheckpointFileName(7));
  }
  nlohmann::json m{{"format", kShardedManifestFormat}, {"step", 7}, {"partitioner", part_name},
                   {"num_shards", S}, {"feature_size", 10}, {"shards", files}, {"meta", {{"global_step", 7}}}};
  ASSERT_TRUE(WriteShardedManifest(dir, m).ok());
}

TEST(ShardedCheckpointTest, ShardsAreAssembledIntoTheLocalTensors) {
  for (const char* part : {"fixed_size", "mod"}) {
    const std::string dir = ctrain::testing::TestTempDir("sharded_ckpt", part);
    WriteShards(dir, part, 3);
    auto ck = ReadShardedCheckpoint(dir);
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    ASSERT_TRUE(ck->has_value());
    EXPECT_EQ((*ck)->step, 7);
    EXPECT_EQ((*ck)->meta["global_step"], 7);
    const NamedTensor* w = (*ck)->ckpt.Find("embeddings/w");
    const NamedTensor* v = (*ck)->ckpt.Find("embeddings/V");
    const NamedTensor* b = (*ck)->ckpt.Find("fm_bias");
    ASSERT_TRUE(w && v && b);
    EXPECT_EQ(w->shape, (std::vector<int64_t>{10}));
    EXPECT_EQ(v->shape, (std::vector<int64_t>{10, 2}));
    for (int id = 0; id < 10; ++id) {
      EXPECT_EQ(w->f32[id], id) << part;
      EXPECT_EQ(v->f32[id * 2 + 1], 100 * id + 1) << part;
    }
    EXPECT_EQ(b->f32, std::vector<float>{42.0f});
    // ReadTrainerCheckpoint falls back to it (no local checkpoint index in dir).
    auto via = ReadTrainerCheckpoint(dir);
    ASSERT_TRUE(via.ok() && via->has_value());
    EXPECT_EQ((*via)->path, dir + "/" + kShardedManifestName);
  }
}

TEST(ShardedCheckpointTest, ManifestEntriesAreRelativeWhateverTheSlashes) {
  // A --model-dir with a trailing slash once gave "/ps-shard-00000-of-00002/ckpt-40.bin".
  const std::string file = "/data/run/ps-shard-00000-of-00002/ckpt-40.bin";
  const std::string doubled = "/data/run//ps-shard-00000-of-00002/ckpt-40.bin";  // "run/" + "/" + ...
  for (const char* dir : {"/data/run", "/data/run/", "/data/run//", "/data/./run/"})
    for (const std::string& f : {file, doubled})
      EXPECT_EQ(ShardManifestEntry(dir, f), "ps-shard-00000-of-00002/ckpt-40.bin") << dir << " " << f;
  EXPECT_EQ(ShardManifestEntry("/data/other/", file), file);  // outside model_dir: absolute
  EXPECT_EQ(ShardManifestEntry("/data/run2", file), file);
}

TEST(ShardedCheckpointTest, ReadsWithATrailingSlashAndOldRootedEntries) {
  const std::string dir = ctrain::testing::TestTempDir("sharded_ckpt", "slash");
  WriteShards(dir, "mod", 2);
  auto ck = ReadShardedCheckpoint(dir + "/");
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  ASSERT_TRUE(ck->has_value());
  EXPECT_EQ((*ck)->ckpt.Find("embeddings/w")->f32[9], 9.0f);
  // A manifest written by the old code for "--model-dir run/": entries rooted at '/'.
  nlohmann::json files = nlohmann::json::array();
  for (int s = 0; s < 2; ++s) files.push_back("/" + ShardDirName(s, 2) + "/" + CheckpointFileName(7));
  nlohmann::json m{{"format", kShardedManifestFormat}, {"step", 7}, {"partitioner", "mod"},
                   {"num_shards", 2}, {"feature_size", 10}, {"shards", files}, {"meta", {{"global_step", 7}}}};
  ASSERT_TRUE(WriteShardedManifest(dir, m).ok());
  for (const std::string& d : {dir, dir + "/"}) {
    auto old = ReadShardedCheckpoint(d);
    ASSERT_TRUE(old.ok()) << old.status().ToString();
    ASSERT_TRUE(old->has_value());
    EXPECT_EQ((*old)->ckpt.Find("embeddings/V")->f32[5 * 2 + 1], 501.0f);
  }
}

TEST(ShardedCheckpointTest, NoManifestIsNoCheckpoint) {
  const std::string dir = ctrain::testing::TestTempDir("sharded_ckpt", "none");
  auto ck = ReadShardedCheckpoint(dir);
  ASSERT_TRUE(ck.ok());
  EXPECT_FALSE(ck->has_value());
}

TEST(ShardedCheckpointTest, DamageIsNamed) {
  const std::string dir = ctrain::testing::TestTempDir("sharded_ckpt", "damage");
  WriteShards(dir, "mod", 2);
  const std::string mpath = dir + "/" + kShardedManifestName;
  {  // a shard file that is another shard's
    std::ifstream in(mpath);
    nlohmann::json m = nlohmann::json::parse(in);
    m["shards"][1] = m["shards"][0];
    ASSERT_TRUE(WriteShardedManifest(dir, m).ok());
  }
  auto ck = ReadShardedCheckpoint(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ck.status().ToString().find("ps-shard-00000-of-00002/ckpt-7.bin: not shard 1 of 2 (mod, feature_size 10)"),
            std::string::npos)
      << ck.status().ToString();
  std::ofstream(mpath) << "{ not json";
  ck = ReadShardedCheckpoint(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ck.status().ToString().find(mpath), std::string::npos) << ck.status().ToString();
  std::ofstream(mpath) << nlohmann::json{{"format", kShardedManifestFormat}, {"step", 1}, {"partitioner", "mod"},
                                         {"num_shards", 2}, {"feature_size", 10},
                                         {"shards", {"nowhere/ckpt-1.bin", "x"}}, {"meta", nlohmann::json::object()}}
                                             .dump();
  ck = ReadShardedCheckpoint(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ck.status().ToString().find("nowhere/ckpt-1.bin"), std::string::npos) << ck.status().ToString();
}

// A table that shard 0 holds and a later shard lacks is named, never assembled with zero rows (those ids
// would predict from nothing).
TEST(ShardedCheckpointTest, ATableMissingFromALaterShardIsNamed) {
  for (int32_t from : {1, 2}) {
    const std::string dir = ctrain::testing::TestTempDir("sharded_ckpt", "missing_table_" + std::to_string(from));
    WriteShards(dir, "fixed_size", 3, from);
    auto ck = ReadShardedCheckpoint(dir);
    ASSERT_FALSE(ck.ok()) << from;
    EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(ck.status().ToString().find(ShardDirName(from, 3) + "/ckpt-7.bin: tensor 'embeddings/V' is missing "
                                          "(shard 0 has it; every shard holds its rows of each table), named by "
                                          "the manifest " + dir + "/" + kShardedManifestName),
              std::string::npos)
        << ck.status().ToString();
  }
}

}  // namespace
}  // namespace ctrain::train
