// ps/chunking.h: chunk arithmetic, the server's staging of pushes, and pulls and
// pushes over the message size limit between real servers and a worker.
#include "ctrain/ps/chunking.h"

#include <gtest/gtest.h>

#include <numeric>

#include "ctrain/ps/parameter_server.grpc.pb.h"
#include "ctrain/service/channel.h"
#include "ps_testing.h"

namespace ctrain::ps {
namespace {

using testing::Addresses;
using testing::SmallModel;
using testing::Spec;

TEST(PsChunkingTest, BoundsFillEachChunkAndChunkZeroLeavesRoomForTheDenseParameters) {
  constexpr int64_t kLimit = 64 << 10;
  // K = 4: 5 floats a row, 30 bytes.
  const int64_t per = (kLimit - kChunkOverheadBytes) / RowBytes(5);
  EXPECT_EQ(per, 2048);
  EXPECT_EQ(RowsPerChunk(kLimit, 5, 0), per);
  EXPECT_EQ(ChunkBounds(5000, kLimit, 5, 0), (std::vector<int64_t>{0, 2048, 4096, 5000}));
  EXPECT_EQ(ChunkBounds(2048, kLimit, 5, 0), (std::vector<int64_t>{0, 2048}));
  EXPECT_EQ(ChunkBounds(0, kLimit, 5, 0), (std::vector<int64_t>{0, 0}));
  // 30,000 bytes of dense parameters leave chunk 0 room for 1,048 rows.
  EXPECT_EQ(ChunkBounds(3000, kLimit, 5, 30000), (std::vector<int64_t>{0, 1048, 3000}));
  // Dense parameters that fill chunk 0: it carries them alone.
  EXPECT_EQ(ChunkBounds(10, kLimit, 5, kLimit), (std::vector<int64_t>{0, 0, 10}));
  // An export with Adam's two slots: 15 floats a row.
  EXPECT_EQ(RowsPerChunk(kLimit, 15, 0), (kLimit - kChunkOverheadBytes) / 70);
  EXPECT_TRUE(CheckMaxMessageBytes(kMinMessageBytes, "--x").ok());
  const Status low = CheckMaxMessageBytes(1000, "--max-message-bytes");
  EXPECT_EQ(low.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(low.message().find("--max-message-bytes 1000 is not in [65536, 2147483647]"), std::string::npos)
      << low.ToString();
}

proto::PushRequest Chunk(int32_t worker, uint64_t push_id, int32_t c, int32_t n, std::vector<int64_t> ids,
                         bool with_w = true) {
  proto::PushRequest r;
  r.set_worker_index(worker);
  r.set_push_id(push_id);
  r.set_chunk(c);
  r.set_num_chunks(n);
  r.set_learning_rate(0.5f);
  r.set_examples(8);
  r.set_pulled_version(3);
  for (int64_t id : ids) {
    r.add_ids(id);
    const float g = static_cast<float>(id);
    if (with_w) r.mutable_w_grad()->append(reinterpret_cast<const char*>(&g), 4);
  }
  return r;
}

TEST(PsChunkingTest, AssemblerStagesChunksInOrderAndAsksForAPushAgainWhenOneIsMissing) {
  PushAssembler a;
  proto::PushRequest whole;
  using R = PushAssembler::Result;
  EXPECT_EQ(a.Add(Chunk(0, 9, 0, 3, {1, 2}), &whole).value(), R::kStaged);
  EXPECT_EQ(a.Add(Chunk(1, 4, 0, 2, {5}), &whole).value(), R::kStaged);  // another worker, interleaved
  EXPECT_EQ(a.Add(Chunk(0, 9, 1, 3, {4}), &whole).value(), R::kStaged);
  EXPECT_EQ(a.staged(), 2);
  EXPECT_EQ(a.Add(Chunk(0, 9, 2, 3, {7, 8}), &whole).value(), R::kComplete);
  EXPECT_EQ(std::vector<int64_t>(whole.ids().begin(), whole.ids().end()), (std::vector<int64_t>{1, 2, 4, 7, 8}));
  ASSERT_EQ(whole.w_grad().size(), 5u * 4);
  const float* w = reinterpret_cast<const float*>(whole.w_grad().data());
  EXPECT_EQ(w[2], 4.0f);
  EXPECT_EQ(w[4], 8.0f);
  EXPECT_EQ(whole.num_chunks(), 1);
  EXPECT_EQ(whole.learning_rate(), 0.5f);
  EXPECT_EQ(whole.pulled_version(), 3);
  EXPECT_EQ(a.staged(), 1);

  // A later chunk without its predecessors (the server restarted), or of another push: send again.
  EXPECT_EQ(a.Add(Chunk(2, 1, 1, 2, {3}), &whole).value(), R::kResend);
  EXPECT_EQ(a.Add(Chunk(1, 5, 1, 2, {9}), &whole).value(), R::kResend);  // push 4 is staged, not 5
  EXPECT_EQ(a.staged(), 0);  // worker 1's push 4 was dropped with it
  // A chunk 0 replaces an unfinished push of the same worker.
  EXPECT_EQ(a.Add(Chunk(1, 6, 0, 2, {1}), &whole).value(), R::kStaged);
  EXPECT_EQ(a.Add(Chunk(1, 7, 0, 2, {2}), &whole).value(), R::kStaged);
  EXPECT_EQ(a.Add(Chunk(1, 7, 1, 2, {3}), &whole).value(), R::kComplete);
  EXPECT_EQ(std::vector<int64_t>(whole.ids().begin(), whole.ids().end()), (std::vector<int64_t>{2, 3}));
}

TEST(PsChunkingTest, AssemblerRefusesChunksThatDoNotFitTogetherAndDropsThePush) {
  PushAssembler a;
  proto::PushRequest whole;
  auto refused = [&](proto::PushRequest later, const std::string& want) {
    ASSERT_EQ(a.Add(Chunk(0, 1, 0, 2, {5, 6}), &whole).value(), PushAssembler::Result::kStaged);
    StatusOr<PushAssembler::Result> r = a.Add(std::move(later), &whole);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("chunk 1 of 2 of worker 0's push"), std::string::npos);
    EXPECT_EQ(a.staged(), 0);
  };
  refused(Chunk(0, 1, 1, 2, {6}), "do not follow the previous chunk's (id 6 after 6)");
  refused(Chunk(0, 1, 1, 2, {9}, /*with_w=*/false), "w or V gradients");
  proto::PushRequest lr = Chunk(0, 1, 1, 2, {9});
  lr.set_learning_rate(0.25f);
  refused(lr, "differs from chunk 0");
  proto::PushRequest dense = Chunk(0, 1, 1, 2, {9});
  dense.add_dense_grad("abcd");
  refused(dense, "dense gradients");
  StatusOr<PushAssembler::Result> r = a.Add(Chunk(0, 1, 2, 2, {9}), &whole);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

std::vector<std::unique_ptr<ParameterServer>> Servers(int32_t S, int64_t max_message_bytes) {
  return testing::StartServers(S, "fixed_size", "", "", max_message_bytes);
}

std::unique_ptr<PsClient> Client(const std::vector<std::string>& addresses, int64_t max_message_bytes) {
  return testing::Connect(addresses, 0, "", max_message_bytes);
}

// Servers limited to 64 KiB and servers with the default limit get the same steps: pulls of every row (10,000 a
// shard, 13 chunks) and pushes with the dense gradients. Every value, the global steps and the staleness versions
// are equal; only the calls differ.
TEST(PsChunkingTest, PullsAndPushesOverTheLimitTravelInChunksAndGiveTheSameParameters) {
  constexpr int64_t kRows = 20000;
  constexpr int32_t K = 16;
  const model::DeepFMConfig m = SmallModel(kRows, K);
  auto small = Servers(2, kMinMessageBytes);
  auto large = Servers(2, kDefaultMaxMessageBytes);
  ASSERT_EQ(small.size(), 2u);
  ASSERT_EQ(large.size(), 2u);
  // The worker keeps the default limit: the servers' smaller one is what it must use.
  auto cs = Client(Addresses(small), kDefaultMaxMessageBytes);
  auto cl = Client(Addresses(large), kDefaultMaxMessageBytes);
  ASSERT_TRUE(cs->Init(Spec(m, "adagrad")).ok());
  ASSERT_TRUE(cl->Init(Spec(m, "adagrad")).ok());

  std::vector<int64_t> ids(kRows);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<float> wg(kRows), vg(kRows * K);
  for (int64_t i = 0; i < kRows; ++i) {
    wg[i] = 0.001f * static_cast<float>(i % 97 - 48);
    for (int32_t k = 0; k < K; ++k) vg[i * K + k] = 0.0005f * static_cast<float>((i * 7 + k) % 61 - 30);
  }
  std::vector<std::vector<float>> dense_s, dense_l;
  std::vector<float> ws(kRows), vs(kRows * K), wl(kRows), vl(kRows * K);
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(cs->Pull(ids, ws.data(), vs.data(), &dense_s).ok());
    ASSERT_TRUE(cl->Pull(ids, wl.data(), vl.data(), &dense_l).ok());
    ASSERT_EQ(ws, wl) << "step " << step;
    ASSERT_EQ(vs, vl) << "step " << step;
    ASSERT_EQ(dense_s, dense_l) << "step " << step;
    std::vector<std::vector<float>> dg(dense_s.size());
    std::vector<const float*> dp;
    for (size_t i = 0; i < dg.size(); ++i) {
      dg[i].assign(dense_s[i].size(), 0.01f * static_cast<float>(step));
      dp.push_back(dg[i].data());
    }
    ASSERT_TRUE(cs->Push(ids, wg.data(), vg.data(), &dp, 0.05f, 64).ok());
    ASSERT_TRUE(cl->Push(ids, wg.data(), vg.data(), &dp, 0.05f, 64).ok());
  }
  ASSERT_TRUE(cs->Pull(ids, ws.data(), vs.data(), &dense_s).ok());
  ASSERT_TRUE(cl->Pull(ids, wl.data(), vl.data(), &dense_l).ok());
  EXPECT_EQ(ws, wl);
  EXPECT_EQ(vs, vl);
  EXPECT_EQ(dense_s, dense_l);
  EXPECT_NE(ws[123], 0.0f);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(small[s]->shard().global_step(), 3);  // one update per push, not per chunk
    EXPECT_EQ(large[s]->shard().global_step(), 3);
  }
  // 10,000 rows a shard at (65,536 - 4,096) / 78 = 787 rows a chunk: 13 chunks (chunk 0 also holds the dense
  // parameters: fewer rows). 4 pulls and 3 pushes, 2 shards.
  const int64_t per_call = static_cast<int64_t>(ChunkBounds(10000, kMinMessageBytes, 1 + K, 0).size()) - 2;
  EXPECT_EQ(per_call, 12);
  EXPECT_GE(cs->stats().extra_chunks, 7 * 2 * per_call);
  EXPECT_EQ(cl->stats().extra_chunks, 0);
  EXPECT_EQ(cs->stats().resent_pushes, 0);
}

// A chunk sent to a server that has not seen the ones before it (it restarted) is answered `resend`, and
// nothing is applied.
TEST(PsChunkingTest, AServerAsksForAPushAgainWhenItMissedItsFirstChunks) {
  auto servers = Servers(1, kMinMessageBytes);
  ASSERT_EQ(servers.size(), 1u);
  auto c = Client(Addresses(servers), kMinMessageBytes);
  ASSERT_TRUE(c->Init(Spec(SmallModel(50, 4), "sgd")).ok());
  service::ChannelConfig channel;
  auto stub = proto::ParameterServer::NewStub(service::MakeChannel(servers[0]->address(), channel).value());
  proto::PushRequest req = Chunk(0, 77, 1, 2, {3, 4});
  req.mutable_v_grad()->assign(2 * 4 * 4, '\0');
  proto::PushResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->Push(&ctx, req, &resp).ok());
  EXPECT_TRUE(resp.resend());
  EXPECT_FALSE(resp.staged());
  EXPECT_EQ(resp.global_step(), 0);
  EXPECT_EQ(servers[0]->shard().global_step(), 0);
  // A worker index outside the job is refused before anything is staged.
  req.set_worker_index(5);
  req.set_chunk(0);
  grpc::ClientContext ctx2;
  const grpc::Status bad = stub->Push(&ctx2, req, &resp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("worker_index 5 not in [0, 1)"), std::string::npos) << bad.error_message();
}

