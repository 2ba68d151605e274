// Training through parameter servers, in process: one worker with
// --sync-replicas equals local training bit for bit (parameters, optimizer
// slots, BN state, predictions), and the sharded checkpoint loads like a
// local one; two workers (sync and async) consume the data as documented.
#include "ctrain/ps/ps_training.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "ctrain/train/sharded_checkpoint.h"
#include "ctrain/train/trainer.h"
#include "ctrain/train/trainer_state.h"
#include "ps/ps_testing.h"
#include "testing/temp_dir.h"

namespace ctrain::ps {
namespace {

using testing::Addresses;
using testing::StartServers;

// Rows whose label depends on the ids (learnable), field_size 4, ids in [0, 97).
train::Dataset Data(int64_t n, uint64_t seed) {
  train::Dataset d(4);
  std::mt19937_64 rng(seed);
  for (int64_t r = 0; r < n; ++r) {
    int64_t ids[4];
    float values[4];
    for (int f = 0; f < 4; ++f) {
      ids[f] = f * 24 + static_cast<int64_t>(rng() % 24);
      values[f] = 1.0f;
    }
    const float label = (ids[0] % 24 < 8) != (rng() % 10 == 0) ? 1.0f : 0.0f;
    d.Append(label, ids, values);
  }
  return d;
}

train::TrainOptions Options(bool batch_norm, const std::string& optimizer) {
  train::TrainOptions o;
  o.model.feature_size = 97;
  o.model.field_size = 4;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 8};
  o.model.dropout = 0.3f;  // the dropout keys must match local training's
  o.model.batch_norm = batch_norm;
  o.model.l2_reg = 1e-4f;
  o.optimizer.name = optimizer;
  o.optimizer.learning_rate = 0.02f;
  o.batch_size = 50;
  o.epochs = 2;
  // The schedule is the trainer's, its rate travels with each push: a warm-up
  // from zero (the local meaning of lr_warmup_from = 0, case B55) into a decay.
  o.lr_warmup_steps = 5;
  o.lr_warmup_from = 0;
  o.lr_decay = optim::LrDecay::kExponential;
  o.lr_decay_steps = 4;
  o.lr_decay_rate = 0.7f;
  o.parallel.intra_op_threads = 1;
  o.progress = train::ProgressMode::kNone;
  return o;
}

PsTrainOptions PsOptions(const std::vector<std::string>& addresses, int32_t worker, int32_t workers, bool sync) {
  PsTrainOptions p;
  p.client.addresses = addresses;
  p.client.worker_index = worker;
  p.client.max_wait = std::chrono::milliseconds(5000);
  p.client.log = [](const std::string&) {};
  p.num_workers = workers;
  p.sync_replicas = sync;
  return p;
}

struct Case {
  const char* partitioner;
  bool batch_norm;
  const char* optimizer;
  int32_t shards;
  bool dense_on_workers = false;  // --ps-dense workers: the worker runs the dense optimizer
  bool sync = true;
};

class OneSyncWorkerTest : public ::testing::TestWithParam<Case> {};

TEST_P(OneSyncWorkerTest, EqualsLocalTrainingBitForBit) {
  const Case c = GetParam();
  const std::string tag = std::string(c.partitioner) + (c.batch_norm ? "_bn_" : "_") + c.optimizer +
                          (c.dense_on_workers ? "_workers" : "") + (c.sync ? "" : "_async");
  const std::string local_dir = ctrain::testing::TestTempDir("ps_training", tag + "_local");
  const std::string ps_dir = ctrain::testing::TestTempDir("ps_training", tag + "_ps");
  const train::Dataset train = Data(420, 1), valid = Data(200, 2);  // 9 batches, the last one partial

  train::TrainOptions o = Options(c.batch_norm, c.optimizer);
  o.model_dir = local_dir;
  auto local = train::Trainer::Create(o);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  train::TrainResult lr;
  ASSERT_TRUE((*local)->Train(train, &valid, &lr).ok());

  auto servers = StartServers(c.shards, c.partitioner, ps_dir);
  ASSERT_EQ(servers.size(), static_cast<size_t>(c.shards));
  o.model_dir = ps_dir;
  PsTrainResult pr;
  PsTrainOptions po = PsOptions(Addresses(servers), 0, 1, c.sync);
  po.dense_on_workers = c.dense_on_workers;
  const std::string export_dir = ctrain::testing::TestTempDir("ps_training", tag + "_export");
  po.export_dir = export_dir;
  EXPECT_FALSE(servers[0]->shard().AllWorkersDone());
  Status st = RunPsTraining(o, po, train, &valid, &pr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(pr.train.steps, lr.steps);
  EXPECT_EQ(pr.global_step, 18);
  EXPECT_EQ(servers[0]->shard().global_step(), 18);
  ASSERT_TRUE(pr.train.evaluated);
  EXPECT_EQ(pr.train.eval.auc, lr.eval.auc);
  EXPECT_EQ(pr.train.eval.logloss, lr.eval.logloss);
  // (+1 keeping the dense parameters: their values and slots at the start.)
  EXPECT_EQ(pr.client.pulls, (18 + 2 /* evaluations */ + (c.dense_on_workers ? 1 : 0)) * c.shards);
  EXPECT_EQ(pr.client.pushes, 18 * c.shards);
  // Kept on the worker, the dense parameters travel only before the two checkpoints (epoch 1, the end; the
  // export follows the last one at the same step), not with the steps.
  EXPECT_EQ(pr.client.dense_syncs, c.dense_on_workers ? 2 : 0);

  // The worker said it is done: a server started with --exit-when-workers-done would stop now.
  for (const auto& s : servers) EXPECT_TRUE(s->shard().AllWorkersDone());

  // Every tensor of the local checkpoint (tables, slots, dense, BN state) is in the sharded one, same bits, and in
  // the chief's export (one local checkpoint pulled from the servers, --ps-export-dir).
  auto a = train::ReadTrainerCheckpoint(local_dir);
  auto b = train::ReadTrainerCheckpoint(ps_dir);
  auto x = train::ReadTrainerCheckpoint(export_dir);
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().ToString();
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status().ToString();
  ASSERT_TRUE(x.ok() && x->has_value()) << x.status().ToString();
  EXPECT_EQ((*b)->path, ps_dir + "/" + train::kShardedManifestName);
  EXPECT_EQ((*x)->path, export_dir + "/ckpt-18.bin");
  EXPECT_EQ((*x)->ckpt.tensors.size(), (*a)->ckpt.tensors.size());
  for (const train::NamedTensor& t : (*a)->ckpt.tensors)
    for (const auto* ck : {&*b, &*x}) {
      const train::NamedTensor* u = (*ck)->ckpt.Find(t.name);
      ASSERT_NE(u, nullptr) << t.name << " in " << (*ck)->path;
      EXPECT_EQ(u->shape, t.shape) << t.name;
      ASSERT_EQ(u->f32.size(), t.f32.size()) << t.name;
      EXPECT_EQ(std::memcmp(u->f32.data(), t.f32.data(), t.f32.size() * 4), 0) << t.name << " differs in " << (*ck)->path;
    }
  for (const auto* ck : {&*b, &*x}) {
    EXPECT_EQ((*ck)->meta["global_step"], 18);
    EXPECT_EQ((*ck)->meta["epoch"], 2);
  }
  EXPECT_TRUE((*x)->meta.contains("exported_from_parameter_servers"));

  // `ctrain eval` / `predict` path: a trainer loaded from the sharded checkpoint, or from the export, predicts the
  // same.
  auto loaded = train::LoadTrainerFromCheckpoint(ps_dir, o.parallel);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto exported = train::LoadTrainerFromCheckpoint(export_dir, o.parallel);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  std::vector<float> p1, p2, p3;
  ASSERT_TRUE((*loaded)->Predict(valid, &p1).ok());
  ASSERT_TRUE((*local)->Predict(valid, &p2).ok());
  ASSERT_TRUE((*exported)->Predict(valid, &p3).ok());
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(p3, p2);
}

INSTANTIATE_TEST_SUITE_P(Layouts, OneSyncWorkerTest,
                         ::testing::Values(Case{"fixed_size", false, "adam", 2}, Case{"mod", true, "adam", 2},
                                           Case{"mod", false, "ftrl", 3}, Case{"fixed_size", true, "adagrad", 1},
                                           Case{"fixed_size", false, "adam", 2, true},
                                           Case{"mod", true, "adam", 3, true},
                                           Case{"mod", false, "ftrl", 2, true, false},
                                           Case{"fixed_size", true, "adagrad", 1, true}),
                         [](const auto& info) {
                           return std::string(info.param.partitioner) + (info.param.batch_norm ? "_bn_" : "_") +
                                  info.param.optimizer + "_" + std::to_string(info.param.shards) +
                                  (info.param.dense_on_workers ? "_dense_on_workers" : "") +
                                  (info.param.sync ? "" : "_async");
                         });

// --lr-decay plateau: the worker's scheduler lowers the rate at its evaluations and pushes it with each step's
// gradients: the servers apply the same rates as local training (bit-equal tables); more than one worker is
// refused by name (the chief alone validates).
TEST(PsTrainingTest, PlateauRatesReachTheServersAndTwoWorkersAreRefused) {
  const std::string local_dir = ctrain::testing::TestTempDir("ps_training", "plateau_local");
  const std::string ps_dir = ctrain::testing::TestTempDir("ps_training", "plateau_ps");
  const train::Dataset train = Data(420, 6), valid = Data(200, 7);
  train::TrainOptions o = Options(false, "adam");
  o.lr_warmup_steps = 0;
  o.lr_decay = optim::LrDecay::kPlateau;
  o.lr_decay_steps = 0;
  o.eval_every_steps = 2;
  o.lr_plateau_patience = 0;
  o.lr_plateau_factor = 0.5;
  o.lr_plateau_min_delta = 1.0;  // every evaluation after the first is a plateau
  o.model_dir = local_dir;
  auto local = train::Trainer::Create(o);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  train::TrainResult lr;
  ASSERT_TRUE((*local)->Train(train, &valid, &lr).ok());
  ASSERT_EQ(lr.lr_drops.size(), 9u);  // 9 steps an epoch: evaluations at 2, 4, 6, 8, 9, 10, ..., 16, 18

  auto servers = StartServers(2, "mod", ps_dir);
  o.model_dir = ps_dir;
  PsTrainResult pr;
  Status st = RunPsTraining(o, PsOptions(Addresses(servers), 0, 1, true), train, &valid, &pr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(pr.train.lr_drops.size(), lr.lr_drops.size());
  for (size_t k = 0; k < lr.lr_drops.size(); ++k) {
    EXPECT_EQ(pr.train.lr_drops[k].step, lr.lr_drops[k].step);
    EXPECT_EQ(pr.train.lr_drops[k].lr, lr.lr_drops[k].lr);
  }
  EXPECT_EQ(pr.train.eval.logloss, lr.eval.logloss);
  auto a = train::ReadTrainerCheckpoint(local_dir);
  auto b = train::ReadTrainerCheckpoint(ps_dir);
  ASSERT_TRUE(a.ok() && a->has_value() && b.ok() && b->has_value());
  for (const train::NamedTensor& t : (*a)->ckpt.tensors) {
    const train::NamedTensor* u = (*b)->ckpt.Find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->f32.size(), t.f32.size()) << t.name;
    EXPECT_EQ(std::memcmp(u->f32.data(), t.f32.data(), t.f32.size() * 4), 0) << t.name << " differs";
  }
  EXPECT_EQ((*b)->meta["lr_plateau"], (*a)->meta["lr_plateau"]);

  auto servers2 = StartServers(1, "mod");
  o.model_dir.clear();
  PsTrainResult r2;
  st = RunPsTraining(o, PsOptions(Addresses(servers2), 0, 2, true), train, &valid, &r2);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("--lr-decay plateau is not supported with --ps"), std::string::npos) << st.ToString();
}

TEST(PsTrainingTest, TwoWorkersSyncReplicasShareEachRound) {
  auto servers = StartServers(2, "mod");
  const train::Dataset train = Data(420, 3);  // 9 batches: rounds of 2 -> 5 rounds an epoch
  train::TrainOptions o = Options(false, "adam");
  PsTrainResult r0, r1;
  Status s0, s1;
  std::thread t([&] { s1 = RunPsTraining(o, PsOptions(Addresses(servers), 1, 2, true), train, nullptr, &r1); });
  s0 = RunPsTraining(o, PsOptions(Addresses(servers), 0, 2, true), train, nullptr, &r0);
  t.join();
  ASSERT_TRUE(s0.ok()) << s0.ToString();
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(servers[0]->shard().global_step(), 10);
  EXPECT_EQ(servers[1]->shard().global_step(), 10);
  EXPECT_EQ(r0.train.examples + r1.train.examples, 2 * 420);
  EXPECT_EQ(r0.train.examples, 2 * (4 * 50 + 20));  // batches 0 2 4 6 8 (the partial one) of each epoch
}

TEST(PsTrainingTest, TwoAsyncWorkersEachApplyTheirOwnSteps) {
  auto servers = StartServers(2, "fixed_size");
  const train::Dataset train = Data(420, 4), valid = Data(300, 5);
  train::TrainOptions o = Options(false, "adam");
  o.epochs = 4;
  PsTrainResult r0, r1;
  Status s1;
  std::thread t([&] { s1 = RunPsTraining(o, PsOptions(Addresses(servers), 1, 2, false), train, nullptr, &r1); });
  Status s0 = RunPsTraining(o, PsOptions(Addresses(servers), 0, 2, false), train, &valid, &r0);
  t.join();
  ASSERT_TRUE(s0.ok()) << s0.ToString();
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(r0.train.steps, 4 * 5);
  EXPECT_EQ(r1.train.steps, 4 * 4);
  EXPECT_EQ(servers[0]->shard().global_step(), 36);  // every push applied
  EXPECT_EQ(r0.train.examples + r1.train.examples, 4 * 420);
  ASSERT_TRUE(r0.train.evaluated);
  EXPECT_FALSE(r1.train.evaluated);  // only the chief evaluates
  EXPECT_GT(r0.train.eval.auc, 0.75);  // label follows field 0's id (10 % noise)
}

// One worker, either placement of the dense parameters: a run stopped after epoch 1 and resumed on servers
// restarted from their checkpoint ends with local training's model, bit for bit: the dense values and Adam
// slots (kept by the worker or by the servers) and the chief's BN moving statistics went into the servers'
// checkpoint and came back.
class PsResumeTest : public ::testing::TestWithParam<bool> {};

TEST_P(PsResumeTest, FromTheServersCheckpointBitForBit) {
  const std::string tag = GetParam() ? "_workers" : "_servers";
  const std::string local_dir = ctrain::testing::TestTempDir("ps_training", "resume_local" + tag);
  const std::string ps_dir = ctrain::testing::TestTempDir("ps_training", "resume_ps" + tag);
  const std::string export_dir = ctrain::testing::TestTempDir("ps_training", "resume_export" + tag);
  const train::Dataset train = Data(420, 11);
  train::TrainOptions o = Options(true, "adam");
  o.model_dir = local_dir;
  auto local = train::Trainer::Create(o);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  train::TrainResult lr;
  ASSERT_TRUE((*local)->Train(train, nullptr, &lr).ok());

  o.model_dir = ps_dir;
  PsTrainOptions po = PsOptions({}, 0, 1, false);
  po.dense_on_workers = GetParam();
  {
    auto servers = StartServers(2, "fixed_size", ps_dir);
    po.client.addresses = Addresses(servers);
    o.epochs = 1;
    PsTrainResult r;
    const Status st = RunPsTraining(o, po, train, nullptr, &r);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(r.global_step, 9);
  }  // the servers stop
  auto servers = StartServers(2, "fixed_size", ps_dir);
  ASSERT_TRUE(servers[0]->shard().restored());
  po.client.addresses = Addresses(servers);
  po.export_dir = export_dir;
  o.epochs = 2;
  PsTrainResult r;
  const Status st = RunPsTraining(o, po, train, nullptr, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.train.steps_this_run, 9);
  auto a = train::ReadTrainerCheckpoint(local_dir);
  auto x = train::ReadTrainerCheckpoint(export_dir);
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().ToString();
  ASSERT_TRUE(x.ok() && x->has_value()) << x.status().ToString();
  int dense_slots = 0;
  for (const train::NamedTensor& t : (*a)->ckpt.tensors) {
    const train::NamedTensor* u = (*x)->ckpt.Find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->f32.size(), t.f32.size()) << t.name;
    EXPECT_EQ(std::memcmp(u->f32.data(), t.f32.data(), t.f32.size() * 4), 0) << t.name << " differs";
    dense_slots += t.name.rfind("mlp", 0) == 0 && (t.name.ends_with("/m") || t.name.ends_with("/v"));
  }
  EXPECT_GT(dense_slots, 0);  // the comparison covered the dense Adam slots
}

