#include "ctrain/base/clock.h"
#include "ctrain/dataservice/worker.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/server_context.h>

#include "ctrain/base/log.h"
#include "ctrain/data/pipeline.h"
#include "ctrain/dataservice/data_service.grpc.pb.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/dataservice/frame_codec.h"
#include "ctrain/dataservice/split_source.h"
#include "ctrain/service/auth.h"
#include "ctrain/service/grpc_status.h"

namespace ctrain::dataservice {
namespace {
using Clock = ::ctrain::Clock;  // base/clock.h
}

int64_t ProcessRssBytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, rss = 0;
  if (!(in >> pages >> rss)) return 0;
  return rss * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

struct Worker::Impl final : public proto::Worker::Service {
  WorkerOptions options;
  service::RunningServer server;
  std::string address;
  std::unique_ptr<proto::Dispatcher::Stub> dispatcher;
  // Stats.
  std::atomic<int64_t> batches{0}, bytes{0};
  std::atomic<int32_t> active{0};
  std::atomic<bool> stopping{false};
  // The byte budget shared by every stream's queue.
  std::mutex budget_mu;
  std::condition_variable budget_cv;
  int64_t buffered = 0;  // GUARDED_BY(budget_mu)

  // The token and the training job of a call (service/auth.h CheckCaller).
  grpc::Status Check(const grpc::ServerContext& ctx) const {
    return service::CheckCaller(ctx, options.server.token, options.server.training_job_name, options.server.role);
  }

  void Log(const std::string& line) const {
    if (options.log)
      options.log(line);
    else
      Logf("worker: %s\n", line.c_str());
  }

  // A heartbeat with this worker's figures.
  proto::WorkerHeartbeatRequest Heartbeat(double bps, double Bps) {
    proto::WorkerHeartbeatRequest req;
    req.set_worker_address(address);
    req.set_threads(options.threads);
    proto::WorkerStats* st = req.mutable_stats();
    st->set_batches(batches);
    st->set_bytes(bytes);
    st->set_batches_per_sec(bps);
    st->set_bytes_per_sec(Bps);
    st->set_active_streams(active);
    {
      std::lock_guard<std::mutex> b(budget_mu);
      st->set_buffered_bytes(buffered);
      st->set_queue_fill(std::min(1.0, static_cast<double>(buffered) / options.max_buffer_bytes));
    }
    st->set_rss_bytes(ProcessRssBytes());
    return req;
  }

  grpc::Status StreamSplit(grpc::ServerContext* ctx,
                           grpc::ServerReaderWriter<proto::BatchFrame, proto::StreamRequest>* stream) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    proto::StreamRequest open;
    if (!stream->Read(&open))
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "StreamSplit: the stream ended before its first message");
    StatusOr<FrameCompression> comp = ParseFrameCompression(open.compression());
    if (!comp.ok()) return service::ToGrpcStatus(comp.status());
    if (open.skip_batches() < 0 || open.credits() < 0 || open.credits() > (1 << 20))
      return service::ToGrpcStatus(InvalidArgumentError("StreamSplit: skip_batches and credits must be in range"));
    StatusOr<std::unique_ptr<SplitSource>> pipe = OpenSplit(open.dataset(), open.split(), options.threads);
    if (!pipe.ok()) return service::ToGrpcStatus(pipe.status());
    const std::string split_name = SplitName(open.split());

    // Shared between this thread (writer), the producer and the credit reader.
    std::mutex mu;
    std::condition_variable cv;
    std::deque<proto::BatchFrame> queue;
    // Sent frames come back here for the producer to refill: their payload
    // capacity is reused instead of being freed on another thread.
    std::vector<proto::BatchFrame> spare;
    int64_t queued_bytes = 0;
    int64_t credits = open.credits();
    bool produced_all = false, client_gone = false, cancel = false;
    Status produce_error;

