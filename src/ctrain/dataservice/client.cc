#include "ctrain/base/clock.h"
#include "ctrain/dataservice/client.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <grpcpp/client_context.h>
#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/dataservice/advice.h"
#include "ctrain/dataservice/data_service.grpc.pb.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/dataservice/dispatcher_state.h"
#include "ctrain/dataservice/frame_codec.h"
#include "ctrain/service/grpc_status.h"
#include "ctrain/service/server.h"

namespace ctrain::dataservice {
namespace {

using Clock = ::ctrain::Clock;  // base/clock.h
using json = nlohmann::json;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One split being streamed from one worker.
struct Stream {
  proto::SplitId split;
  int32_t unit = 0;
  std::string worker;
  int64_t skip = 0;       // batches consumed before this stream opened
  int64_t consumed = 0;   // batches of the split handed to the trainer (skip included)
  grpc::ClientContext ctx;
  std::unique_ptr<proto::Worker::Stub> stub;
  std::unique_ptr<grpc::ClientReaderWriter<proto::StreamRequest, proto::BatchFrame>> rw;
  std::thread reader;
  // Guarded by Client::mu:
  std::deque<data::Batch> ready;
  std::deque<int64_t> ready_bytes;
  int64_t granted = 0, received = 0;  // credits granted / frames received (batches)
  int64_t duplicates = 0;             // frames below the next seq: they used a credit too
  bool ended = false;                 // end frame received
  int64_t split_batches = 0, split_examples = 0;
  // The end frame's counts of the whole split; they count once the trainer has taken every batch of it.
  int64_t input_bytes = 0;
  uint64_t padded_rows = 0, oov_ids = 0;
  bool failed = false;                // transport failure: re-read elsewhere
  std::string failure;                // why (the gRPC status)
  bool writes_done = false;           // WritesDone sent: no more credits
  Status error;                       // a data error from the worker: fatal
  bool dropped_idle = false;          // the worker dropped it (no credit for its --stream-idle-timeout-ms)
};

class DataServiceSource final : public train::BatchSource {
 public:
  DataServiceSource(DataServiceClientOptions o, train::BatchSourceParams p) : opt_(std::move(o)), params_(std::move(p)) {}
  ~DataServiceSource() override { CloseAll(); }

  Status Init();
  Status BeginEpoch(int64_t epoch, int64_t skip) override;
  StatusOr<bool> Next(data::Batch* batch) override;
  int64_t epoch_records() const override { return epoch_records_; }
  data::PipelineStats stats() const override;
  StatusOr<json> DescribeInputs() const override { return inputs_; }
  json Cursor() const override;
  Status Finish() override;
  json Metrics() const override;

