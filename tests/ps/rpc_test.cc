// The parameter servers over gRPC, in process: loopback binding, the token,
// RemoteParameterTable against LocalParameterTable, malformed requests, the
// staleness bound, sync rounds, and a restart from the shard's checkpoint.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "ctrain/base/clock.h"
#include "ctrain/model/deepfm.h"
#include "ctrain/ps/admin.h"
#include "ctrain/ps/client.h"
#include "ctrain/ps/dense_placement.h"
#include "ctrain/ps/parameter_server.grpc.pb.h"
#include "ctrain/ps/server.h"
#include "ps/ps_testing.h"
#include "testing/temp_dir.h"

namespace ctrain::ps {
namespace {

using testing::Addresses;
using testing::Connect;
using testing::SmallModel;
using testing::Spec;
using testing::StartServers;

TEST(PsRpcTest, BindsLoopbackByDefaultAndRefusesAWrongToken) {
  auto servers = StartServers(1, "fixed_size", "", "s3cret");
  ASSERT_EQ(servers.size(), 1u);
  EXPECT_EQ(servers[0]->address().rfind("127.0.0.1:", 0), 0u) << servers[0]->address();
  for (const std::string token : {"", "wrong"}) {
    auto c = Connect(Addresses(servers), 0, token);
    Status st = c->Init(Spec(SmallModel(), "sgd"));
    EXPECT_EQ(st.code(), StatusCode::kUnauthenticated) << st.ToString();
  }
  auto ok = Connect(Addresses(servers), 0, "s3cret");
  EXPECT_TRUE(ok->Init(Spec(SmallModel(), "sgd")).ok());
}

// The servers hold what local tables would hold, and apply the same updates.
TEST(PsRpcTest, RemoteTableMatchesLocalTables) {
  for (const char* part : {"fixed_size", "mod"}) {
    SCOPED_TRACE(part);
    auto servers = StartServers(3, part);
    ASSERT_EQ(servers.size(), 3u);
    auto c = Connect(Addresses(servers));
    const model::DeepFMConfig m = SmallModel(50, 4);
    ASSERT_TRUE(c->Init(Spec(m, "adam")).ok());
    EXPECT_EQ(c->partitioner().name(), part);

    // Local reference: the same initial values, the same optimizer.
    optim::OptimizerConfig oc;
    oc.name = "adam";
    oc.learning_rate = 0.05f;
    auto w = train::LocalParameterTable::Create("w", 50, 1, std::move(optim::MakeOptimizer(oc)).value()).value();
    auto v = train::LocalParameterTable::Create("V", 50, 4, std::move(optim::MakeOptimizer(oc)).value()).value();
    model::InitEmbeddings(7, 50, 4, w->data(), v->data());

    RemoteParameterTable remote(c.get(), 50, 4, 0.05f);
    EXPECT_EQ(remote.dim(), 5);
    const std::vector<int64_t> ids = {3, 17, 3, 49, 0};
    auto check = [&] {
      std::vector<float> got(ids.size() * 5), ww(ids.size()), vv(ids.size() * 4);
      ASSERT_TRUE(remote.Pull(ids, got.data()).ok());
      ASSERT_TRUE(w->Pull(ids, ww.data()).ok());
      ASSERT_TRUE(v->Pull(ids, vv.data()).ok());
      for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(got[i * 5], ww[i]) << "id " << ids[i];
        for (int k = 0; k < 4; ++k) EXPECT_EQ(got[i * 5 + 1 + k], vv[i * 4 + k]) << "id " << ids[i];
      }
    };
    check();
    const std::vector<int64_t> gids = {0, 3, 17, 49};
    std::vector<float> g(4 * 5), gw(4), gv(16);
    for (int i = 0; i < 20; ++i) g[i] = 0.1f * (i - 7);
    for (int i = 0; i < 4; ++i) {
      gw[i] = g[i * 5];
      for (int k = 0; k < 4; ++k) gv[i * 4 + k] = g[i * 5 + 1 + k];
    }
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(remote.Push(train::SparseRows{gids, g.data(), 5}, step).ok());
      ASSERT_TRUE(w->Push(train::SparseRows{gids, gw.data(), 1}, step).ok());
      ASSERT_TRUE(v->Push(train::SparseRows{gids, gv.data(), 4}, step).ok());
    }
    check();
    StatusOr<nlohmann::json> st = GetPsStatus(Addresses(servers), {}, 5000);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_EQ((*st)["shards"].size(), 3u);
    int64_t rows = 0;
    for (const auto& s : (*st)["shards"]) {
      EXPECT_EQ(s["global_step"], 3);
      EXPECT_EQ(s["pushes"], 3);
      rows += s["rows"].get<int64_t>();
    }
    EXPECT_EQ(rows, 50);
    EXPECT_LE((*st)["balance"]["rows_max_over_min"].get<double>(), 17.0 / 16.0);
    EXPECT_NE(FormatPsStatus(*st).find("balance: rows max/min"), std::string::npos);
  }
}

