// The dispatcher and worker RPCs in-process on 127.0.0.1 (port 0), through
// the generated stubs: the service token on every method, malformed and
// oversized requests, and a split streamed with credits.
#include <gtest/gtest.h>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/dataservice/data_service.grpc.pb.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/dataservice/dispatcher.h"
#include "ctrain/dataservice/frame_codec.h"
#include "ctrain/dataservice/worker.h"
#include "ctrain/service/auth.h"
#include "testing/temp_dir.h"

namespace ctrain::dataservice {
namespace {

using grpc::StatusCode;
constexpr int kRecords = 37;
constexpr int kBatch = 4;
constexpr int kBatches = (kRecords + kBatch - 1) / kBatch;  // 10
constexpr char kToken[] = "rpc-test-token";

std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// A context with a deadline and, unless `token` is null, the token.
std::unique_ptr<grpc::ClientContext> Ctx(const char* token = kToken, int seconds = 20) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  if (token != nullptr) service::AttachToken(ctx.get(), token);
  return ctx;
}

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ctrain::testing::TestTempDir("ds_rpc", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    file_ = dir_ + "/tiny.libsvm";
    std::ofstream out(file_);
    for (int i = 0; i < kRecords; ++i) out << (i % 2) << " " << i << ":1 " << 1000 + i << ":0.5 " << 2000 + i << ":2\n";
    out.close();

    DispatcherOptions d;
    d.server.token = kToken;
    d.log = [](const std::string&) {};
    StatusOr<std::unique_ptr<Dispatcher>> disp = Dispatcher::Start(d);
    ASSERT_TRUE(disp.ok()) << disp.status().ToString();
    dispatcher_ = std::move(*disp);
    WorkerOptions w;
    w.server.token = kToken;
    w.dispatcher = dispatcher_->address();
    w.channel.token = kToken;
    w.log = [](const std::string&) {};
    StatusOr<std::unique_ptr<Worker>> work = Worker::Start(w);
    ASSERT_TRUE(work.ok()) << work.status().ToString();
    worker_ = std::move(*work);
    dstub_ = proto::Dispatcher::NewStub(Channel(dispatcher_->address()));
    wstub_ = proto::Worker::NewStub(Channel(worker_->address()));
  }
  void TearDown() override {
    worker_.reset();
    dispatcher_.reset();
  }

  proto::DatasetDef Def() const {
    proto::DatasetDef d;
    d.add_files(file_);
    d.set_format("libsvm");
    d.set_compression("none");
    d.set_field_size(3);
    d.set_feature_size(4096);
    d.set_max_line_bytes(1 << 20);
    d.set_num_parallel_reads(1);
    d.set_batch_size(kBatch);
    d.set_order(std::string(data::kDefaultPipelineOrder));
    d.set_read_chunk_records(256);
    return d;
  }