INSTANTIATE_TEST_SUITE_P(DensePlacement, PsResumeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "workers" : "servers"; });

// --ps-dense workers, two workers: every --ps-dense-sync-steps k-th push carries each worker's dense delta
// (counted by the servers), the models train, and sync replicas stay deterministic (the deltas of a round are
// averaged in worker order).
TEST(PsTrainingTest, TwoWorkersKeepingTheDenseParametersAverageThemEveryKSteps) {
  const train::Dataset train = Data(420, 12), valid = Data(300, 13);
  train::TrainOptions o = Options(false, "adam");
  o.epochs = 4;
  auto run = [&](bool sync, int64_t k, PsTrainResult* r0, std::vector<float>* dense) {
    auto servers = StartServers(2, "mod");
    PsTrainResult r1;
    Status s1;
    PsTrainOptions p0 = PsOptions(Addresses(servers), 0, 2, sync), p1 = PsOptions(Addresses(servers), 1, 2, sync);
    for (PsTrainOptions* p : {&p0, &p1}) p->dense_on_workers = true, p->dense_sync_steps = k;
    std::thread t([&] { s1 = RunPsTraining(o, p1, train, nullptr, &r1); });
    const Status s0 = RunPsTraining(o, p0, train, &valid, r0);
    t.join();
    ASSERT_TRUE(s0.ok()) << s0.ToString();
    ASSERT_TRUE(s1.ok()) << s1.ToString();
    int64_t syncs = 0;
    for (const auto& s : servers) syncs += s->shard().StatusJson()["dense_syncs"].get<int64_t>();
    // Per server holding dense parameters: the pushes of every k-th step of each worker, plus each worker's
    // flush at the end.
    const int64_t steps0 = r0->train.steps, steps1 = r1.train.steps;
    EXPECT_EQ(syncs, 2 * (steps0 / k + steps1 / k + 2)) << "sync " << sync << " k " << k;
    dense->clear();
    for (const auto& s : servers) {
      proto::PullRequest req;
      req.set_dense(true);
      proto::PullResponse resp;
      ASSERT_TRUE(s->shard().Pull(req, &resp).ok());
      for (const std::string& b : resp.dense())
        dense->insert(dense->end(), reinterpret_cast<const float*>(b.data()),
                      reinterpret_cast<const float*>(b.data()) + b.size() / 4);
    }
  };
  PsTrainResult a, b, c;
  std::vector<float> da, db, dc;
  run(true, 2, &a, &da);
  run(true, 2, &b, &db);
  EXPECT_EQ(a.train.steps, 20);  // 5 rounds an epoch
  EXPECT_EQ(da, db);              // deterministic
  EXPECT_EQ(a.train.eval.auc, b.train.eval.auc);
  EXPECT_GT(a.train.eval.auc, 0.75);  // label follows field 0's id (10 % noise)
  run(false, 3, &c, &dc);
  EXPECT_GT(c.train.eval.auc, 0.75);
}