 private:
  void Log(const std::string& line) const {
    if (opt_.log)
      opt_.log(line);
    else
      Logf("data service: %s\n", line.c_str());
  }
  service::RetryOptions Retry() const {
    service::RetryOptions r;
    r.stop = opt_.stop;
    r.log = [this](const std::string& l) { Log(l); };
    r.max_wait = opt_.wait;
    r.limit_flag = "--data-service-wait-seconds";
    return r;
  }
  // The deadline of one wait (--data-service-wait-seconds; 0 = none).
  Deadline WaitDeadline() const {
    return Deadline(opt_.wait.count() > 0 ? Clock::duration(opt_.wait) : Clock::duration::max() / 2);
  }
  Status WaitExpired(const std::string& what) const {
    return DeadlineExceededError("gave up waiting for " + what + " after " + std::to_string(opt_.wait.count()) +
                                 " s (--data-service-wait-seconds)");
  }
  // Calls the dispatcher, retrying while it is unavailable.
  template <typename Req, typename Resp, typename Fn>
  Status CallDispatcher(const char* what, const Req& req, Resp* resp, Fn fn) {
    return service::RetryUnavailable("the dispatcher " + opt_.dispatcher + " (" + what + ")", Retry(), [&]() -> Status {
      grpc::ClientContext ctx;
      service::PrepareContext(&ctx, opt_.channel, std::chrono::milliseconds(10000));
      return service::FromGrpcStatus((stub_.get()->*fn)(&ctx, req, resp), std::string("dispatcher ") + opt_.dispatcher + ": " + what);
    });
  }
  // 200 ms between two asks for a worker, cut short by a stop request (Cancelled).
  Status PauseBeforeRetry() const {
    for (int i = 0; i < 10; ++i) {
      if (opt_.stop != nullptr && opt_.stop->load() != 0) return CancelledError("stopped while waiting for a worker");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Status::OK();
  }
  Status OpenMoreStreams();
  Status OpenStream(const proto::SplitId& split, const std::string& worker);
  Status Reopen(std::list<std::unique_ptr<Stream>>::iterator it);
  void ReaderLoop(Stream* s);
  // Credits for `s` within the buffer bound (see client.h); `waiting`: the
  // consumer waits on it. Returns the credits granted. REQUIRES: mu_ held.
  int64_t CreditsFor(Stream* s, bool waiting);
  void GrantCredits(Stream* s, bool waiting);  // sends CreditsFor's. REQUIRES: mu_ held
  void CloseStream(Stream* s);
  void CloseAll();
  proto::ConsumerStats ConsumerStatsNow() const;

  DataServiceClientOptions opt_;
  train::BatchSourceParams params_;
  std::unique_ptr<proto::Dispatcher::Stub> stub_;
  proto::DatasetDef def_;
  json inputs_;
  std::string job_;
  int32_t num_splits_ = 1;
  uint64_t session_ = 0;  // JoinJob's: sent on every later call
  FrameCompression compression_ = FrameCompression::kNone;

  // Epoch state.
  int64_t epoch_ = -1;
  std::set<int32_t> done_;
  std::map<int32_t, int64_t> partial_;  // unit -> batches consumed (from the cursor)
  bool no_more_units_ = false;
  int64_t epoch_records_ = 0, epoch_batches_ = 0;
  // The workers' counts of the splits the trainer took whole in this epoch (BatchFrame, end_of_split); guarded by
  // mu_.
  uint64_t epoch_padded_rows_ = 0, epoch_oov_ids_ = 0;
  uint64_t padded_rows_ = 0, oov_ids_ = 0;  // the same over the run
  json cursor_;  // the restored cursor

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<std::unique_ptr<Stream>> streams_;  // in hand-out order
  int64_t buffered_bytes_ = 0;                  // GUARDED_BY(mu_): received, not yet taken
  int64_t largest_frame_bytes_ = 0;             // GUARDED_BY(mu_): the credit's size in bytes
  int64_t peak_buffered_bytes_ = 0;             // GUARDED_BY(mu_)
  int64_t peak_committed_bytes_ = 0;            // GUARDED_BY(mu_): received + credits in flight
  int64_t worker_input_bytes_ = 0;              // GUARDED_BY(mu_): file bytes the completed splits read
  // Batches the trainer handed back, for the readers to decode into (no
  // allocation, and no memory freed on another thread, in the steady state).
  std::vector<data::Batch> spare_;              // GUARDED_BY(mu_)

  // Figures.
  Clock::time_point first_next_{}, last_next_end_{};
  double wait_seconds_ = 0, busy_seconds_ = 0;
  int64_t batches_ = 0, examples_ = 0, wire_bytes_ = 0, raw_bytes_ = 0;
  int64_t splits_done_ = 0, failovers_ = 0, duplicates_ = 0, dropped_on_failover_ = 0, idle_drops_ = 0;
  std::set<std::string> workers_seen_;
  std::map<std::string, data::InputReadStats> input_reads_;
};

Status DataServiceSource::Init() {
  CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(opt_.dispatcher, "--data-service"));
  if (opt_.num_splits < 1 || opt_.num_splits > kMaxSplits)
    return InvalidArgumentError("--num-splits must be in [1, " + std::to_string(kMaxSplits) + "]");
  if (opt_.max_open_splits < 1 || opt_.max_open_splits > 1024)
    return InvalidArgumentError("--data-service-max-open-splits must be in [1, 1024]");
  if (opt_.max_buffer_bytes < 1) return InvalidArgumentError("--data-service-buffer-bytes must be >= 1");
  if (opt_.compression != "auto") {
    CTRAIN_ASSIGN_OR_RETURN(compression_, ParseFrameCompression(opt_.compression));
  }
  CTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> ch, service::MakeChannel(opt_.dispatcher, opt_.channel));
  stub_ = proto::Dispatcher::NewStub(ch);
  CTRAIN_ASSIGN_OR_RETURN(proto::DatasetDef def, MakeDatasetDef(*params_.input, opt_.feature_map, params_.batch_size,
                                                                params_.seed, params_.shuffle, opt_.feature_spec));
  proto::RegisterDatasetRequest rreq;
  *rreq.mutable_dataset() = def;
  proto::RegisterDatasetResponse rresp;
  CTRAIN_RETURN_IF_ERROR(CallDispatcher("register the dataset", rreq, &rresp, &proto::Dispatcher::Stub::RegisterDataset));
  def_ = rresp.dataset();
  job_ = opt_.job_name.empty() ? "job-" + rresp.dataset_id() +
                                      (opt_.processing_mode == proto::PARALLEL_EPOCHS
                                           ? std::string("-parallel")
                                           : "-" + std::to_string(opt_.num_splits) + "splits")
                                : opt_.job_name;
  json files = json::array();
  for (int i = 0; i < def_.files_size(); ++i)
    files.push_back({{"path", def_.files(i)}, {"bytes", i < rresp.file_bytes_size() ? rresp.file_bytes(i) : -1}});
  inputs_ = {{"files", files},
             {"num_shards", 1},
             {"shard_index", 0},
             {"data_service",
              {{"job_name", job_},
               {"processing_mode", ProcessingModeName(opt_.processing_mode)},
               {"num_splits", opt_.processing_mode == proto::PARALLEL_EPOCHS ? 1 : opt_.num_splits},
               {"consumer_index", opt_.consumer_index}}}};
  proto::JoinJobRequest jreq;
  jreq.set_job_name(job_);
  jreq.set_dataset_id(rresp.dataset_id());
  jreq.set_processing_mode(opt_.processing_mode);
  jreq.set_num_splits(opt_.num_splits);
  jreq.set_epochs(params_.epochs);
  jreq.set_consumer_index(opt_.consumer_index);
  if (!params_.cursor.is_null()) {
    if (params_.cursor.value("job", std::string()) != job_)
      return FailedPreconditionError("the checkpoint's data-service cursor belongs to job \"" +
                                     params_.cursor.value("job", std::string()) + "\", this run's job is \"" + job_ +
                                     "\": resume with --job-name " + params_.cursor.value("job", std::string()));
    cursor_ = params_.cursor;
    jreq.set_cursor_json(params_.cursor.dump());
  }
  proto::JoinJobResponse jresp;
  CTRAIN_RETURN_IF_ERROR(CallDispatcher("join the job", jreq, &jresp, &proto::Dispatcher::Stub::JoinJob));
  num_splits_ = jresp.num_splits();
  session_ = jresp.session();
  Log(std::string(jresp.created() ? "created" : "joined") + " job " + job_ + " at " + opt_.dispatcher + " (" +
      ProcessingModeName(opt_.processing_mode) + ", dataset " + rresp.dataset_id() + ", " +
      std::to_string(def_.files_size()) + " file(s))");
  return Status::OK();
}

Status DataServiceSource::BeginEpoch(int64_t epoch, int64_t) {
  CloseAll();
  epoch_ = epoch;
  done_.clear();
  partial_.clear();
  no_more_units_ = false;
  epoch_records_ = 0;
  epoch_batches_ = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    epoch_padded_rows_ = 0;
    epoch_oov_ids_ = 0;
  }
  if (!cursor_.is_null() && cursor_.value("epoch", int64_t{-1}) == epoch) {
    try {
      for (const json& u : cursor_.at("done")) done_.insert(u.get<int32_t>());
      for (const auto& [k, v] : cursor_.at("partial").items()) partial_[std::stoi(k)] = v.get<int64_t>();
      epoch_records_ = cursor_.value("examples", int64_t{0});
    } catch (const std::exception& ex) {
      return InvalidArgumentError(std::string("the checkpoint's data_cursor is malformed: ") + ex.what());
    }
  }
  cursor_ = json();  // used once
  return Status::OK();
}

