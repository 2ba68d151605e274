// The trainer on keyed embedding tables (TrainOptions::table keyed,
// train/key_index.h, docs/training.md#keyed-embeddings): the same model as a
// positional table when every key gets a row, towers, admission counted
// exactly, eviction at checkpoints, an exact resume, a warm start that keeps
// each key's row whatever new keys arrive, and the refusals.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "ctrain/io/feature_hash.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/keyed_checkpoint.h"
#include "ctrain/train/trainer_state.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

TrainOptions Small(const std::string& table = "keyed", int64_t feature_size = 2000) {
  TrainOptions o;
  o.model.feature_size = feature_size;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16};
  o.model.dropout = 0.0f;
  // A start that is a function of (seed, id) alone: a key's row starts as the positional row of the same id.
  o.model.embedding_initializer = "normal:0.01";
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.01f;
  o.batch_size = 64;
  o.seed = 7;
  o.epochs = 1;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.table.embedding_table = table;
  return o;
}

const Dataset& Day(int d, int64_t id_space = 2000) {
  static std::map<std::pair<int, int64_t>, Dataset>* days = new std::map<std::pair<int, int64_t>, Dataset>();
  auto it = days->find({d, id_space});
  if (it == days->end()) it = days->emplace(std::make_pair(d, id_space), *MakeSynthDataset(11, d * 640, 640, id_space)).first;
  return it->second;
}

// The rows of `d` with every id replaced by a key spread over 62 bits (Criteo-like hashed keys).
Dataset Spread(const Dataset& d) {
  Dataset out(d.field_size());
  std::vector<int64_t> ids(d.field_size());
  for (int64_t r = 0; r < d.size(); ++r) {
    for (int32_t f = 0; f < d.field_size(); ++f)
      ids[f] = static_cast<int64_t>(io::Mix64(static_cast<uint64_t>(d.ids()[r * d.field_size() + f])) >> 2);
    out.Append(d.labels()[r], ids.data(), d.values() + r * d.field_size());
  }
  return out;
}