    auto inputs_to = [&](proto::BatchFrame* f) {
      for (const data::InputReadStats& in : (*pipe)->stats().inputs) {
        proto::InputRead* r = f->add_inputs();
        r->set_name(in.name);
        r->set_format(in.format);
        r->set_compression(in.compression);
        r->set_records(in.records);
        r->set_finished(in.finished);
        r->set_input_bytes(in.input_bytes);
        r->set_byte_range(in.byte_range);
      }
    };
    std::thread producer([&] {
      FrameEncoder enc(*comp, options.zstd_level);
      data::Batch batch;
      int64_t seq = 0, examples = 0;
      Status st;
      for (;;) {
        {
          std::lock_guard<std::mutex> l(mu);
          if (cancel) break;
        }
        StatusOr<bool> more = (*pipe)->Next(&batch);
        if (!more.ok()) {
          st = more.status();
          break;
        }
        if (!*more) break;
        examples += batch.size();
        if (seq < open.skip_batches()) {
          ++seq;
          continue;
        }
        proto::BatchFrame f;
        {
          std::lock_guard<std::mutex> l(mu);
          if (!spare.empty()) {
            f.Swap(&spare.back());
            spare.pop_back();
          }
        }
        st = enc.Encode(batch, seq, &f);
        if (!st.ok()) break;
        if (seq == open.skip_batches()) inputs_to(&f);
        ++seq;
        const int64_t size = static_cast<int64_t>(f.payload().size());
        {  // the worker-wide byte budget (a stream with an empty queue may always add one frame)
          std::unique_lock<std::mutex> b(budget_mu);
          budget_cv.wait(b, [&] {
            std::lock_guard<std::mutex> l(mu);
            return cancel || queue.empty() || buffered + size <= options.max_buffer_bytes;
          });
          buffered += size;
        }
        bool cancelled = false;
        {
          std::lock_guard<std::mutex> l(mu);
          cancelled = cancel;
          if (!cancelled) {
            queued_bytes += size;
            queue.push_back(std::move(f));
            cv.notify_all();
          }
        }
        if (cancelled) {  // lock order: budget_mu before mu (the budget wait above)
          std::lock_guard<std::mutex> b(budget_mu);
          buffered -= size;
          break;
        }
      }
      proto::BatchFrame end;
      end.set_seq(seq);
      if (st.ok()) {
        end.set_end_of_split(true);
        end.set_split_batches(seq);
        end.set_split_examples(examples);
        inputs_to(&end);
        const data::PipelineStats counted = (*pipe)->stats();
        end.set_criteo_padded_rows(counted.criteo_padded_rows);
        end.set_oov_ids(counted.oov_ids);
      } else {  // in band: the call itself ends OK once the client has read this
        const Status located = st.WithContext(split_name);
        end.set_error_code(static_cast<int>(located.code()));
        end.set_error_message(std::string(located.message()));
      }
      std::lock_guard<std::mutex> l(mu);
      produce_error = st;
      if (!cancel) queue.push_back(std::move(end));
      produced_all = true;
      cv.notify_all();
    });
    std::thread credit_reader([&] {
      proto::StreamRequest more;
      while (stream->Read(&more)) {
        std::lock_guard<std::mutex> l(mu);
        if (more.credits() > 0 && more.credits() <= (1 << 20)) credits += more.credits();
        cv.notify_all();
      }
      std::lock_guard<std::mutex> l(mu);
      client_gone = true;
      cv.notify_all();
    });