proto::ConsumerStats DataServiceSource::ConsumerStatsNow() const {
  proto::ConsumerStats st;
  const double total = wait_seconds_ + busy_seconds_;
  st.set_input_wait_fraction(total > 0 ? wait_seconds_ / total : 0);
  st.set_batches_per_sec(total > 0 ? batches_ / total : 0);
  st.set_bytes_per_sec(total > 0 ? raw_bytes_ / total : 0);
  st.set_batches(batches_);
  return st;
}

Status DataServiceSource::OpenStream(const proto::SplitId& split, const std::string& worker) {
  auto s = std::make_unique<Stream>();
  s->split = split;
  s->unit = opt_.processing_mode == proto::PARALLEL_EPOCHS ? split.copy() : split.split_index();
  s->worker = worker;
  auto p = partial_.find(s->unit);
  s->skip = s->consumed = p == partial_.end() ? 0 : p->second;
  CTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> ch, service::MakeChannel(worker, opt_.channel));
  s->stub = proto::Worker::NewStub(ch);
  service::PrepareContext(&s->ctx, opt_.channel);
  s->rw = s->stub->StreamSplit(&s->ctx);
  FrameCompression comp = compression_;
  if (opt_.compression == "auto") {
    const std::string host = worker.substr(0, worker.rfind(':'));
    comp = service::IsLoopbackHost(host) ? FrameCompression::kNone : FrameCompression::kZstd;
  }
  proto::StreamRequest open;
  *open.mutable_dataset() = def_;
  *open.mutable_split() = split;
  open.set_skip_batches(s->skip);
  open.set_compression(comp == FrameCompression::kZstd ? "zstd" : "none");
  open.set_job_id(job_);
  workers_seen_.insert(worker);
  Stream* raw = s.get();
  {
    std::lock_guard<std::mutex> l(mu_);
    streams_.push_back(std::move(s));
    const int64_t credits = CreditsFor(raw, /*waiting=*/false);
    open.set_credits(static_cast<int32_t>(credits));
    raw->granted = credits;
    if (!raw->rw->Write(open)) {
      // The call failed at once: let the reader collect the status and mark it failed.
    }
  }
  raw->reader = std::thread([this, raw] { ReaderLoop(raw); });
  return Status::OK();
}

