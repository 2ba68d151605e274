// Parameter servers restarted on a --model-dir holding a checkpoint of another
// layout (ps/checkpoint_remap.h, case B46): every id keeps its values and its
// optimizer slots, training continues from the saved step exactly as the old
// layout would; a missing shard file or directory, or a checkpoint that cannot
// be remapped, is refused naming it, never a fresh start.
#include "ctrain/ps/checkpoint_remap.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/ps/shard.h"
#include "ctrain/train/sharded_checkpoint.h"
#include "ps_testing.h"
#include "testing/temp_dir.h"

namespace ctrain::ps {
namespace {

using testing::Addresses;
using testing::Connect;
using testing::SmallModel;
using testing::Spec;
using testing::StartServers;

constexpr int64_t kRows = 51;  // odd: the fixed_size pieces differ in size

// Saves through `c` and writes the manifest as PsParameters::Save does; returns the step.
int64_t SaveWithManifest(PsClient& c, const std::string& dir, const std::string& partitioner) {
  std::vector<std::string> paths;
  int64_t step = 0;
  proto::DenseTensor bn;  // BN state rides with shard 0's file
  bn.set_name("bn/moving_mean");
  bn.add_shape(2);
  const float mean[2] = {0.25f, -1.5f};
  bn.set_values(reinterpret_cast<const char*>(mean), sizeof mean);
  Status st = c.Save({{"epoch", 1}}, {bn}, &paths, &step);
  EXPECT_TRUE(st.ok()) << st.ToString();
  nlohmann::json files = nlohmann::json::array();
  for (const std::string& p : paths) files.push_back(train::ShardManifestEntry(dir, p));
  nlohmann::json manifest{{"format", train::kShardedManifestFormat}, {"step", step},
                          {"partitioner", partitioner},             {"num_shards", c.num_shards()},
                          {"feature_size", kRows},                  {"shards", files},
                          {"meta", {{"epoch", 1}}}};
  EXPECT_TRUE(train::WriteShardedManifest(dir, manifest).ok());
  return step;
}

// One training step's gradients: every third id, and every dense parameter.
void PushStep(PsClient& c, const proto::ModelSpec& spec, int seed) {
  std::vector<int64_t> ids;
  for (int64_t id = seed % 3; id < kRows; id += 3) ids.push_back(id);
  std::vector<float> gw(ids.size()), gv(ids.size() * 4);
  for (size_t i = 0; i < gw.size(); ++i) gw[i] = 0.01f * static_cast<float>((i * 7 + seed) % 11) - 0.05f;
  for (size_t i = 0; i < gv.size(); ++i) gv[i] = 0.02f * static_cast<float>((i * 5 + seed) % 13) - 0.1f;
  std::vector<std::vector<float>> dense;
  std::vector<const float*> dp;
  for (const auto& d : spec.dense()) dense.emplace_back(d.values().size() / 4, 0.01f * static_cast<float>(seed + 1));
  for (const auto& d : dense) dp.push_back(d.data());
  Status st = c.Push(ids, gw.data(), gv.data(), &dp, 0.05f, 10);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// Every row of w and V and every dense parameter, pulled.
std::vector<float> PullAll(PsClient& c) {
  std::vector<int64_t> ids(kRows);
  for (int64_t i = 0; i < kRows; ++i) ids[i] = i;
  std::vector<float> w(kRows), v(kRows * 4);
  std::vector<std::vector<float>> dense;
  Status st = c.Pull(ids, w.data(), v.data(), &dense);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> all = w;
  all.insert(all.end(), v.begin(), v.end());
  for (const auto& d : dense) all.insert(all.end(), d.begin(), d.end());
  return all;
}

// Every tensor of the assembled checkpoint, by name (values bit for bit).
void ExpectSameTensors(const train::Checkpoint& a, const train::Checkpoint& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const train::NamedTensor& t : a.tensors) {
    const train::NamedTensor* u = b.Find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(t.shape, u->shape) << t.name;
    EXPECT_EQ(t.f32, u->f32) << t.name;
  }
}

struct Change {
  int32_t from_shards;
  std::string from_partitioner;
  int32_t to_shards;
  std::string to_partitioner;
  std::string optimizer;
};

class PsCheckpointRemapTest : public ::testing::TestWithParam<Change> {};

TEST_P(PsCheckpointRemapTest, EveryIdKeepsItsValuesAndSlotsAndTrainingContinuesAsTheOldLayoutWould) {
  const Change ch = GetParam();
  const std::string name = std::to_string(ch.from_shards) + ch.from_partitioner + "_" +
                           std::to_string(ch.to_shards) + ch.to_partitioner + "_" + ch.optimizer;
  const std::string dir = ctrain::testing::TestTempDir("ps_checkpoint_remap", name);
  const std::string old_copy = ctrain::testing::TestTempDir("ps_checkpoint_remap", name + "_old", /*create=*/false);
  const proto::ModelSpec spec = Spec(SmallModel(kRows, 4), ch.optimizer);
  int64_t step = 0;
  {
    auto servers = StartServers(ch.from_shards, ch.from_partitioner, dir);
    ASSERT_EQ(static_cast<int32_t>(servers.size()), ch.from_shards);
    auto c = Connect(Addresses(servers));
    ASSERT_TRUE(c->Init(spec).ok());
    for (int k = 0; k < 4; ++k) PushStep(*c, spec, k);
    step = SaveWithManifest(*c, dir, ch.from_partitioner);
    ASSERT_EQ(step, 4);
  }
  std::filesystem::copy(dir, old_copy, std::filesystem::copy_options::recursive);
  StatusOr<std::optional<train::LoadedCheckpoint>> saved = train::ReadShardedCheckpoint(dir);
  ASSERT_TRUE(saved.ok() && saved->has_value()) << saved.status().ToString();

  // Restarted with the other layout: restored before any trainer calls Init.
  auto servers = StartServers(ch.to_shards, ch.to_partitioner, dir);
  ASSERT_EQ(static_cast<int32_t>(servers.size()), ch.to_shards);
  for (const auto& s : servers) {
    EXPECT_TRUE(s->shard().restored());
    EXPECT_EQ(s->shard().global_step(), step);
  }
  auto c = Connect(Addresses(servers));
  ASSERT_TRUE(c->Init(spec).ok());
  EXPECT_EQ(c->initial_global_step(), step);
  EXPECT_EQ(nlohmann::json::parse(c->restored_meta())["epoch"], 1);
  // Saved again at once: the same tensors (values, slots, dense, BN state) as the old layout's checkpoint.
  EXPECT_EQ(SaveWithManifest(*c, dir, ch.to_partitioner), step);
  StatusOr<std::optional<train::LoadedCheckpoint>> again = train::ReadShardedCheckpoint(dir);
  ASSERT_TRUE(again.ok() && again->has_value()) << again.status().ToString();
  ExpectSameTensors((*saved)->ckpt, (*again)->ckpt);
  EXPECT_NE((*again)->ckpt.Find("bn/moving_mean"), nullptr);

  // One more step on each layout: the same parameters bit for bit (the slots and the step carried over).
  auto old_servers = StartServers(ch.from_shards, ch.from_partitioner, old_copy);
  auto oc = Connect(Addresses(old_servers));
  ASSERT_TRUE(oc->Init(spec).ok());
  EXPECT_EQ(PullAll(*c), PullAll(*oc));
  PushStep(*c, spec, 7);
  PushStep(*oc, spec, 7);
  EXPECT_EQ(servers[0]->shard().global_step(), step + 1);
  EXPECT_EQ(PullAll(*c), PullAll(*oc));
}

INSTANTIATE_TEST_SUITE_P(Layouts, PsCheckpointRemapTest,
                         ::testing::Values(Change{2, "fixed_size", 3, "fixed_size", "adagrad"},
                                           Change{2, "fixed_size", 3, "mod", "adam"},
                                           Change{3, "mod", 2, "fixed_size", "adagrad"},
                                           Change{2, "mod", 1, "mod", "ftrl"},
                                           Change{2, "fixed_size", 2, "mod", "adam"}));

// Three shards saved with a manifest (sync: one step).
std::string SavedThreeShards(const std::string& name) {
  const std::string dir = ctrain::testing::TestTempDir("ps_checkpoint_remap", name);
  auto servers = StartServers(3, "fixed_size", dir);
  auto c = Connect(Addresses(servers));
  const proto::ModelSpec spec = Spec(SmallModel(kRows, 4), "adagrad");
  EXPECT_TRUE(c->Init(spec).ok());
  PushStep(*c, spec, 1);
  SaveWithManifest(*c, dir, "fixed_size");
  return dir;
}

StatusOr<std::unique_ptr<ParameterShard>> Shard(int32_t shard, int32_t num_shards, const std::string& dir,
                                                const std::string& partitioner = "fixed_size", bool force = false,
                                                std::vector<std::string>* log = nullptr) {
  ShardOptions o;
  o.shard = shard;
  o.num_shards = num_shards;
  o.partitioner = partitioner;
  o.model_dir = dir;
  o.force = force;
  o.log = [log](const std::string& line) {
    if (log != nullptr) log->push_back(line);
  };
  return ParameterShard::Create(o);
}

TEST(PsCheckpointRestartTest, AMissingShardDirectoryOrFileIsRefusedNamingItNeverAFreshStart) {
  const std::string dir = SavedThreeShards("missing_dir");
  std::filesystem::remove_all(dir + "/ps-shard-00002-of-00003");
  auto s2 = Shard(2, 3, dir);
  ASSERT_FALSE(s2.ok());
  EXPECT_EQ(s2.status().code(), StatusCode::kFailedPrecondition);
  const std::string msg(s2.status().message());
  EXPECT_NE(msg.find("ps-shard-00002-of-00003/ckpt-1.bin (shard 2 of 3, named by " + dir + "/ps_checkpoint.json)"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("nor does its directory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not start fresh"), std::string::npos) << msg;
  auto s0 = Shard(0, 3, dir);  // the others restore
  ASSERT_TRUE(s0.ok()) << s0.status().ToString();
  EXPECT_TRUE((*s0)->restored());
  // Nor can the remaining shards be remapped to another layout.
  auto r = Shard(0, 2, dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("checkpoint has 3 shards (fixed_size), this job has 2 shards (fixed_size)"),
            std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("ps-shard-00002-of-00003/ckpt-1.bin"), std::string::npos);

  const std::string dir2 = SavedThreeShards("missing_file");
  std::filesystem::remove(dir2 + "/ps-shard-00001-of-00003/ckpt-1.bin");
  auto s1 = Shard(1, 3, dir2);
  ASSERT_FALSE(s1.ok());
  EXPECT_EQ(s1.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s1.status().message().find("ps-shard-00001-of-00003/ckpt-1.bin (shard 1 of 3, named by"),
            std::string::npos) << s1.status().ToString();
  EXPECT_EQ(s1.status().message().find("nor does its directory"), std::string::npos);
}

// Asynchronous training: shards saved at different global steps have no one step to continue from.
TEST(PsCheckpointRestartTest, ShardsAtDifferentStepsAreRefusedNamingBothLayouts) {
  const std::string dir = ctrain::testing::TestTempDir("ps_checkpoint_remap", "async_steps");
  const proto::ModelSpec spec = Spec(SmallModel(kRows, 4), "adagrad");
  nlohmann::json files = nlohmann::json::array();
  for (int32_t s = 0; s < 2; ++s) {
    auto sh = Shard(s, 2, dir);
    ASSERT_TRUE(sh.ok()) << sh.status().ToString();
    proto::InitRequest init;
    *init.mutable_spec() = spec;
    proto::InitResponse ir;
    ASSERT_TRUE((*sh)->Init(init, &ir).ok());
    for (int k = 0; k <= s; ++k) {  // shard 0 at step 1, shard 1 at step 2
      proto::PushRequest push;
      push.set_learning_rate(0.1f);
      proto::PushResponse pr;
      ASSERT_TRUE((*sh)->Push(push, &pr).ok());
    }
    proto::SaveRequest sr;
    proto::SaveResponse sp;
    ASSERT_TRUE((*sh)->Save(sr, &sp).ok());
    files.push_back(train::ShardManifestEntry(dir, sp.path()));
  }
  ASSERT_TRUE(train::WriteShardedManifest(dir, {{"format", train::kShardedManifestFormat}, {"step", 1},
                                                {"partitioner", "fixed_size"}, {"num_shards", 2},
                                                {"feature_size", kRows}, {"shards", files}, {"meta", nlohmann::json::object()}})
                  .ok());
  auto same = Shard(1, 2, dir);  // the same layout restores each shard's own file
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ((*same)->global_step(), 2);
  auto r = Shard(0, 3, dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("checkpoint has 2 shards (fixed_size), this job has 3 shards (fixed_size)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("shard 0 at 1, shard 1 at 2"), std::string::npos) << msg;
}

// Without a manifest, shard directories of another shard count are not a fresh start either.
TEST(PsCheckpointRestartTest, OtherShardCountWithoutAManifestIsRefused) {
  const std::string dir = SavedThreeShards("no_manifest");
  std::filesystem::remove(dir + "/ps_checkpoint.json");
  auto s = Shard(0, 2, dir);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("of another shard count (ps-shard-00000-of-00003, ps-shard-00001-of-00003, "
                                      "ps-shard-00002-of-00003) but no manifest ps_checkpoint.json"),
            std::string::npos) << s.status().ToString();
  auto same = Shard(2, 3, dir);  // its own directory's newest, as before
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE((*same)->restored());
}

// `ctrain ps --force`: every server starts fresh, whatever the directory holds, and says what it set
// aside; the job's next save replaces the old checkpoint.
TEST(PsCheckpointRestartTest, ForceStartsEveryServerFreshAndSaysWhatItSetAside) {
  const std::string dir = SavedThreeShards("force");
  std::filesystem::remove_all(dir + "/ps-shard-00002-of-00003");
  std::vector<std::string> log;
  auto s2 = Shard(2, 3, dir, "fixed_size", /*force=*/true, &log);  // refused without --force
  ASSERT_TRUE(s2.ok()) << s2.status().ToString();
  EXPECT_FALSE((*s2)->restored());
  EXPECT_EQ((*s2)->global_step(), 0);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].rfind("--force: starting fresh; not restoring the checkpoint it would refuse: FailedPrecondition: ", 0),
            0u) << log[0];
  EXPECT_NE(log[0].find("ps-shard-00002-of-00003/ckpt-1.bin (shard 2 of 3"), std::string::npos) << log[0];
  log.clear();
  auto s0 = Shard(0, 3, dir, "fixed_size", true, &log);  // restorable, and set aside too: no mixed model
  ASSERT_TRUE(s0.ok()) << s0.status().ToString();
  EXPECT_FALSE((*s0)->restored());
  EXPECT_EQ((*s0)->global_step(), 0);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("not restoring " + dir + "/ps-shard-00000-of-00003/ckpt-1.bin (global step 1); this job's "
                        "checkpoints replace it in " + dir),
            std::string::npos) << log[0];
  log.clear();
  auto r = Shard(1, 2, dir, "fixed_size", true, &log);  // another layout, no remap possible
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE((*r)->restored());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("checkpoint has 3 shards (fixed_size), this job has 2 shards (fixed_size)"), std::string::npos)
      << log[0];
  log.clear();
  const std::string empty = ctrain::testing::TestTempDir("ps_checkpoint_remap", "force_empty");
  auto e = Shard(0, 1, empty, "fixed_size", true, &log);  // nothing to set aside: nothing said
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(log.empty());
  // Without --force the refusal names the way out.
  auto refused = Shard(2, 3, dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("or pass --force to every server to start fresh and replace it"),
            std::string::npos) << refused.status().ToString();
}

}  // namespace
}  // namespace ctrain::ps