  // The servers still answer a good call.
  void ExpectServing() {
    proto::GetStatusResponse r;
    EXPECT_TRUE(dstub_->GetStatus(Ctx().get(), proto::GetStatusRequest(), &r).ok());
    EXPECT_NE(r.status_json().find("\"workers\""), std::string::npos);
    // The worker: a stream that is refused for a bad split still gets an answer.
    auto ctx = Ctx();
    auto stream = wstub_->StreamSplit(ctx.get());
    proto::StreamRequest open;
    *open.mutable_dataset() = Def();
    open.mutable_split()->set_num_splits(0);
    stream->Write(open);
    stream->WritesDone();
    proto::BatchFrame f;
    while (stream->Read(&f)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  }

  std::string RegisterOk() {
    proto::RegisterDatasetRequest req;
    *req.mutable_dataset() = Def();
    proto::RegisterDatasetResponse resp;
    grpc::Status s = dstub_->RegisterDataset(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.dataset_id();
  }

  std::string dir_, file_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<proto::Dispatcher::Stub> dstub_;
  std::unique_ptr<proto::Worker::Stub> wstub_;
};

TEST_F(RpcTest, EveryRpcNeedsTheToken) {
  for (const char* token : {static_cast<const char*>(nullptr), "wrong-token", "rpc-test-toke", ""}) {
    const std::string t = token ? std::string("\"") + token + "\"" : "none";
    std::vector<std::pair<std::string, grpc::Status>> calls;
    {
      proto::RegisterDatasetRequest req;
      *req.mutable_dataset() = Def();
      proto::RegisterDatasetResponse resp;
      calls.emplace_back("RegisterDataset", dstub_->RegisterDataset(Ctx(token).get(), req, &resp));
    }
    {
      proto::JoinJobResponse resp;
      calls.emplace_back("JoinJob", dstub_->JoinJob(Ctx(token).get(), proto::JoinJobRequest(), &resp));
    }
    {
      proto::GetSplitResponse resp;
      calls.emplace_back("GetSplit", dstub_->GetSplit(Ctx(token).get(), proto::GetSplitRequest(), &resp));
    }
    {
      proto::CompleteSplitResponse resp;
      calls.emplace_back("CompleteSplit", dstub_->CompleteSplit(Ctx(token).get(), proto::CompleteSplitRequest(), &resp));
    }
    {
      proto::ReleaseJobResponse resp;
      calls.emplace_back("ReleaseJob", dstub_->ReleaseJob(Ctx(token).get(), proto::ReleaseJobRequest(), &resp));
    }
    {
      proto::WorkerHeartbeatRequest req;
      req.set_worker_address("127.0.0.1:9");
      proto::WorkerHeartbeatResponse resp;
      calls.emplace_back("WorkerHeartbeat", dstub_->WorkerHeartbeat(Ctx(token).get(), req, &resp));
    }
    {
      proto::GetStatusResponse resp;
      calls.emplace_back("GetStatus", dstub_->GetStatus(Ctx(token).get(), proto::GetStatusRequest(), &resp));
      EXPECT_TRUE(resp.status_json().empty());
    }
    {
      proto::ShutdownResponse resp;
      calls.emplace_back("Shutdown", dstub_->Shutdown(Ctx(token).get(), proto::ShutdownRequest(), &resp));
    }
    {
      auto ctx = Ctx(token);
      auto stream = wstub_->StreamSplit(ctx.get());
      proto::StreamRequest open;
      *open.mutable_dataset() = Def();
      open.mutable_split()->set_num_splits(1);
      open.set_credits(100);
      stream->Write(open);
      stream->WritesDone();
      proto::BatchFrame f;
      int frames = 0;
      while (stream->Read(&f)) ++frames;
      EXPECT_EQ(frames, 0) << t;
      calls.emplace_back("StreamSplit", stream->Finish());
    }
    ASSERT_EQ(calls.size(), 9u);  // every method of both services
    EXPECT_EQ(proto::Dispatcher::service_full_name(), std::string("ctrain.dataservice.proto.Dispatcher"));
    for (const auto& [name, status] : calls) {
      EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED) << name << " with token " << t << ": "
                                                                  << status.error_message();
      EXPECT_NE(status.error_message().find("service token"), std::string::npos) << name;
    }
  }
  // Nothing happened: no dataset, no job, no shutdown.
  proto::GetStatusResponse r;
  ASSERT_TRUE(dstub_->GetStatus(Ctx().get(), proto::GetStatusRequest(), &r).ok());
  EXPECT_NE(r.status_json().find("\"datasets\":0"), std::string::npos) << r.status_json();
  EXPECT_NE(r.status_json().find("\"shutdown\":false"), std::string::npos) << r.status_json();
  EXPECT_NE(r.status_json().find("\"workers\":[]"), std::string::npos) << r.status_json();
}

TEST_F(RpcTest, MalformedDispatcherRequests) {
  auto reg = [&](const std::function<void(proto::DatasetDef*)>& mutate) {
    proto::RegisterDatasetRequest req;
    *req.mutable_dataset() = Def();
    mutate(req.mutable_dataset());
    proto::RegisterDatasetResponse resp;
    return dstub_->RegisterDataset(Ctx().get(), req, &resp);
  };
  grpc::Status s = reg([](proto::DatasetDef* d) { d->clear_files(); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = reg([](proto::DatasetDef* d) { d->set_files(0, "relative/file.libsvm"); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("relative/file.libsvm"), std::string::npos) << s.error_message();
  s = reg([](proto::DatasetDef* d) { d->set_batch_size(0); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("batch_size"), std::string::npos) << s.error_message();
  s = reg([](proto::DatasetDef* d) { d->set_format("nonsense"); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = reg([&](proto::DatasetDef* d) { d->set_files(0, dir_ + "/missing.libsvm"); });
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("missing.libsvm"), std::string::npos) << s.error_message();
  ExpectServing();

  const std::string id = RegisterOk();
  ASSERT_EQ(id.size(), 16u);
  {  // registering again is deduplicated
    proto::RegisterDatasetRequest req;
    *req.mutable_dataset() = Def();
    proto::RegisterDatasetResponse resp;
    ASSERT_TRUE(dstub_->RegisterDataset(Ctx().get(), req, &resp).ok());
    EXPECT_TRUE(resp.already_registered());
    EXPECT_EQ(resp.dataset_id(), id);
    ASSERT_EQ(resp.file_bytes_size(), 1);
    EXPECT_GT(resp.file_bytes(0), 0);
  }
  proto::JoinJobRequest join;
  join.set_job_name("job");
  join.set_dataset_id("0000000000000000");
  join.set_processing_mode(proto::DISTRIBUTED_EPOCH);
  join.set_num_splits(3);
  join.set_epochs(1);
  proto::JoinJobResponse jresp;
  EXPECT_EQ(dstub_->JoinJob(Ctx().get(), join, &jresp).error_code(), StatusCode::NOT_FOUND);
  join.set_dataset_id(id);
  join.set_num_splits(0);
  EXPECT_EQ(dstub_->JoinJob(Ctx().get(), join, &jresp).error_code(), StatusCode::INVALID_ARGUMENT);
  join.set_num_splits(3);
  join.set_cursor_json("{not json");
  EXPECT_EQ(dstub_->JoinJob(Ctx().get(), join, &jresp).error_code(), StatusCode::INVALID_ARGUMENT);
  join.clear_cursor_json();
  ASSERT_TRUE(dstub_->JoinJob(Ctx().get(), join, &jresp).ok());
  EXPECT_TRUE(jresp.created());
  EXPECT_EQ(jresp.num_splits(), 3);
  join.set_num_splits(5);
  s = dstub_->JoinJob(Ctx().get(), join, &jresp);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("\"job\""), std::string::npos) << s.error_message();
  join.set_num_splits(3);

  proto::GetSplitRequest gs;
  gs.set_job_id("no-such-job");
  proto::GetSplitResponse gresp;
  EXPECT_EQ(dstub_->GetSplit(Ctx().get(), gs, &gresp).error_code(), StatusCode::NOT_FOUND);
  gs.set_job_id("job");
  gs.set_epoch(-5);
  EXPECT_EQ(dstub_->GetSplit(Ctx().get(), gs, &gresp).error_code(), StatusCode::INVALID_ARGUMENT);
  gs.set_epoch(0);
  gs.mutable_reclaim()->set_num_splits(3);
  gs.mutable_reclaim()->set_split_index(3);
  EXPECT_EQ(dstub_->GetSplit(Ctx().get(), gs, &gresp).error_code(), StatusCode::INVALID_ARGUMENT);

  proto::CompleteSplitRequest cs;
  cs.set_job_id("job");
  cs.mutable_split()->set_num_splits(3);
  cs.mutable_split()->set_split_index(3);  // >= num_splits
  proto::CompleteSplitResponse cresp;
  EXPECT_EQ(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).error_code(), StatusCode::INVALID_ARGUMENT);
  cs.mutable_split()->set_split_index(-1);
  EXPECT_EQ(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).error_code(), StatusCode::INVALID_ARGUMENT);
  cs.mutable_split()->set_split_index(0);
  cs.mutable_split()->set_epoch(7);
  EXPECT_EQ(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).error_code(), StatusCode::INVALID_ARGUMENT);
  cs.set_job_id("nope");
  EXPECT_EQ(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).error_code(), StatusCode::NOT_FOUND);

  proto::ReleaseJobRequest rel;
  rel.set_job_id("nope");
  proto::ReleaseJobResponse rresp;
  EXPECT_EQ(dstub_->ReleaseJob(Ctx().get(), rel, &rresp).error_code(), StatusCode::NOT_FOUND);
  rel.set_job_id("job");
  rel.set_consumer_index(9);
  EXPECT_EQ(dstub_->ReleaseJob(Ctx().get(), rel, &rresp).error_code(), StatusCode::FAILED_PRECONDITION);

  proto::WorkerHeartbeatRequest hb;
  proto::WorkerHeartbeatResponse hresp;
  for (const char* addr : {"", "nohost", "host:0", "host:99999"}) {
    hb.set_worker_address(addr);
    EXPECT_EQ(dstub_->WorkerHeartbeat(Ctx().get(), hb, &hresp).error_code(), StatusCode::INVALID_ARGUMENT) << addr;
  }
  ExpectServing();
}

TEST_F(RpcTest, SplitsGoToLiveWorkersOnly) {
  const std::string id = RegisterOk();
  proto::JoinJobRequest join;
  join.set_job_name("job");
  join.set_dataset_id(id);
  join.set_processing_mode(proto::DISTRIBUTED_EPOCH);
  join.set_num_splits(2);
  join.set_epochs(1);
  proto::JoinJobResponse jresp;
  ASSERT_TRUE(dstub_->JoinJob(Ctx().get(), join, &jresp).ok());
  proto::GetSplitRequest gs;
  gs.set_job_id("job");
  proto::GetSplitResponse g;
  ASSERT_TRUE(dstub_->GetSplit(Ctx().get(), gs, &g).ok());
  EXPECT_EQ(g.result(), proto::GetSplitResponse::RETRY);  // no worker yet
  proto::WorkerHeartbeatRequest hb;
  hb.set_worker_address(worker_->address());
  proto::WorkerHeartbeatResponse hresp;
  ASSERT_TRUE(dstub_->WorkerHeartbeat(Ctx().get(), hb, &hresp).ok());
  EXPECT_FALSE(hresp.shutdown());
  EXPECT_FALSE(hresp.all_jobs_finished());
  for (int32_t u = 0; u < 2; ++u) {
    gs.clear_active();
    if (u == 1) gs.add_active(0);
    ASSERT_TRUE(dstub_->GetSplit(Ctx().get(), gs, &g).ok());
    ASSERT_EQ(g.result(), proto::GetSplitResponse::SPLIT);
    EXPECT_EQ(g.worker_address(), worker_->address());
    EXPECT_EQ(g.split().split_index(), u);
    EXPECT_EQ(g.split().num_splits(), 2);
    proto::CompleteSplitRequest cs;
    cs.set_job_id("job");
    *cs.mutable_split() = g.split();
    cs.set_batches(1);
    cs.set_examples(4);
    proto::CompleteSplitResponse cresp;
    ASSERT_TRUE(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).ok());
    ASSERT_TRUE(dstub_->CompleteSplit(Ctx().get(), cs, &cresp).ok());  // a retried ack
  }
  gs.clear_active();
  ASSERT_TRUE(dstub_->GetSplit(Ctx().get(), gs, &g).ok());
  EXPECT_EQ(g.result(), proto::GetSplitResponse::END_OF_EPOCH);
  proto::ReleaseJobRequest rel;
  rel.set_job_id("job");
  proto::ReleaseJobResponse rresp;
  ASSERT_TRUE(dstub_->ReleaseJob(Ctx().get(), rel, &rresp).ok());
  EXPECT_TRUE(rresp.job_finished());
  ASSERT_TRUE(dstub_->WorkerHeartbeat(Ctx().get(), hb, &hresp).ok());
  EXPECT_TRUE(hresp.all_jobs_finished());
}