void DataServiceSource::ReaderLoop(Stream* s) {
  proto::BatchFrame f;
  std::string scratch;
  int64_t expected = s->skip;
  auto close_writes = [&] {  // REQUIRES: mu_ held (writes are serialised by it)
    if (!s->writes_done) s->rw->WritesDone();
    s->writes_done = true;
  };
  while (s->rw->Read(&f)) {
    if (f.error_code() != 0) {  // the worker could not read the split (a data error): fatal
      std::lock_guard<std::mutex> l(mu_);
      const int code = f.error_code() > 0 && f.error_code() <= 16 ? f.error_code() : 2;
      s->error = Status(static_cast<StatusCode>(code), f.error_message());
      close_writes();
      cv_.notify_all();
      continue;  // to the end of the call
    }
    if (f.dropped_idle()) {  // not a failure of the worker: re-read the rest from any worker
      std::lock_guard<std::mutex> l(mu_);
      s->dropped_idle = true;
      close_writes();
      cv_.notify_all();
      continue;  // to the end of the call
    }
    if (f.end_of_split()) {
      std::lock_guard<std::mutex> l(mu_);
      for (const proto::InputRead& in : f.inputs()) {
        data::InputReadStats& r = input_reads_[in.name()];
        r.name = in.name(), r.format = in.format(), r.compression = in.compression();
        s->input_bytes += static_cast<int64_t>(in.input_bytes());
      }
      if (f.split_batches() != expected) {
        s->error = DataLossError("worker " + s->worker + ": " + SplitName(s->split) + " ended after " +
                                 std::to_string(f.split_batches()) + " batches, but " + std::to_string(expected) +
                                 " arrived");
      }
      s->ended = true;
      s->padded_rows = f.criteo_padded_rows();
      s->oov_ids = f.oov_ids();
      s->split_batches = f.split_batches();
      s->split_examples = f.split_examples();
      close_writes();
      cv_.notify_all();
      continue;  // to the end of the call
    }
    if (f.seq() < expected) {  // a duplicate (a re-read split): already delivered
      std::lock_guard<std::mutex> l(mu_);
      ++duplicates_;
      ++s->duplicates;
      continue;
    }
    data::Batch b;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    Status st = f.seq() > expected ? DataLossError("worker " + s->worker + ": " + SplitName(s->split) + ": batch " +
                                                   std::to_string(f.seq()) + " arrived, " + std::to_string(expected) +
                                                   " was next")
                                   : DecodeFrame(f, &scratch, &b);
    std::lock_guard<std::mutex> l(mu_);
    if (!st.ok()) {
      s->error = st.WithContext("worker " + s->worker);
      s->ctx.TryCancel();  // end the call now (Finish would wait for the worker)
      cv_.notify_all();
      break;
    }
    for (const proto::InputRead& in : f.inputs()) {
      data::InputReadStats& r = input_reads_[in.name()];
      r.name = in.name(), r.format = in.format(), r.compression = in.compression();
    }
    ++expected;
    ++s->received;
    const int64_t bytes = f.raw_bytes();
    wire_bytes_ += static_cast<int64_t>(f.payload().size());
    raw_bytes_ += bytes;
    largest_frame_bytes_ = std::max(largest_frame_bytes_, bytes);
    buffered_bytes_ += bytes;
    peak_buffered_bytes_ = std::max(peak_buffered_bytes_, buffered_bytes_);
    s->ready.push_back(std::move(b));
    s->ready_bytes.push_back(bytes);
    cv_.notify_all();
  }
  grpc::Status gs = s->rw->Finish();
  std::lock_guard<std::mutex> l(mu_);
  if (s->dropped_idle && !s->ended && s->error.ok()) {
    s->failed = true;
    s->failure = "the worker dropped the stream: this consumer granted no credit for longer than the worker's "
                 "--stream-idle-timeout-ms";
  } else if (!s->ended && s->error.ok()) {
    const grpc::StatusCode c = gs.error_code();
    if (gs.ok() || c == grpc::StatusCode::UNAVAILABLE || c == grpc::StatusCode::CANCELLED ||
        c == grpc::StatusCode::DEADLINE_EXCEEDED || c == grpc::StatusCode::ABORTED || c == grpc::StatusCode::UNKNOWN ||
        c == grpc::StatusCode::INTERNAL) {
      s->failed = true;  // the worker went away: read the split elsewhere
      s->failure = gs.ok() ? "the stream ended without its end frame"
                           : service::FromGrpcStatus(gs, "").ToString();
    } else {
      s->error = service::FromGrpcStatus(gs, "worker " + s->worker + ": " + SplitName(s->split));
    }
  }
  cv_.notify_all();
}