TEST(PsChunkingTest, AModelWhoseDenseParametersDoNotFitOneMessageIsRefusedAtInitNamingTheOptions) {
  model::DeepFMConfig m = SmallModel(50, 4);
  m.deep_layers = {200, 200};  // 40,000+ floats: 160 KB of dense parameters
  {
    auto servers = Servers(1, kDefaultMaxMessageBytes);
    auto c = Client(Addresses(servers), kMinMessageBytes);
    const Status s = c->Init(Spec(m, "sgd"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("over --ps-max-message-bytes 65536"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("the servers' --max-message-bytes"), std::string::npos) << s.ToString();
  }
  {
    auto servers = Servers(1, kMinMessageBytes);
    auto c = Client(Addresses(servers), kDefaultMaxMessageBytes);
    const Status s = c->Init(Spec(m, "sgd"));
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(s.message().find("raise the server's --max-message-bytes"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace ctrain::ps

namespace ctrain::ps {
namespace {

// --ps-export-dir pulls the dense parameters with their optimizer slots in one message: a chief whose export would
// not fit is told at Init, naming both options and the size to raise them to.
TEST(PsChunkingTest, AnExportThatWouldNotFitIsRefusedBeforeTraining) {
  model::DeepFMConfig m = testing::SmallModel(50, 4);
  m.deep_layers = {100, 100};  // 10,000+ floats: 42 KB of dense parameters, 126 KB with Adam's two slots
  auto servers = testing::StartServers(1, "fixed_size", "", "", kMinMessageBytes);
  auto c = testing::Connect(Addresses(servers), 0, "", kMinMessageBytes);
  ASSERT_TRUE(c->Init(testing::Spec(m, "adam")).ok());
  EXPECT_TRUE(c->CheckDenseFits(0, "--ps-export-dir").ok());
  const Status s = c->CheckDenseFits(2, "--ps-export-dir");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--ps-export-dir: parameter server shard 0 at"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("with their 2 optimizer slot(s)"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("raise --ps-max-message-bytes and the servers' --max-message-bytes to at least"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace ctrain::ps