    ++active;
    grpc::Status result = grpc::Status::OK;
    // Since when a batch has waited for a credit (none granted in between),
    // checked at least every half timeout.
    Clock::time_point starved_since{};
    const auto wake = options.stream_idle_timeout.count() > 0
                          ? std::min<std::chrono::milliseconds>(std::chrono::milliseconds(200),
                                                                std::max<std::chrono::milliseconds>(
                                                                    std::chrono::milliseconds(1), options.stream_idle_timeout / 2))
                          : std::chrono::milliseconds(200);
    for (;;) {
      proto::BatchFrame f;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait_for(l, wake, [&] {
          return client_gone || stopping.load() || (credits > 0 && !queue.empty()) || (queue.empty() && produced_all);
        });
        if (ctx->IsCancelled() || stopping.load()) {
          result = grpc::Status(grpc::StatusCode::CANCELLED, "the worker is stopping");
          break;
        }
        if (credits <= 0 && !queue.empty() && !client_gone) {
          const auto now = Clock::now();
          if (starved_since == Clock::time_point{}) starved_since = now;
          if (options.stream_idle_timeout.count() > 0 && now - starved_since >= options.stream_idle_timeout) {
            Log("dropping the stream of " + split_name + " of job " + open.job_id() + " to " + ctx->peer() +
                ": its consumer took no batch for " + std::to_string(options.stream_idle_timeout.count()) +
                " ms (--stream-idle-timeout-ms); it re-reads the rest when it reads again");
            proto::BatchFrame drop;
            drop.set_seq(queue.front().seq());
            drop.set_dropped_idle(true);
            l.unlock();
            stream->Write(drop);
            break;
          }
        } else {
          starved_since = Clock::time_point{};
        }
        if (queue.empty() && produced_all) break;
        if (client_gone && queue.empty()) break;
        if (credits <= 0 || queue.empty()) {
          if (client_gone) break;
          continue;
        }
        f = std::move(queue.front());
        queue.pop_front();
        --credits;
        queued_bytes -= static_cast<int64_t>(f.payload().size());
      }
      {
        std::lock_guard<std::mutex> b(budget_mu);
        buffered -= static_cast<int64_t>(f.payload().size());
      }
      budget_cv.notify_all();
      const bool end = f.end_of_split() || f.error_code() != 0;
      const int64_t n = static_cast<int64_t>(f.payload().size());
      if (!stream->Write(f)) break;  // the client went away
      if (end) break;
      ++batches;
      bytes += n;
      std::lock_guard<std::mutex> l(mu);
      if (spare.size() < 4) spare.push_back(std::move(f));
    }
    {
      std::lock_guard<std::mutex> l(mu);
      cancel = true;
      cv.notify_all();
    }
    budget_cv.notify_all();
    producer.join();
    {
      std::lock_guard<std::mutex> b(budget_mu);
      buffered -= queued_bytes;  // frames never sent
      queued_bytes = 0;
    }
    budget_cv.notify_all();
    // The credit reader ends when the client half-closes (it does after the
    // end frame); a client that does not within 10 s is cut off.
    {
      std::unique_lock<std::mutex> l(mu);
      if (!cv.wait_for(l, std::chrono::seconds(10), [&] { return client_gone; })) ctx->TryCancel();
    }
    credit_reader.join();
    --active;
    return result;
  }
};

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() {
  if (impl_ && impl_->server.server) {
    impl_->stopping = true;
    impl_->server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}
const std::string& Worker::address() const { return impl_->address; }

StatusOr<std::unique_ptr<Worker>> Worker::Start(const WorkerOptions& options) {
  CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(options.dispatcher, "--dispatcher"));
  if (options.threads < 1 || options.threads > 1024)
    return InvalidArgumentError("--threads must be in [1, 1024], got " + std::to_string(options.threads));
  if (options.max_buffer_bytes < 1) return InvalidArgumentError("--max-buffer-bytes must be >= 1");
  if (!options.worker_address.empty()) {
    CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(options.worker_address, "--worker-address"));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.server.role == "server") impl->options.server.role = "data-service worker";
  CTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> ch, service::MakeChannel(options.dispatcher, options.channel));
  impl->dispatcher = proto::Dispatcher::NewStub(ch);
  CTRAIN_ASSIGN_OR_RETURN(impl->server, service::StartServer(options.server, {impl.get()}));
  impl->address = options.worker_address.empty() ? impl->server.address : options.worker_address;
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Status Worker::Run(const std::atomic<int>* stop) {
  Impl& m = *impl_;
  const auto start = Clock::now();
  auto last_ok = start, last_notice = start;
  auto last_rate_at = start;
  int64_t last_batches = 0, last_bytes = 0;
  double bps = 0, Bps = 0;
  bool registered = false;
  bool saw_work = false;  // an unfinished job, a new job or an open stream since registering
  int32_t jobs_at_registration = 0;
  Clock::time_point idle_since;  // registration or the last heartbeat with work
  std::string why;
  Status result;
  for (;;) {
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_rate_at).count();
    if (dt >= 0.5) {
      bps = (m.batches - last_batches) / dt;
      Bps = (m.bytes - last_bytes) / dt;
      last_batches = m.batches, last_bytes = m.bytes, last_rate_at = now;
    }
    proto::WorkerHeartbeatRequest req = m.Heartbeat(bps, Bps);
    if (m.options.on_stats) m.options.on_stats(bps, Bps, req.stats().queue_fill());
    grpc::ClientContext ctx;
    service::PrepareContext(&ctx, m.options.channel, std::chrono::milliseconds(2000));
    proto::WorkerHeartbeatResponse resp;
    grpc::Status s = m.dispatcher->WorkerHeartbeat(&ctx, req, &resp);
    if (s.ok()) {
      last_ok = now;
      if (!registered) {
        m.Log("registered with the dispatcher " + m.options.dispatcher + " as " + m.address);
        registered = true;
        idle_since = now;
        jobs_at_registration = resp.jobs();
      }
      if (resp.shutdown()) {
        why = "the data service is shutting down";
        break;
      }
      const bool busy = resp.unfinished_jobs() > 0 || m.active > 0;
      // A job created since (even one started and finished between two heartbeats) is work seen.
      if (busy || resp.jobs() > jobs_at_registration) saw_work = true;
      if (busy) idle_since = now;
      if (m.options.exit_when_idle && !busy) {
        if (saw_work) {
          why = "every job has finished (--exit-when-idle)";
          break;
        }
        if (m.options.idle_grace.count() > 0 && now - idle_since >= m.options.idle_grace) {
          why = "no work arrived within " + std::to_string(m.options.idle_grace.count()) +
                " s of registering (--exit-when-idle, --idle-grace-seconds)";
          break;
        }
      }
    } else {
      if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
          s.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
        result = service::FromGrpcStatus(s, "dispatcher " + m.options.dispatcher);
        why = "refused by the dispatcher";
        break;
      }
      if (m.options.dispatcher_wait.count() > 0 && now - last_ok >= m.options.dispatcher_wait) {
        result = DeadlineExceededError("gave up waiting for the dispatcher " + m.options.dispatcher + " after " +
                                       std::to_string(m.options.dispatcher_wait.count()) +
                                       " s (--dispatcher-wait-seconds): " + s.error_message());
        why = "the dispatcher is unreachable";
        break;
      }
      if (now - last_notice >= std::chrono::seconds(5)) {
        m.Log("waiting for the dispatcher " + m.options.dispatcher + " (" +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - last_ok).count()) +
              " s): " + s.error_message());
        last_notice = now;
      }
    }
    const auto wake = Clock::now() + m.options.heartbeat;
    while (Clock::now() < wake) {
      if (stop != nullptr && stop->load() != 0) {
        why = "stopping (signal)";
        goto done;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
done:
  m.Log(why);
  if (registered && result.ok()) {  // off the dispatcher's live list now, not after its timeout
    proto::WorkerHeartbeatRequest req = m.Heartbeat(bps, Bps);
    req.set_leaving(true);
    grpc::ClientContext ctx;
    service::PrepareContext(&ctx, m.options.channel, std::chrono::milliseconds(1000));
    proto::WorkerHeartbeatResponse resp;
    (void)m.dispatcher->WorkerHeartbeat(&ctx, req, &resp);  // best effort: the lease ends it otherwise
  }
  m.stopping = true;
  m.server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  m.server.server->Wait();
  m.server.server.reset();
  return result;
}

}  // namespace ctrain::dataservice