int64_t DataServiceSource::CreditsFor(Stream* s, bool waiting) {
  if (s->ended || s->failed || s->writes_done || !s->error.ok()) return 0;
  // Bytes committed: batches received and not yet taken, plus every credit in
  // flight counted at the largest batch received so far.
  int64_t in_flight = 0;
  for (const auto& x : streams_) in_flight += x->granted - x->received - x->duplicates;
  const int64_t frame = largest_frame_bytes_;
  const int64_t outstanding = s->granted - s->received - s->duplicates;
  const bool starved = outstanding == 0 && s->ready.empty();
  int64_t credits = 0;
  if (frame > 0) {
    const int64_t streams = std::max<int64_t>(1, static_cast<int64_t>(streams_.size()));
    const int64_t target = std::clamp<int64_t>(opt_.max_buffer_bytes / streams / frame, 1, 1024);
    const int64_t room = (opt_.max_buffer_bytes - buffered_bytes_ - in_flight * frame) / frame;
    credits = std::max<int64_t>(0, std::min(target - outstanding - static_cast<int64_t>(s->ready.size()), room));
  }
  // The one batch beyond the bound: the stream the consumer waits on may always
  // have a batch on the way (an ordered read takes its splits in turn), and
  // before the first batch arrives (its size unknown) one credit at a time.
  if (credits == 0 && starved && (waiting || (in_flight == 0 && buffered_bytes_ == 0))) credits = 1;
  if (frame > 0)
    peak_committed_bytes_ = std::max(peak_committed_bytes_, buffered_bytes_ + (in_flight + credits) * frame);
  return credits;
}

void DataServiceSource::GrantCredits(Stream* s, bool waiting) {
  const int64_t credits = CreditsFor(s, waiting);
  if (credits == 0) return;
  proto::StreamRequest more;
  more.set_credits(static_cast<int32_t>(credits));
  if (s->rw->Write(more)) s->granted += credits;
}

void DataServiceSource::CloseStream(Stream* s) {
  s->ctx.TryCancel();
  if (s->reader.joinable()) s->reader.join();
  std::lock_guard<std::mutex> l(mu_);
  for (int64_t b : s->ready_bytes) buffered_bytes_ -= b;
  s->ready.clear();
  s->ready_bytes.clear();
}

void DataServiceSource::CloseAll() {
  std::list<std::unique_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    all.swap(streams_);
  }
  for (auto& s : all) CloseStream(s.get());
}