TEST(PsRpcTest, MalformedRequestsGetAnErrorAndChangeNothing) {
  auto servers = StartServers(2, "fixed_size");
  auto c = Connect(Addresses(servers));
  ASSERT_TRUE(c->Init(Spec(SmallModel(50, 4), "sgd")).ok());
  auto ch = service::MakeChannel(servers[1]->address(), {});
  auto stub = proto::ParameterServer::NewStub(*ch);
  auto push = [&](const proto::PushRequest& req) {
    grpc::ClientContext ctx;
    proto::PushResponse resp;
    return stub->Push(&ctx, req, &resp);
  };
  proto::PushRequest req;
  req.set_learning_rate(0.1f);
  req.add_ids(30);
  req.add_ids(26);  // shard 1 holds 25..49; not increasing
  req.set_w_grad(std::string(8, '\0'));
  grpc::Status st = push(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "Push: ids not strictly increasing at index 1");
  req.clear_ids();
  req.add_ids(3);  // shard 0's
  req.set_w_grad(std::string(4, '\0'));
  st = push(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "Push: id 3 belongs to shard 0, not 1");
  req.clear_ids();
  req.add_ids(30);
  req.set_w_grad(std::string(3, '\0'));  // not one float
  EXPECT_EQ(push(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.set_w_grad(std::string(4, '\0'));
  req.set_worker_index(5);
  EXPECT_EQ(push(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  proto::PullRequest pr;
  pr.add_ids(50);
  grpc::ClientContext ctx;
  proto::PullResponse resp;
  st = stub->Pull(&ctx, pr, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "feature id 50 out of range [0, 50): increase --feature-size");
  EXPECT_EQ(servers[1]->shard().global_step(), 0);
}

TEST(PsRpcTest, StalenessBoundDropsOldGradients) {
  auto servers = StartServers(1, "mod");
  auto c = Connect(Addresses(servers));
  ASSERT_TRUE(c->Init(Spec(SmallModel(), "sgd", 1, false, /*max_staleness=*/1)).ok());
  std::vector<int64_t> ids = {1, 2};
  std::vector<float> w(2), v(8), gw = {1, 1}, gv(8, 1.0f);
  ASSERT_TRUE(c->Pull(ids, w.data(), v.data(), nullptr).ok());  // version 0
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c->Push(ids, gw.data(), gv.data(), nullptr, 0.1f, 2).ok());
  // Pushes at versions 0 and 1 are within 1 update of the pull; the third (2 updates later) is dropped.
  EXPECT_EQ(c->stats().dropped_stale, 1);
  EXPECT_EQ(servers[0]->shard().global_step(), 2);
  EXPECT_EQ(servers[0]->shard().StatusJson()["dropped_stale"], 1);
}

TEST(PsRpcTest, SyncRoundAveragesWorkersWeightedByExamples) {
  auto servers = StartServers(2, "fixed_size");
  const model::DeepFMConfig m = SmallModel(50, 4);
  auto c0 = Connect(Addresses(servers), 0), c1 = Connect(Addresses(servers), 1);
  ASSERT_TRUE(c0->Init(Spec(m, "sgd", 2, true)).ok());
  ASSERT_TRUE(c1->Init(Spec(m, "sgd", 2, true)).ok());
  std::vector<int64_t> ids = {10, 40};
  std::vector<float> w0(2), v0(8);
  ASSERT_TRUE(c0->Pull(ids, w0.data(), v0.data(), nullptr).ok());
  std::vector<float> g0 = {1, 1}, g1 = {4, 4}, gv(8, 0.0f);
  Status s1;
  std::thread t([&] { s1 = c1->Push(ids, g1.data(), gv.data(), nullptr, 0.5f, 3); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(servers[0]->shard().global_step(), 0);  // waits for worker 0
  ASSERT_TRUE(c0->Push(ids, g0.data(), gv.data(), nullptr, 0.5f, 1).ok());
  t.join();
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(servers[0]->shard().global_step(), 1);
  EXPECT_EQ(servers[1]->shard().global_step(), 1);
  std::vector<float> w1(2), v1(8);
  ASSERT_TRUE(c0->Pull(ids, w1.data(), v1.data(), nullptr).ok());
  // SGD: w -= lr * (1/4 * 1 + 3/4 * 4) = lr * 3.25.
  for (int i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(w1[i], w0[i] - 0.5f * 3.25f);
}

TEST(PsRpcTest, SpecMismatchIsRefused) {
  auto servers = StartServers(1, "fixed_size");
  auto c = Connect(Addresses(servers));
  ASSERT_TRUE(c->Init(Spec(SmallModel(50, 4), "adam")).ok());
  auto d = Connect(Addresses(servers));
  Status st = d->Init(Spec(SmallModel(50, 8), "adam"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.ToString().find("embedding_size 4, this trainer asks for 8"), std::string::npos) << st.ToString();
}

TEST(PsRpcTest, ShardRestartsFromItsCheckpoint) {
  const std::string dir = ctrain::testing::TestTempDir("ps_rpc", "restart");
  std::vector<float> before(2), vb(8);
  std::vector<int64_t> ids = {5, 33};
  {
    auto servers = StartServers(2, "mod", dir);
    auto c = Connect(Addresses(servers));
    ASSERT_TRUE(c->Init(Spec(SmallModel(50, 4), "adagrad")).ok());
    std::vector<float> gw = {0.3f, -0.2f}, gv(8, 0.1f);
    ASSERT_TRUE(c->Push(ids, gw.data(), gv.data(), nullptr, 0.1f, 1).ok());
    std::vector<std::string> paths;
    int64_t step = 0;
    ASSERT_TRUE(c->Save({{"epoch", 1}}, {}, &paths, &step).ok());
    EXPECT_EQ(step, 1);
    ASSERT_EQ(paths.size(), 2u);
    EXPECT_NE(paths[1].find("/ps-shard-00001-of-00002/ckpt-1.bin"), std::string::npos) << paths[1];
    ASSERT_TRUE(c->Pull(ids, before.data(), vb.data(), nullptr).ok());
  }
  auto servers = StartServers(2, "mod", dir);
  ASSERT_EQ(servers.size(), 2u);
  EXPECT_TRUE(servers[0]->shard().restored());
  EXPECT_EQ(servers[1]->shard().global_step(), 1);
  auto c = Connect(Addresses(servers));
  ASSERT_TRUE(c->Init(Spec(SmallModel(50, 4), "adagrad")).ok());
  EXPECT_EQ(c->initial_global_step(), 1);
  EXPECT_EQ(nlohmann::json::parse(c->restored_meta())["epoch"], 1);
  std::vector<float> after(2), va(8);
  ASSERT_TRUE(c->Pull(ids, after.data(), va.data(), nullptr).ok());
  EXPECT_EQ(before, after);
  EXPECT_EQ(vb, va);
  // A shard started with another partitioner refuses the checkpoint.
  ServerOptions o;
  o.shard.shard = 0;
  o.shard.num_shards = 2;
  o.shard.partitioner = "fixed_size";
  o.shard.model_dir = dir;
  StatusOr<std::unique_ptr<ParameterServer>> bad = ParameterServer::Start(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
}

// A server that comes back without a checkpoint is initialised again from the client's spec.
TEST(PsRpcTest, AServerRestartedWithoutACheckpointIsInitialisedAgain) {
  const model::DeepFMConfig m = SmallModel(50, 4);
  std::vector<int64_t> ids = {2, 7};
  std::vector<float> w0(2), v0(8), w1(2), v1(8), gw = {1, 1}, gv(8, 1.0f);
  std::vector<std::string> lines;
  ClientOptions co;
  co.max_wait = std::chrono::milliseconds(5000);
  co.log = [&](const std::string& l) { lines.push_back(l); };
  int port = 0;
  std::unique_ptr<PsClient> c;
  {
    auto servers = StartServers(1, "fixed_size");
    co.addresses = Addresses(servers);
    port = std::stoi(co.addresses[0].substr(co.addresses[0].rfind(':') + 1));
    c = std::move(PsClient::Connect(co)).value();
    ASSERT_TRUE(c->Init(Spec(m, "sgd")).ok());
    ASSERT_TRUE(c->Pull(ids, w0.data(), v0.data(), nullptr).ok());
    ASSERT_TRUE(c->Push(ids, gw.data(), gv.data(), nullptr, 0.1f, 1).ok());
  }
  ServerOptions o;
  o.server.port = port;
  o.shard.log = [](const std::string&) {};
  auto again = ParameterServer::Start(o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(c->Pull(ids, w1.data(), v1.data(), nullptr).ok());
  EXPECT_EQ(w0, w1);  // the initial values again: the pushed update died with the old server
  EXPECT_EQ(v0, v1);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("restarted without a checkpoint: initialising it again"), std::string::npos) << all;
}

// A shard that comes back from its checkpoint has lost the updates after it: every worker sees the restart (each
// answer names the server's life) and counts exactly its own lost pushes, whether its next call is a Pull or a
// Push, and whether or not it ever waited for the server (issue #21 item 7).
TEST(PsRpcTest, UpdatesLostToARestartAreCountedByEachWorkerExactly) {
  const std::string dir = ctrain::testing::TestTempDir("ps_rpc", "lost_updates");
  const model::DeepFMConfig m = SmallModel(50, 4);
  std::vector<int64_t> ids = {2, 7};
  std::vector<float> w(2), v(8), gw = {1, 1}, gv(8, 1.0f);
  std::vector<std::string> lines0, lines1;
  ServerOptions o;
  o.shard.model_dir = dir;
  o.shard.log = [](const std::string&) {};
  auto connect = [&](int32_t k, std::vector<std::string>* lines, const std::string& address) {
    ClientOptions co;
    co.max_wait = std::chrono::milliseconds(5000);
    co.worker_index = k;
    co.log = [lines](const std::string& l) { lines->push_back(l); };
    co.addresses = {address};
    return std::move(PsClient::Connect(co)).value();
  };
  auto push = [&](PsClient& c) { ASSERT_TRUE(c.Push(ids, gw.data(), gv.data(), nullptr, 0.1f, 1).ok()); };
  auto pull = [&](PsClient& c) { ASSERT_TRUE(c.Pull(ids, w.data(), v.data(), nullptr).ok()); };
  std::unique_ptr<PsClient> c0, c1;
  std::string address;
  {
    StatusOr<std::unique_ptr<ParameterServer>> server = ParameterServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    address = (*server)->address();
    o.server.port = std::stoi(address.substr(address.rfind(':') + 1));
    proto::ModelSpec spec = Spec(m, "sgd");
    spec.set_num_workers(2);
    c0 = connect(0, &lines0, address);
    c1 = connect(1, &lines1, address);
    ASSERT_TRUE(c0->Init(spec).ok());
    ASSERT_TRUE(c1->Init(spec).ok());
    push(*c0), push(*c1), push(*c0);  // updates 1, 2, 3
    std::vector<std::string> paths;
    int64_t step = 0;
    ASSERT_TRUE(c0->Save({{"epoch", 0}}, {}, &paths, &step).ok());
    ASSERT_EQ(step, 3);
    push(*c0), push(*c1), push(*c1), push(*c0), push(*c1);  // updates 4..8: two of worker 0's, three of worker 1's
    pull(*c0);
  }
  {  // back from the checkpoint of update 3; worker 0 learns of it from a Pull, worker 1 from a Push
    StatusOr<std::unique_ptr<ParameterServer>> server = ParameterServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    pull(*c0);
    push(*c1);  // update 4 again
    EXPECT_EQ(c0->stats().lost_updates, 2);
    EXPECT_EQ(c1->stats().lost_updates, 3);
    push(*c0), push(*c1);  // updates 5, 6: nothing more lost
    EXPECT_EQ(c0->stats().lost_updates, 2);
    EXPECT_EQ(c1->stats().lost_updates, 3);
  }
  {  // again from update 3: worker 0 lost its update 5, worker 1 its updates 4 and 6
    StatusOr<std::unique_ptr<ParameterServer>> server = ParameterServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    push(*c0), push(*c1);
    EXPECT_EQ(c0->stats().lost_updates, 3);
    EXPECT_EQ(c1->stats().lost_updates, 5);
  }
  auto all = [](const std::vector<std::string>& lines) {
    std::string a;
    for (const auto& l : lines) a += l + "\n";
    return a;
  };
  const std::string shard = "parameter server shard 0 at " + address;
  EXPECT_NE(all(lines0).find(shard + " restarted from its checkpoint of update 3 (it had applied at least 8): 2 of this "
                             "worker's updates, applied after that, are lost (each worker counts its own)"),
            std::string::npos)
      << all(lines0);
  EXPECT_NE(all(lines1).find(shard + " restarted from its checkpoint of update 3 (it had applied at least 8): 3 of this "
                             "worker's updates"),
            std::string::npos)
      << all(lines1);
  EXPECT_NE(all(lines1).find("(it had applied at least 6): 2 of this worker's updates"), std::string::npos)
      << all(lines1);
}

// Dense parameters are spread over the servers (ps/dense_placement.h), pulled and pushed in spec order.
TEST(PsRpcTest, DenseParametersAreSpreadOverTheServers) {
  EXPECT_EQ(PlaceDense({96, 8, 8, 1, 1}, 2), (std::vector<int32_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(PlaceDense({10, 30, 20}, 3), (std::vector<int32_t>{2, 0, 1}));
  auto servers = StartServers(2, "mod");
  auto c = Connect(Addresses(servers));
  const proto::ModelSpec spec = Spec(SmallModel(50, 4), "sgd");  // fm_bias [1], mlp0 [12, 8] + [8], deep_out [8, 1] + [1]
  ASSERT_TRUE(c->Init(spec).ok());
  EXPECT_EQ(servers[0]->shard().StatusJson()["dense_parameters"], 1);  // mlp0/weights (96 floats)
  EXPECT_EQ(servers[1]->shard().StatusJson()["dense_parameters"], 4);
  std::vector<int64_t> ids = {1};
  std::vector<float> w(1), v(4);
  std::vector<std::vector<float>> dense, after;
  ASSERT_TRUE(c->Pull(ids, w.data(), v.data(), &dense).ok());
  ASSERT_EQ(dense.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const std::string& b = spec.dense(i).values();
    ASSERT_EQ(dense[i].size() * 4, b.size()) << spec.dense(i).name();
    EXPECT_EQ(std::memcmp(dense[i].data(), b.data(), b.size()), 0) << spec.dense(i).name();
  }
  std::vector<std::vector<float>> grads(5);
  std::vector<const float*> gp;
  for (int i = 0; i < 5; ++i) {
    grads[i].assign(dense[i].size(), static_cast<float>(i + 1));
    gp.push_back(grads[i].data());
  }
  ASSERT_TRUE(c->Push(ids, nullptr, nullptr, &gp, 0.5f, 1).ok());
  ASSERT_TRUE(c->Pull(ids, w.data(), v.data(), &after).ok());
  for (int i = 0; i < 5; ++i)
    for (size_t e = 0; e < dense[i].size(); ++e)
      ASSERT_FLOAT_EQ(after[i][e], dense[i][e] - 0.5f * (i + 1)) << spec.dense(i).name() << " " << e;
}

}  // namespace
}  // namespace ctrain::ps

namespace ctrain::ps {
namespace {

// `ctrain ps --exit-when-workers-done`: the server serves until every worker of the job said Done, then Run
// returns by itself; a Done from a worker index outside the job is refused.
TEST(PsRpcTest, AServerExitsWhenEveryWorkerIsDone) {
  ServerOptions o;
  o.server.port = 0;
  o.shard.log = [](const std::string&) {};
  o.exit_when_workers_done = true;
  StatusOr<std::unique_ptr<ParameterServer>> server = ParameterServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::atomic<int> stop{0};
  std::atomic<bool> returned{false};
  Status run;
  std::thread t([&] {
    run = (*server)->Run(&stop);
    returned = true;
  });
  auto w0 = testing::Connect({(*server)->address()}, 0);
  auto w1 = testing::Connect({(*server)->address()}, 1);
  ASSERT_TRUE(w0->Init(testing::Spec(testing::SmallModel(), "sgd", /*workers=*/2)).ok());
  ASSERT_TRUE(w1->Init(testing::Spec(testing::SmallModel(), "sgd", /*workers=*/2)).ok());
  ASSERT_TRUE(w0->Done().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(returned.load()) << "one of two workers is done: the server must keep serving";
  EXPECT_FALSE((*server)->shard().AllWorkersDone());
  proto::DoneRequest bad;
  bad.set_worker_index(2);
  proto::DoneResponse resp;
  const Status refused = (*server)->shard().Done(bad, &resp);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("Done: worker_index 2 not in [0, 2)"), std::string::npos) << refused.ToString();
  ASSERT_TRUE(w0->Done().ok());  // twice is once
  ASSERT_TRUE(w1->Done().ok());
  const Deadline deadline(std::chrono::seconds(10));
  while (!returned.load() && !deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(returned.load()) << "every worker is done: Run should have returned";
  if (!returned.load()) stop = 1;
  t.join();
  EXPECT_TRUE(run.ok()) << run.ToString();
}

}  // namespace
}  // namespace ctrain::ps

namespace ctrain::ps {
namespace {

// A server that shuts down (SIGTERM) while a worker's push waits in a sync round answers Unavailable, and the
// worker waits for it to come back (here it does not: the wait ends after --ps-wait-seconds, named) instead of
// failing at once.
TEST(PsRpcTest, AServerShuttingDownDuringASyncRoundIsWaitedFor) {
  auto servers = StartServers(1, "fixed_size");
  ASSERT_EQ(servers.size(), 1u);
  ClientOptions o;
  o.addresses = Addresses(servers);
  o.max_wait = std::chrono::milliseconds(1500);
  std::vector<std::string> log;
  std::mutex log_mu;
  o.log = [&](const std::string& l) {
    std::lock_guard<std::mutex> g(log_mu);
    log.push_back(l);
  };
  auto c = PsClient::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->Init(Spec(SmallModel(), "sgd", /*workers=*/2, /*sync=*/true)).ok());
  const std::vector<int64_t> ids = {1, 2};
  const std::vector<float> g(2 * 5, 0.1f);
  Status pushed;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { pushed = (*c)->Push(ids, g.data(), g.data() + 2, nullptr, 0.1f, 1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // worker 0 waits for worker 1's push
  servers[0]->shard().Shutdown();
  t.join();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(pushed.code(), StatusCode::kDeadlineExceeded) << pushed.ToString();
  EXPECT_NE(pushed.message().find("gave up waiting for parameter server shard 0"), std::string::npos)
      << pushed.ToString();
  EXPECT_GE(waited, 1.5);
  std::lock_guard<std::mutex> g2(log_mu);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("shut down while a sync round waited for workers"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("waiting up to 1 s for it to come back"), std::string::npos) << log[0];
}

}  // namespace
}  // namespace ctrain::ps