std::unique_ptr<Trainer> Make(const TrainOptions& o) {
  auto t = Trainer::Create(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::vector<float> Predict(Trainer& t, const Dataset& d) {
  std::vector<float> p;
  const Status s = t.Predict(d, &p);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return p;
}

TEST(KeyedTable, TrainsTheSameModelAsAPositionalTableWhenEveryKeyGetsARow) {
  for (int32_t towers : {1, 2}) {
    TrainOptions fixed = Small("fixed"), keyed = Small("keyed");
    fixed.parallel.towers = keyed.parallel.towers = towers;
    fixed.epochs = keyed.epochs = 2;
    auto a = Make(fixed), b = Make(keyed);
    TrainResult ra, rb;
    ASSERT_TRUE(a->Train(Day(0), nullptr, &ra).ok());
    ASSERT_TRUE(b->Train(Day(0), nullptr, &rb).ok());
    EXPECT_EQ(ra.last_loss, rb.last_loss) << "towers " << towers;
    EXPECT_EQ(Predict(*a, Day(0)), Predict(*b, Day(0))) << "towers " << towers;
    EXPECT_TRUE(rb.keyed);
    EXPECT_FALSE(ra.keyed);
    EXPECT_GT(rb.keyed_table.live_rows, 100);
    EXPECT_EQ(rb.keyed_table.admitted, rb.keyed_table.live_rows);
    ASSERT_EQ(rb.keyed_table_epochs.size(), 2u);
    EXPECT_EQ(rb.keyed_table_epochs[0].counters.live_rows, rb.keyed_table.live_rows);  // epoch 2 saw no new key
    EXPECT_EQ(rb.keyed_table_epochs[1].epoch, 2);
  }
}

TEST(KeyedTable, TrainsKeysFarBeyondAnyTableSize) {
  TrainOptions o = Small("keyed", kKeySpace);
  const Dataset train = Spread(Day(0)), again = Spread(Day(0));
  auto t = Make(o);
  TrainResult r;
  ASSERT_TRUE(t->Train(train, nullptr, &r).ok());
  // The same data, keys instead of ids: the same model (the rows start from (seed, key), not from the id).
  auto ref = Make(Small("keyed"));
  TrainResult rr;
  ASSERT_TRUE(ref->Train(Day(0), nullptr, &rr).ok());
  EXPECT_EQ(r.keyed_table.live_rows, rr.keyed_table.live_rows);
  const std::vector<float> p = Predict(*t, again);
  EXPECT_EQ(p.size(), static_cast<size_t>(again.size()));
  for (float x : p) EXPECT_TRUE(x > 0.0f && x < 1.0f);
}

// Every keyed sighting of a key below min_count is filtered; the min_count-th admits it.
TEST(KeyedTable, AdmissionIsCountedExactly) {
  TrainOptions o = Small();
  o.table.min_count = 3;
  o.model.num_dense_fields = 0;
  const Dataset& d = Day(0);
  std::map<int64_t, int64_t> count;
  for (int64_t i = 0; i < d.size() * d.field_size(); ++i) ++count[d.ids()[i]];
  int64_t admitted = 0, filtered = 0;
  for (const auto& [key, c] : count) {
    admitted += c >= 3;
    filtered += std::min<int64_t>(c, 2);
  }
  std::vector<float> twice;
  for (int32_t towers : {1, 2, 2}) {  // towers admit in batch order: the same counts, and the same bits run to run
    o.parallel.towers = towers;
    auto t = Make(o);
    TrainResult r;
    ASSERT_TRUE(t->Train(d, nullptr, &r).ok());
    EXPECT_EQ(r.keyed_table.admitted, admitted) << "towers " << towers;
    EXPECT_EQ(r.keyed_table.filtered, filtered) << "towers " << towers;
    EXPECT_EQ(r.keyed_table.pending_keys, static_cast<int64_t>(count.size()) - admitted);
    if (towers == 2 && twice.empty()) twice = Predict(*t, d);
    else if (towers == 2) EXPECT_EQ(Predict(*t, d), twice);
  }
}

TEST(KeyedTable, EvictsAtCheckpointsAndResumesExactly) {
  const std::string full = testing::TestTempDir("keyed", "full"), cut = testing::TestTempDir("keyed", "cut");
  TrainOptions o = Small();
  o.table.min_count = 2;
  o.table.steps_to_live = 4;
  o.table.max_rows = 1000;
  o.save_checkpoints_steps = 3;
  o.epochs = 2;
  o.model.num_dense_fields = 2;  // fields 0 and 1 keep ids 0 and 1 (numeric rows)
  Dataset d(39);
  for (int64_t r = 0; r < Day(0).size(); ++r) {  // numeric fields carry ids 0 and 1, as ctrain's Criteo layout
    std::vector<int64_t> ids(Day(0).ids() + r * 39, Day(0).ids() + (r + 1) * 39);
    ids[0] = 0;
    ids[1] = 1;
    d.Append(Day(0).labels()[r], ids.data(), Day(0).values() + r * 39);
  }
  o.model_dir = full;
  auto a = Make(o);
  TrainResult ra;
  ASSERT_TRUE(a->Train(d, nullptr, &ra).ok());
  EXPECT_GT(ra.keyed_table.evicted_steps, 0);
  EXPECT_GT(ra.keyed_table.evicted_lru, 0);
  EXPECT_LE(ra.keyed_table.live_rows, 1000);
  std::printf("%s\n", ra.keyed_table.Summary().c_str());

  // The same run cut at step 7 (between checkpoints at 6 and 9) and resumed.
  o.model_dir = cut;
  o.max_steps = 7;
  {
    auto b = Make(o);
    TrainResult rb;
    ASSERT_TRUE(b->Train(d, nullptr, &rb).ok());
  }
  o.max_steps = 0;
  auto c = Make(o);
  bool restored = false;
  ASSERT_TRUE(c->Restore(&restored).ok());
  ASSERT_TRUE(restored);
  TrainResult rc;
  ASSERT_TRUE(c->Train(d, nullptr, &rc).ok());
  EXPECT_EQ(rc.keyed_table.ToJson(), ra.keyed_table.ToJson());
  EXPECT_EQ(Predict(*a, d), Predict(*c, d));
  // The final checkpoints hold the same tensors, bit for bit (keys, rows, slots, last-seen steps).
  auto ca = LoadLatestCheckpoint(full), cc = LoadLatestCheckpoint(cut);
  ASSERT_TRUE(ca.ok() && cc.ok());
  ASSERT_EQ(ca->tensors.size(), cc->tensors.size());
  for (size_t i = 0; i < ca->tensors.size(); ++i) {
    EXPECT_EQ(ca->tensors[i].name, cc->tensors[i].name);
    EXPECT_EQ(ca->tensors[i].f32, cc->tensors[i].f32) << ca->tensors[i].name;
    EXPECT_EQ(ca->tensors[i].i64, cc->tensors[i].i64) << ca->tensors[i].name;
  }
  EXPECT_NE(ca->Find("embeddings/keys"), nullptr);
  EXPECT_EQ(ca->meta["embedding_table"]["embedding_table"], "keyed");

  // eval/predict rebuild the keyed model from the checkpoint alone.
  auto loaded = LoadTrainerFromCheckpoint(full, ParallelOptions());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(Predict(**loaded, d), Predict(*a, d));
}

// Day(0) with ids 0 and 1 in fields 0 and 1 (numeric fields, ctrain's Criteo layout).
Dataset WithNumericFields(const Dataset& src) {
  Dataset d(39);
  for (int64_t r = 0; r < src.size(); ++r) {
    std::vector<int64_t> ids(src.ids() + r * 39, src.ids() + (r + 1) * 39);
    ids[0] = 0;
    ids[1] = 1;
    d.Append(src.labels()[r], ids.data(), src.values() + r * 39);
  }
  return d;
}

TrainOptions Evicting(const std::string& dir, int32_t incremental) {
  TrainOptions o = Small();
  o.table.min_count = 2;
  o.table.steps_to_live = 4;
  o.table.max_rows = 1000;
  o.save_checkpoints_steps = 3;
  o.epochs = 2;
  o.model.num_dense_fields = 2;
  o.model_dir = dir;
  o.incremental_checkpoints = incremental;
  return o;
}

void ExpectSameTensors(const Checkpoint& want, const Checkpoint& got) {
  for (const NamedTensor& t : want.tensors) {
    const NamedTensor* g = got.Find(t.name);
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_EQ(g->shape, t.shape) << t.name;
    EXPECT_EQ(g->f32, t.f32) << t.name;
    EXPECT_EQ(g->i64, t.i64) << t.name;
  }
}

TEST(KeyedTable, IncrementalCheckpointsRestoreBitForBit) {
  const std::string full = testing::TestTempDir("keyed_incr", "full"), incr = testing::TestTempDir("keyed_incr", "incr"),
                    cut = testing::TestTempDir("keyed_incr", "cut");
  const Dataset d = WithNumericFields(Day(0));
  auto a = Make(Evicting(full, 0));
  auto b = Make(Evicting(incr, 2));
  TrainResult ra, rb;
  ASSERT_TRUE(a->Train(d, nullptr, &ra).ok());
  ASSERT_TRUE(b->Train(d, nullptr, &rb).ok());
  // Saves at 3 6 9 10 (epoch end) 12 15 18 20: full, +1, +2, full, +1, +2, full, +1.
  auto fa = LoadLatestCheckpoint(full), fb = LoadLatestCheckpoint(incr);
  ASSERT_TRUE(fa.ok() && fb.ok());
  ASSERT_TRUE(IsKeyedDelta(fb->meta)) << fb->meta.dump();
  EXPECT_EQ(fb->meta["keyed_delta"]["base"], "ckpt-18.bin");
  EXPECT_LT(fb->Find("embeddings/keys")->i64.size(), fa->Find("embeddings/keys")->i64.size());
  auto composed = LoadComposedCheckpoint(fb->path);
  ASSERT_TRUE(composed.ok()) << composed.status().ToString();
  ExpectSameTensors(*fa, *composed);
  auto loaded = LoadTrainerFromCheckpoint(incr, ParallelOptions());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(Predict(**loaded, d), Predict(*a, d));

  // Cut at step 7 (an incremental save on the full one of step 3), resumed: the chain goes on, the end is the same.
  TrainOptions o = Evicting(cut, 2);
  o.max_steps = 7;
  {
    auto c = Make(o);
    TrainResult rc;
    ASSERT_TRUE(c->Train(d, nullptr, &rc).ok());
    auto at7 = LoadLatestCheckpoint(cut);
    ASSERT_TRUE(at7.ok());
    EXPECT_EQ(at7->meta["keyed_delta"]["base"], "ckpt-3.bin");
  }
  o.max_steps = 0;
  auto c = Make(o);
  bool restored = false;
  ASSERT_TRUE(c->Restore(&restored).ok());
  ASSERT_TRUE(restored);
  TrainResult rc;
  ASSERT_TRUE(c->Train(d, nullptr, &rc).ok());
  auto fc = ReadTrainerCheckpoint(cut);
  ASSERT_TRUE(fc.ok() && fc->has_value()) << fc.status().ToString();
  ExpectSameTensors(*fa, (*fc)->ckpt);

  // A torn incremental checkpoint, and one whose full checkpoint is gone, are named.
  const std::string latest = fb->path;
  std::filesystem::resize_file(latest, std::filesystem::file_size(latest) - 9);
  auto torn = ReadTrainerCheckpoint(incr);
  EXPECT_EQ(torn.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(torn.status().message().find(latest), std::string::npos) << torn.status().ToString();
  ASSERT_TRUE(LoadLatestCheckpoint(cut).ok());
  const std::string cut_latest = LoadLatestCheckpoint(cut)->path;
  const std::string base = cut + "/" + LoadLatestCheckpoint(cut)->meta["keyed_delta"].value("base", std::string());
  ASSERT_TRUE(std::filesystem::remove(base)) << base;
  auto orphan = ReadTrainerCheckpoint(cut);
  EXPECT_EQ(orphan.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(orphan.status().message().find("its base checkpoint " + base), std::string::npos)
      << orphan.status().ToString();
}

TEST(KeyedTable, WarmStartKeepsEveryKeysRowWhateverNewKeysArrive) {
  const std::string day0 = testing::TestTempDir("keyed_warm", "day0"), day1 = testing::TestTempDir("keyed_warm", "day1");
  TrainOptions o = Small();
  o.model_dir = day0;
  auto a = Make(o);
  TrainResult ra;
  ASSERT_TRUE(a->Train(Day(0), nullptr, &ra).ok());
  const std::vector<float> p0 = Predict(*a, Day(0));

  // Day 1 has keys day 0 never saw (a larger id space): the old keys keep their rows.
  TrainOptions o1 = Small("keyed", 5000);
  o1.model_dir = day1;
  o1.warm_start_from = day0;
  auto b = Make(o1);
  bool restored = false;
  ASSERT_TRUE(b->Restore(&restored).ok());
  EXPECT_TRUE(b->warm_started());
  EXPECT_EQ(Predict(*b, Day(0)), p0);  // before training on: day 0's model exactly
  TrainResult rb;
  ASSERT_TRUE(b->Train(Day(1, 5000), nullptr, &rb).ok());
  EXPECT_GT(rb.keyed_table.admitted, 0);  // the new keys
  EXPECT_GT(rb.keyed_table.live_rows, ra.keyed_table.live_rows);

  // A positional checkpoint is not a keyed one.
  TrainOptions o2 = Small("fixed");
  o2.model_dir = testing::TestTempDir("keyed_warm", "fixed");
  o2.warm_start_from = day0;
  auto c = Make(o2);
  const Status s = c->Restore(&restored);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("embedding table is keyed, this run's is fixed"), std::string::npos) << s.ToString();
}

// The epoch end evicts before it evaluates: the run's validation metrics are those of the model it saved.
TEST(KeyedTable, TheValidationMetricsDescribeTheEvictedModel) {
  TrainOptions o = Small();
  o.table.max_rows = 300;
  o.epochs = 2;
  auto t = Make(o);
  TrainResult r;
  ASSERT_TRUE(t->Train(Day(0), &Day(1), &r).ok());
  ASSERT_TRUE(r.evaluated);
  EXPECT_GT(r.keyed_table.evicted_lru, 0);
  EXPECT_EQ(r.keyed_table.live_rows, 300);
  ASSERT_EQ(r.keyed_table_epochs.size(), 2u);
  EXPECT_EQ(r.keyed_table_epochs[1].counters.live_rows, 300);  // the epoch's counters after its eviction
  auto again = t->Evaluate(Day(1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->logloss, r.eval.logloss);
  EXPECT_EQ(again->auc, r.eval.auc);
}

TEST(KeyedTable, ResumeRefusesOtherTableOptionsByName) {
  const std::string dir = testing::TestTempDir("keyed", "opts");
  TrainOptions o = Small();
  o.model_dir = dir;
  auto a = Make(o);
  TrainResult r;
  ASSERT_TRUE(a->Train(Day(0), nullptr, &r).ok());
  o.table.min_count = 4;
  auto b = Make(o);
  bool restored = false;
  const Status s = b->Restore(&restored);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("trained with --min-count 1, this run asks for 4"), std::string::npos) << s.ToString();
}

TEST(KeyedTable, HogwildTrainsAndCountsEveryKey) {
  TrainOptions o = Small();
  o.parallel.hogwild = 2;
  o.epochs = 2;
  auto t = Make(o);
  TrainResult r;
  ASSERT_TRUE(t->Train(Day(0), nullptr, &r).ok());
  std::map<int64_t, int> keys;
  for (int64_t i = 0; i < Day(0).size() * 39; ++i) keys[Day(0).ids()[i]] = 1;
  EXPECT_EQ(r.keyed_table.live_rows, static_cast<int64_t>(keys.size()));
  EXPECT_EQ(r.keyed_table.admitted, static_cast<int64_t>(keys.size()));
}

}  // namespace
}  // namespace ctrain::train