Status DataServiceSource::OpenMoreStreams() {
  auto last_notice = Clock::now();
  const Deadline deadline = WaitDeadline();
  for (;;) {
    size_t open;
    std::vector<int32_t> active;
    {
      std::lock_guard<std::mutex> l(mu_);
      open = streams_.size();
      for (const auto& s : streams_) active.push_back(s->unit);
    }
    if (no_more_units_ || open >= static_cast<size_t>(opt_.max_open_splits)) return Status::OK();
    proto::GetSplitRequest req;
    req.set_job_id(job_);
    req.set_consumer_index(opt_.consumer_index);
    req.set_epoch(epoch_);
    req.set_session(session_);
    for (int32_t u : active) req.add_active(u);
    *req.mutable_stats() = ConsumerStatsNow();
    proto::GetSplitResponse resp;
    CTRAIN_RETURN_IF_ERROR(CallDispatcher("get a split", req, &resp, &proto::Dispatcher::Stub::GetSplit));
    if (resp.result() == proto::GetSplitResponse::END_OF_EPOCH) {
      no_more_units_ = true;
      return Status::OK();
    }
    if (resp.result() == proto::GetSplitResponse::SPLIT) {
      if (Status v = ValidateSplit(resp.split()); !v.ok()) return v.WithContext("dispatcher " + opt_.dispatcher);
      if (done_.count(opt_.processing_mode == proto::PARALLEL_EPOCHS ? resp.split().copy() : resp.split().split_index()))
        return InternalError("dispatcher handed out " + SplitName(resp.split()) + ", which this trainer already completed");
      CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(resp.worker_address(), "worker address"));
      CTRAIN_RETURN_IF_ERROR(OpenStream(resp.split(), resp.worker_address()));
      continue;
    }
    // RETRY: nothing to hand out yet. With streams open, go on consuming.
    if (open > 0) return Status::OK();
    if (deadline.expired())
      return WaitExpired("a live worker of the data service " + opt_.dispatcher + " (job " + job_ + ", epoch " +
                         std::to_string(epoch_) + "): " + resp.message());
    if (Clock::now() - last_notice > std::chrono::seconds(5)) {
      Log("waiting for a worker: " + resp.message());
      last_notice = Clock::now();
    }
    CTRAIN_RETURN_IF_ERROR(PauseBeforeRetry());
  }
}

Status DataServiceSource::Reopen(std::list<std::unique_ptr<Stream>>::iterator it) {
  Stream* s = it->get();
  CloseStream(s);
  proto::SplitId split = s->split;
  const std::string dead = s->worker;
  const int64_t consumed = s->consumed;
  const std::string why = s->failure;
  const bool idle = s->dropped_idle;  // the worker is alive: it may serve the split again
  {
    std::lock_guard<std::mutex> l(mu_);
    dropped_on_failover_ += s->received - (consumed - s->skip);
    streams_.erase(it);
  }
  ++(idle ? idle_drops_ : failovers_);
  partial_[opt_.processing_mode == proto::PARALLEL_EPOCHS ? split.copy() : split.split_index()] = consumed;
  Log("the stream of " + SplitName(split) + " from worker " + dead + " broke after " + std::to_string(consumed) +
      " batches (" + why + "); reading the rest from " + (idle ? "a live worker" : "another worker"));
  auto last_notice = Clock::now();
  const Deadline deadline = WaitDeadline();
  for (;;) {
    proto::GetSplitRequest req;
    req.set_job_id(job_);
    req.set_consumer_index(opt_.consumer_index);
    req.set_epoch(split.epoch());
    req.set_session(session_);
    *req.mutable_reclaim() = split;
    if (!idle) req.add_failed_workers(dead);
    *req.mutable_stats() = ConsumerStatsNow();
    proto::GetSplitResponse resp;
    CTRAIN_RETURN_IF_ERROR(CallDispatcher("re-assign a split", req, &resp, &proto::Dispatcher::Stub::GetSplit));
    if (resp.result() == proto::GetSplitResponse::SPLIT) {
      CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(resp.worker_address(), "worker address"));
      // Re-open at the front: an ordered source resumes this split first.
      CTRAIN_RETURN_IF_ERROR(OpenStream(split, resp.worker_address()));
      std::lock_guard<std::mutex> l(mu_);
      streams_.splice(streams_.begin(), streams_, std::prev(streams_.end()));
      return Status::OK();
    }
    if (deadline.expired())
      return WaitExpired("a live worker other than " + dead + " for " + SplitName(split) + ": " + resp.message());
    if (Clock::now() - last_notice > std::chrono::seconds(5)) {
      Log("waiting for a live worker other than " + dead + " for " + SplitName(split) + ": " + resp.message());
      last_notice = Clock::now();
    }
    CTRAIN_RETURN_IF_ERROR(PauseBeforeRetry());
  }
}