TEST(PsTrainingTest, RefusesBadWorkerSettings) {
  const train::Dataset train = Data(10, 6);
  train::TrainOptions o = Options(false, "adam");
  PsTrainResult r;
  EXPECT_EQ(RunPsTraining(o, PsOptions({"127.0.0.1:1"}, 2, 2, false), train, nullptr, &r).code(),
            StatusCode::kInvalidArgument);
  PsTrainOptions p = PsOptions({"127.0.0.1:1"}, 0, 1, true);
  p.max_staleness = 3;
  EXPECT_EQ(RunPsTraining(o, p, train, nullptr, &r).code(), StatusCode::kInvalidArgument);
  o.parallel.towers = 2;
  EXPECT_EQ(RunPsTraining(o, PsOptions({"127.0.0.1:1"}, 0, 1, false), train, nullptr, &r).code(),
            StatusCode::kInvalidArgument);
  // Options the trainer cannot honour over servers are named (before any call to them).
  o.parallel.towers = 1;
  o.model_dir = ctrain::testing::TestTempDir("ps_training", "refused");
  o.keep_best = true;
  Status st = RunPsTraining(o, PsOptions({"127.0.0.1:1"}, 0, 1, true), train, nullptr, &r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--keep-best is not supported with --ps (worker 0 of 1, sync replicas)"),
            std::string::npos) << st.ToString();
  o.keep_best = false;
  o.warm_start_from = "/nonexistent";
  st = RunPsTraining(o, PsOptions({"127.0.0.1:1"}, 0, 1, true), train, nullptr, &r);
  EXPECT_NE(st.message().find("--warm-start-from is not supported with --ps"), std::string::npos) << st.ToString();
  o.warm_start_from.clear();
  o.early_stopping_metric = "auc";
  o.early_stopping_patience = 2;
  st = RunPsTraining(o, PsOptions({"127.0.0.1:1"}, 0, 2, true), train, nullptr, &r);
  EXPECT_NE(st.message().find("--early-stopping-metric is not supported with --ps (worker 0 of 2, sync replicas) "
                              "and more than one worker"),
            std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ctrain::ps