TEST_F(RpcTest, OversizedRequestsAreResourceExhausted) {
  proto::RegisterDatasetRequest req;
  *req.mutable_dataset() = Def();
  const std::string name = "/" + std::string(99, 'x');
  for (int i = 0; i < 210000; ++i) req.mutable_dataset()->add_files(name);  // > 20 MiB
  ASSERT_GT(req.ByteSizeLong(), size_t{20} << 20);
  proto::RegisterDatasetResponse resp;
  grpc::Status s = dstub_->RegisterDataset(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // The worker's limit (4 MiB by default) on a stream's first message.
  auto ctx = Ctx();
  auto stream = wstub_->StreamSplit(ctx.get());
  proto::StreamRequest open;
  for (int i = 0; i < 50000; ++i) open.mutable_dataset()->add_files(name);  // ~5 MB
  stream->Write(open);
  stream->WritesDone();
  proto::BatchFrame f;
  while (stream->Read(&f)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
  ExpectServing();
}

TEST_F(RpcTest, MalformedStreamSplitRequests) {
  auto run = [&](const std::function<bool(grpc::ClientReaderWriter<proto::StreamRequest, proto::BatchFrame>*)>& send) {
    auto ctx = Ctx();
    auto stream = wstub_->StreamSplit(ctx.get());
    send(stream.get());
    stream->WritesDone();
    proto::BatchFrame f;
    int frames = 0;
    while (stream->Read(&f)) ++frames;
    EXPECT_EQ(frames, 0);
    return stream->Finish();
  };
  auto open_with = [&](const std::function<void(proto::StreamRequest*)>& mutate) {
    return run([&](auto* stream) {
      proto::StreamRequest open;
      *open.mutable_dataset() = Def();
      open.mutable_split()->set_num_splits(1);
      open.set_credits(10);
      mutate(&open);
      return stream->Write(open);
    });
  };
  grpc::Status s = run([](auto*) { return true; });  // no first message
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("first message"), std::string::npos) << s.error_message();
  s = open_with([](proto::StreamRequest* o) { o->mutable_split()->set_split_index(1); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("split_index 1"), std::string::npos) << s.error_message();
  s = open_with([](proto::StreamRequest* o) { o->mutable_split()->set_epoch(-1); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = open_with([](proto::StreamRequest* o) { o->set_compression("brotli"); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("brotli"), std::string::npos) << s.error_message();
  s = open_with([](proto::StreamRequest* o) { o->mutable_dataset()->set_files(0, "rel.libsvm"); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = open_with([](proto::StreamRequest* o) { o->clear_dataset(); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = open_with([](proto::StreamRequest* o) { o->set_skip_batches(-1); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = open_with([](proto::StreamRequest* o) { o->set_credits(-3); });
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = open_with([&](proto::StreamRequest* o) { o->mutable_dataset()->set_files(0, dir_ + "/missing.libsvm"); });
  EXPECT_NE(s.error_code(), StatusCode::OK);
  EXPECT_NE(s.error_message().find("missing.libsvm"), std::string::npos) << s.error_message();
  ExpectServing();
}

// Reads a StreamSplit on its own thread, so the test can watch what arrives
// while it holds credits back.
class StreamReader {
 public:
  StreamReader(proto::Worker::Stub* stub, const proto::StreamRequest& open) : ctx_(Ctx()) {
    stream_ = stub->StreamSplit(ctx_.get());
    EXPECT_TRUE(stream_->Write(open));
    thread_ = std::thread([this] {
      proto::BatchFrame f;
      while (stream_->Read(&f)) {
        std::lock_guard<std::mutex> l(mu_);
        frames_.push_back(f);
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> l(mu_);
      ended_ = true;
      cv_.notify_all();
    });
  }
  ~StreamReader() {
    if (thread_.joinable()) {
      ctx_->TryCancel();
      thread_.join();
    }
  }
  void Grant(int32_t credits) {
    proto::StreamRequest more;
    more.set_credits(credits);
    EXPECT_TRUE(stream_->Write(more));
  }
  // Waits until `n` frames arrived (or the stream ended, or 10 s passed).
  size_t WaitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::seconds(10), [&] { return frames_.size() >= n || ended_; });
    return frames_.size();
  }
  size_t Count() {
    std::lock_guard<std::mutex> l(mu_);
    return frames_.size();
  }
  grpc::Status Finish(std::vector<proto::BatchFrame>* frames) {
    stream_->WritesDone();
    thread_.join();
    *frames = frames_;
    return stream_->Finish();
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<proto::StreamRequest, proto::BatchFrame>> stream_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<proto::BatchFrame> frames_;
  bool ended_ = false;
};

// A split that was streamed to its end frame. The worker ends the call with
// TryCancel once it wrote the end frame (to stop its credit reader), so the
// call's status is OK or CANCELLED; the end frame is what says the split is
// whole (dataservice/client.cc reads it so too).
void ExpectCompleted(const grpc::Status& s, const std::vector<proto::BatchFrame>& frames) {
  ASSERT_FALSE(frames.empty());
  EXPECT_TRUE(frames.back().end_of_split());
  EXPECT_TRUE(s.ok() || s.error_code() == StatusCode::CANCELLED) << s.error_code() << " " << s.error_message();
}

// Checks a whole split's frames: seq first..n-1 in order, then one end frame
// with the split's totals; returns the records (first id of each row).
std::vector<int64_t> CheckFrames(const std::vector<proto::BatchFrame>& frames, int64_t first) {
  std::vector<int64_t> records;
  EXPECT_EQ(static_cast<int64_t>(frames.size()), kBatches - first + 1);
  if (frames.empty()) return records;
  std::string scratch;
  data::Batch b;
  int64_t examples = 0;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    EXPECT_EQ(frames[i].seq(), first + static_cast<int64_t>(i));
    EXPECT_FALSE(frames[i].end_of_split());
    Status st = DecodeFrame(frames[i], &scratch, &b);
    EXPECT_TRUE(st.ok()) << st.ToString();
    examples += b.size();
    for (int64_t r = 0; r < b.size(); ++r) records.push_back(b.row_ids(r)[0]);
  }
  const proto::BatchFrame& end = frames.back();
  EXPECT_TRUE(end.end_of_split());
  EXPECT_EQ(end.seq(), kBatches);
  EXPECT_EQ(end.split_batches(), kBatches);
  EXPECT_EQ(end.split_examples(), kRecords);
  EXPECT_TRUE(end.payload().empty());
  if (first == 0) {
    EXPECT_EQ(examples, kRecords);
  }
  EXPECT_FALSE(end.inputs().empty());
  if (!end.inputs().empty()) {
    EXPECT_EQ(end.inputs(0).format(), "libsvm");
    EXPECT_TRUE(end.inputs(0).finished());
    EXPECT_EQ(end.inputs(0).records(), static_cast<uint64_t>(kRecords));
  }
  return records;
}

TEST_F(RpcTest, StreamSplitHonoursCredits) {
  for (const char* compression : {"none", "zstd"}) {
    proto::StreamRequest open;
    *open.mutable_dataset() = Def();
    open.mutable_split()->set_num_splits(1);
    open.set_credits(1);
    open.set_compression(compression);
    StreamReader reader(wstub_.get(), open);
    ASSERT_EQ(reader.WaitFor(1), 1u) << compression;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(reader.Count(), 1u) << compression << ": a frame arrived without a credit";
    reader.Grant(2);
    EXPECT_EQ(reader.WaitFor(3), 3u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(reader.Count(), 3u) << compression << ": a frame arrived without a credit";
    reader.Grant(100);
    EXPECT_EQ(reader.WaitFor(kBatches + 1), static_cast<size_t>(kBatches + 1));
    std::vector<proto::BatchFrame> frames;
    ExpectCompleted(reader.Finish(&frames), frames);
    std::vector<int64_t> records = CheckFrames(frames, 0);
    std::sort(records.begin(), records.end());
    std::vector<int64_t> want(kRecords);
    for (int i = 0; i < kRecords; ++i) want[i] = i;
    EXPECT_EQ(records, want) << compression;
  }
}

TEST_F(RpcTest, SkipBatchesStartsAtThatSeq) {
  // The whole split first, to compare the tail with.
  proto::StreamRequest open;
  *open.mutable_dataset() = Def();
  open.mutable_dataset()->set_shuffle_buffer_size(16);
  open.mutable_dataset()->set_seed(5);
  open.mutable_split()->set_num_splits(1);
  open.mutable_split()->set_epoch(1);
  open.set_credits(100);
  std::vector<proto::BatchFrame> all, tail;
  {
    StreamReader reader(wstub_.get(), open);
    reader.WaitFor(kBatches + 1);
    ExpectCompleted(reader.Finish(&all), all);
  }
  const std::vector<int64_t> all_records = CheckFrames(all, 0);
  open.set_skip_batches(3);
  {
    StreamReader reader(wstub_.get(), open);
    reader.WaitFor(kBatches - 3 + 1);
    ExpectCompleted(reader.Finish(&tail), tail);
  }
  const std::vector<int64_t> tail_records = CheckFrames(tail, 3);
  ASSERT_EQ(tail_records.size(), all_records.size() - 3 * kBatch);
  EXPECT_TRUE(std::equal(tail_records.begin(), tail_records.end(), all_records.begin() + 3 * kBatch));
  for (size_t i = 0; i + 1 < tail.size(); ++i) EXPECT_EQ(tail[i].payload(), all[i + 3].payload()) << i;
  // Skipping past the end: just the end frame.
  open.set_skip_batches(50);
  std::vector<proto::BatchFrame> none;
  {
    StreamReader reader(wstub_.get(), open);
    reader.WaitFor(1);
    ExpectCompleted(reader.Finish(&none), none);
  }
  ASSERT_EQ(none.size(), 1u);
  EXPECT_TRUE(none[0].end_of_split());
  EXPECT_EQ(none[0].split_batches(), kBatches);
}

}  // namespace
}  // namespace ctrain::dataservice