StatusOr<bool> DataServiceSource::Next(data::Batch* batch) {
  const auto t0 = Clock::now();
  if (first_next_ == Clock::time_point{}) first_next_ = t0;
  if (last_next_end_ != Clock::time_point{}) busy_seconds_ += Secs(t0 - last_next_end_);
  auto finish = [&](bool more) -> StatusOr<bool> {
    last_next_end_ = Clock::now();
    wait_seconds_ += Secs(last_next_end_ - t0);
    return more;
  };
  for (;;) {
    CTRAIN_RETURN_IF_ERROR(OpenMoreStreams());
    std::unique_lock<std::mutex> l(mu_);
    if (streams_.empty()) {
      if (no_more_units_) {
        l.unlock();
        return finish(false);
      }
      continue;
    }
    // The stream to take from: the first (ordered) or the first with something ready.
    auto pick = [&]() -> std::list<std::unique_ptr<Stream>>::iterator {
      if (opt_.ordered) return streams_.begin();
      for (auto it = streams_.begin(); it != streams_.end(); ++it) {
        Stream* s = it->get();
        if (!s->ready.empty() || s->ended || s->failed || !s->error.ok()) return it;
      }
      return streams_.end();
    };
    auto it = pick();
    const Deadline deadline = WaitDeadline();
    while (it == streams_.end() || ((*it)->ready.empty() && !(*it)->ended && !(*it)->failed && (*it)->error.ok())) {
      if (opt_.stop != nullptr && opt_.stop->load() != 0) return CancelledError("stopped while waiting for input");
      if (deadline.expired())
        return WaitExpired("the next batch" + (it == streams_.end() ? std::string(" of any open split")
                                                                     : " of " + SplitName((*it)->split) +
                                                                           " from worker " + (*it)->worker));
      // It may have been refused credit while others filled the buffer. With
      // no stream picked (unordered, nothing ready), any stream may get one.
      if (it != streams_.end()) {
        GrantCredits(it->get(), /*waiting=*/true);
      } else {
        for (const auto& x : streams_) {
          int64_t in_flight = 0;
          for (const auto& y : streams_) in_flight += y->granted - y->received - y->duplicates;
          if (in_flight > 0) break;
          GrantCredits(x.get(), /*waiting=*/false);
        }
      }
      cv_.wait_for(l, std::chrono::milliseconds(100));
      it = pick();
    }
    Stream* s = it->get();
    if (!s->error.ok()) return s->error;
    if (!s->ready.empty()) {
      std::swap(*batch, s->ready.front());  // the trainer's previous batch goes back to the readers
      if (spare_.size() < 2 * streams_.size() + 2) spare_.push_back(std::move(s->ready.front()));
      s->ready.pop_front();
      buffered_bytes_ -= s->ready_bytes.front();
      s->ready_bytes.pop_front();
      ++s->consumed;
      // The budget this batch freed: to its stream first, then to the splits
      // after it (each up to its share), which prefetch meanwhile.
      GrantCredits(s, /*waiting=*/false);
      for (const auto& x : streams_)
        if (x.get() != s) GrantCredits(x.get(), /*waiting=*/false);
      ++batches_, ++epoch_batches_;
      examples_ += batch->size();
      epoch_records_ += batch->size();
      l.unlock();
      return finish(true);
    }
    if (s->failed) {
      l.unlock();
      CTRAIN_RETURN_IF_ERROR(Reopen(it));
      continue;
    }
    // Ended and drained: acknowledge the split.
    if (s->consumed != s->split_batches)
      return DataLossError("worker " + s->worker + ": " + SplitName(s->split) + " has " +
                           std::to_string(s->split_batches) + " batches, the trainer took " +
                           std::to_string(s->consumed));
    const proto::SplitId split = s->split;
    const int32_t unit = s->unit;
    const int64_t split_batches = s->split_batches, split_examples = s->split_examples;
    l.unlock();
    CloseStream(s);
    {
      std::lock_guard<std::mutex> g(mu_);
      worker_input_bytes_ += s->input_bytes;  // a split the trainer took whole
      epoch_padded_rows_ += s->padded_rows;
      epoch_oov_ids_ += s->oov_ids;
      padded_rows_ += s->padded_rows;
      oov_ids_ += s->oov_ids;
      streams_.erase(it);
    }
    proto::CompleteSplitRequest creq;
    creq.set_job_id(job_);
    creq.set_consumer_index(opt_.consumer_index);
    creq.set_session(session_);
    *creq.mutable_split() = split;
    creq.set_batches(split_batches);
    creq.set_examples(split_examples);
    proto::CompleteSplitResponse cresp;
    CTRAIN_RETURN_IF_ERROR(CallDispatcher("acknowledge a split", creq, &cresp, &proto::Dispatcher::Stub::CompleteSplit));
    done_.insert(unit);
    partial_.erase(unit);
    ++splits_done_;
  }
}

