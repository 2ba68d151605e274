// ParameterShard's dense state (ps/shard_dense.cc, --ps-dense workers), without
// RPC: asynchronous deltas are added / num_workers as they come; sync replicas
// add their mean, in worker order; a dense_only push's values and slots replace the servers' and
// is not a training step; malformed dense state is refused and leaves the
// shard as it was; workers of one job that place the dense parameters
// differently are refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/ps/shard.h"
#include "ps_testing.h"

namespace ctrain::ps {
namespace {

using testing::SmallModel;
using testing::Spec;

using Tensors = std::vector<std::vector<float>>;

std::unique_ptr<ParameterShard> OneShard(int32_t workers, bool sync, const std::string& placement = "workers/1") {
  ShardOptions o;
  o.num_shards = 1;  // every dense parameter on this shard
  o.log = [](const std::string&) {};
  auto s = ParameterShard::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  proto::InitRequest init;
  *init.mutable_spec() = Spec(SmallModel(50, 4), "adam", workers, sync);
  init.mutable_spec()->set_dense_placement(placement);
  proto::InitResponse resp;
  const Status st = (*s)->Init(init, &resp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return std::move(*s);
}

// The shard's dense values, and with `slots` its Adam slots ([parameter * 2 + slot]).
Tensors Dense(ParameterShard& s, Tensors* slots = nullptr) {
  proto::PullRequest req;
  req.set_dense(true);
  req.set_slots(slots != nullptr);
  proto::PullResponse r;
  const Status st = s.Pull(req, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto unpack = [](const std::string& b) {
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  Tensors out;
  for (const std::string& b : r.dense()) out.push_back(unpack(b));
  if (slots != nullptr)
    for (const std::string& b : r.dense_slots()) slots->push_back(unpack(b));
  return out;
}

void Put(const std::vector<float>& v, std::string* out) { out->assign(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

// A push of `worker` whose dense deltas are `delta` in every element (shaped like `like`).
proto::PushRequest DeltaPush(int32_t worker, const Tensors& like, float delta, bool dense_only) {
  proto::PushRequest p;
  p.set_worker_index(worker);
  p.set_learning_rate(0.01f);
  p.set_examples(dense_only ? 0 : 10);
  p.set_dense_only(dense_only);
  for (const auto& t : like) Put(std::vector<float>(t.size(), delta), p.add_dense_delta());
  return p;
}

TEST(PsShardDenseTest, AsyncDeltasAreAddedAsTheyComeEachOverTheWorkers) {
  auto s = OneShard(2, false);
  const Tensors v0 = Dense(*s);
  ASSERT_FALSE(v0.empty());
  proto::PushResponse r;
  ASSERT_TRUE(s->Push(DeltaPush(0, v0, 0.5f, false), &r).ok());
  EXPECT_EQ(r.global_step(), 1);  // a training step (no rows here)
  ASSERT_TRUE(s->Push(DeltaPush(1, v0, 0.25f, true), &r).ok());
  EXPECT_EQ(r.global_step(), 1);  // dense_only: not a step
  const Tensors v = Dense(*s);
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t e = 0; e < v[i].size(); ++e) {
      float want = v0[i][e];
      want += 0.5f * 0.5f;
      want += 0.5f * 0.25f;
      ASSERT_EQ(v[i][e], want) << i << " " << e;
    }
  EXPECT_EQ(s->StatusJson()["dense_syncs"], 2);
}

TEST(PsShardDenseTest, SyncReplicasAddTheMeanOfTheRoundsDeltasInWorkerOrder) {
  auto s = OneShard(2, true);
  const Tensors v0 = Dense(*s);
  proto::PushResponse r0, r1;
  Status s1;
  // Worker 1 arrives first; the sums still go worker 0, then worker 1.
  std::thread t([&] { s1 = s->Push(DeltaPush(1, v0, 3.0f, false), &r1); });
  while (s->StatusJson()["pushes"] != 1) std::this_thread::yield();
  ASSERT_TRUE(s->Push(DeltaPush(0, v0, 1.0f, false), &r0).ok());
  t.join();
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(r0.global_step(), 1);
  Tensors v = Dense(*s);
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t e = 0; e < v[i].size(); ++e) {
      float want = v0[i][e];
      want += 0.5f * 1.0f;
      want += 0.5f * 3.0f;
      ASSERT_EQ(v[i][e], want) << i << " " << e;
    }
  // A flush outside the rounds (dense_only) adds its share at once: 1 / num_workers of it, no step.
  const Tensors v1 = v;
  ASSERT_TRUE(s->Push(DeltaPush(1, v0, 2.0f, true), &r1).ok());
  EXPECT_EQ(r1.global_step(), 1);
  v = Dense(*s);
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t e = 0; e < v[i].size(); ++e) ASSERT_EQ(v[i][e], v1[i][e] + 0.5f * 2.0f);
}

TEST(PsShardDenseTest, ADenseOnlyPushsValuesAndSlotsReplaceTheServersAndAreNotAStep) {
  auto s = OneShard(1, false);
  Tensors slots0;
  const Tensors v0 = Dense(*s, &slots0);
  ASSERT_EQ(slots0.size(), v0.size() * 2);  // Adam: m and v
  proto::PushRequest p;
  p.set_dense_only(true);
  for (size_t i = 0; i < v0.size(); ++i) {
    Put(std::vector<float>(v0[i].size(), 7.0f + i), p.add_dense_value());
    Put(std::vector<float>(v0[i].size(), 0.125f), p.add_dense_slot());
    Put(std::vector<float>(v0[i].size(), 0.25f + i), p.add_dense_slot());
  }
  proto::PushResponse r;
  ASSERT_TRUE(s->Push(p, &r).ok());
  EXPECT_EQ(r.global_step(), 0);
  EXPECT_EQ(s->global_step(), 0);
  Tensors slots;
  const Tensors v = Dense(*s, &slots);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i], std::vector<float>(v0[i].size(), 7.0f + i));
    EXPECT_EQ(slots[2 * i], std::vector<float>(v0[i].size(), 0.125f));
    EXPECT_EQ(slots[2 * i + 1], std::vector<float>(v0[i].size(), 0.25f + i));
  }
}

TEST(PsShardDenseTest, MalformedDenseStateIsRefusedAndChangesNothing) {
  auto s = OneShard(1, false);
  const Tensors v0 = Dense(*s);
  struct Case {
    const char* what;
    std::function<void(proto::PushRequest*)> edit;
    const char* message;
  };
  const Case cases[] = {
      {"a delta too few", [](proto::PushRequest* p) { p->mutable_dense_delta()->RemoveLast(); }, "dense deltas for"},
      {"a short delta", [](proto::PushRequest* p) { p->mutable_dense_delta(0)->pop_back(); }, "bytes, want"},
      {"values in a step push",
       [&](proto::PushRequest* p) {
         p->clear_dense_delta();
         for (const auto& t : v0) Put(t, p->add_dense_value());
       },
       "dense values and slots travel only in a dense_only push"},
      {"deltas and values",
       [&](proto::PushRequest* p) {
         p->set_dense_only(true);
         p->set_examples(0);
         for (const auto& t : v0) Put(t, p->add_dense_value());
       },
       "dense deltas and dense values in one push"},
      {"deltas and gradients",
       [&](proto::PushRequest* p) {
         for (const auto& t : v0) Put(t, p->add_dense_grad());
       },
       "dense deltas and dense gradients in one push"},
      {"slots of another count",
       [&](proto::PushRequest* p) {
         p->set_dense_only(true);
         p->set_examples(0);
         Put(v0[0], p->add_dense_slot());
       },
       "dense optimizer slots for"},
      {"a dense_only push with examples", [](proto::PushRequest* p) { p->set_dense_only(true); },
       "a dense_only push carries no ids, examples or dense gradients"},
  };
  for (const Case& c : cases) {
    proto::PushRequest p = DeltaPush(0, v0, 1.0f, false);
    c.edit(&p);
    proto::PushResponse r;
    const Status st = s->Push(p, &r);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << c.what << ": " << st.ToString();
  }
  EXPECT_EQ(Dense(*s), v0);
  EXPECT_EQ(s->global_step(), 0);
}

TEST(PsShardDenseTest, WorkersThatPlaceTheDenseParametersDifferentlyAreRefused) {
  auto s = OneShard(3, false, "workers/4");
  for (const char* other : {"servers", "", "workers/1"}) {
    proto::InitRequest init;
    *init.mutable_spec() = Spec(SmallModel(50, 4), "adam", 3, false);
    init.mutable_spec()->set_dense_placement(other);
    init.set_worker_index(1);
    proto::InitResponse resp;
    const Status st = s->Init(init, &resp);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << other;
    EXPECT_NE(st.message().find("--ps-dense and --ps-dense-sync-steps must be the same on every worker"),
              std::string::npos)
        << st.ToString();
  }
  proto::InitRequest init;
  *init.mutable_spec() = Spec(SmallModel(50, 4), "adam", 3, false);
  init.mutable_spec()->set_dense_placement("workers/4");
  init.set_worker_index(2);
  proto::InitResponse resp;
  EXPECT_TRUE(s->Init(init, &resp).ok());
}

}  // namespace
}  // namespace ctrain::ps