json DataServiceSource::Cursor() const {
  json partial = json::object();
  for (const auto& [u, n] : partial_) partial[std::to_string(u)] = n;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& s : streams_) partial[std::to_string(s->unit)] = s->consumed;
  }
  return json{{"job", job_}, {"epoch", epoch_}, {"done", done_}, {"partial", partial}, {"examples", epoch_records_}};
}

Status DataServiceSource::Finish() {
  CloseAll();
  proto::ReleaseJobRequest req;
  req.set_job_id(job_);
  req.set_consumer_index(opt_.consumer_index);
  req.set_session(session_);
  proto::ReleaseJobResponse resp;
  CTRAIN_RETURN_IF_ERROR(CallDispatcher("finish the job", req, &resp, &proto::Dispatcher::Stub::ReleaseJob));
  Log("finished job " + job_ + (resp.job_finished() ? " (every trainer of the job is done)" : ""));
  return Status::OK();
}

data::PipelineStats DataServiceSource::stats() const {
  data::PipelineStats st;
  st.records = static_cast<uint64_t>(epoch_records_);
  st.batches = static_cast<uint64_t>(epoch_batches_);
  std::lock_guard<std::mutex> l(mu_);
  st.criteo_padded_rows = epoch_padded_rows_;
  st.oov_ids = epoch_oov_ids_;
  uint32_t i = 0;
  for (const auto& [name, r] : input_reads_) {
    data::InputReadStats in = r;
    in.file = i++;
    st.inputs.push_back(in);
  }
  return st;
}

json DataServiceSource::Metrics() const {
  const double total = wait_seconds_ + busy_seconds_;
  const double wait = total > 0 ? wait_seconds_ / total : 0;
  AdviceInputs in;
  in.trainer = "trainer " + std::to_string(opt_.consumer_index) + " of job " + job_;
  in.input_wait_fraction = wait;
  in.batches_per_sec = total > 0 ? batches_ / total : 0;
  in.workers = static_cast<int32_t>(workers_seen_.size());
  int64_t peak_buffered = 0, peak_committed = 0, largest = 0, input_bytes = 0;
  uint64_t padded = 0, oov = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    peak_buffered = peak_buffered_bytes_, peak_committed = peak_committed_bytes_, largest = largest_frame_bytes_;
    input_bytes = worker_input_bytes_;
    padded = padded_rows_, oov = oov_ids_;
  }
  return json{{"dispatcher", opt_.dispatcher},
              {"job_name", job_},
              {"processing_mode", ProcessingModeName(opt_.processing_mode)},
              {"workers", workers_seen_.size()},
              {"batches", batches_},
              {"examples", examples_},
              {"bytes_received", wire_bytes_},
              {"raw_bytes", raw_bytes_},
              {"splits_completed", splits_done_},
              {"failovers", failovers_},
              {"duplicate_frames_dropped", duplicates_},
              {"frames_dropped_on_failover", dropped_on_failover_},
              {"streams_dropped_idle", idle_drops_},
              {"buffer_bytes", opt_.max_buffer_bytes},
              {"buffered_bytes_peak", peak_buffered},
              {"committed_bytes_peak", peak_committed},
              {"largest_batch_bytes", largest},
              {"worker_input_bytes", input_bytes},
              {"criteo_padded_rows", padded},  // the workers' counts of the completed splits
              {"oov_ids", oov},
              {"input_wait_fraction", wait},
              {"advice", InputAdvice(in)}};
}

}  // namespace

StatusOr<std::unique_ptr<train::BatchSource>> CreateDataServiceSource(const DataServiceClientOptions& options,
                                                                     const train::BatchSourceParams& params) {
  auto src = std::make_unique<DataServiceSource>(options, params);
  CTRAIN_RETURN_IF_ERROR(src->Init());
  return std::unique_ptr<train::BatchSource>(std::move(src));
}

train::BatchSourceFactory MakeDataServiceSourceFactory(const DataServiceClientOptions& options) {
  return [options](const train::BatchSourceParams& params) { return CreateDataServiceSource(options, params); };
}

}  // namespace ctrain::dataservice
