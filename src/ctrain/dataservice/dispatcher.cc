#include "ctrain/base/clock.h"
#include "ctrain/dataservice/dispatcher.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/data/file_list.h"
#include "ctrain/dataservice/advice.h"
#include "ctrain/dataservice/data_service.grpc.pb.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/dataservice/dispatcher_state.h"
#include "ctrain/service/auth.h"
#include "ctrain/service/grpc_status.h"
#include "ctrain/service/journal.h"

namespace ctrain::dataservice {
namespace {

using Clock = ::ctrain::Clock;  // base/clock.h
using json = nlohmann::json;

struct WorkerRecord {
  Clock::time_point last_seen;
  proto::WorkerStats stats;
  int32_t threads = 0;
  int32_t assigned_since_heartbeat = 0;
  bool heard_shutdown = false;
  bool left = false;  // said it is exiting: not live until it heartbeats again
};

struct ConsumerRecord {
  Clock::time_point last_seen;
  uint64_t session = 0;  // the latest join's (0: none since this dispatcher started)
  proto::ConsumerStats stats;
  int32_t workers = 0;  // workers it was sent to recently (for the advice)
  std::set<std::string> worker_addresses;
};

}  // namespace

struct Dispatcher::Impl final : public proto::Dispatcher::Service {
  DispatcherOptions options;
  service::RunningServer server;
  std::unique_ptr<service::Journal> journal;
  Clock::time_point started = Clock::now();
  mutable std::mutex mu;
  DispatcherState state;                         // GUARDED_BY(mu)
  std::map<std::string, WorkerRecord> workers;   // GUARDED_BY(mu)
  std::map<std::pair<std::string, int32_t>, ConsumerRecord> consumers;  // GUARDED_BY(mu)
  std::atomic<bool> shutdown{false};
  Clock::time_point shutdown_at;

  // The token and the training job of a call (service/auth.h CheckCaller).
  grpc::Status Check(const grpc::ServerContext& ctx) const {
    return service::CheckCaller(ctx, options.server.token, options.server.training_job_name, options.server.role);
  }

  void Log(const std::string& line) const {
    if (options.log)
      options.log(line);
    else
      Logf("dispatcher: %s\n", line.c_str());
  }

  // Journals then applies. REQUIRES: mu held.
  Status Commit(const std::vector<json>& events) {
    for (const json& e : events) {
      if (journal) CTRAIN_RETURN_IF_ERROR(journal->Append(e.dump()));
      CTRAIN_RETURN_IF_ERROR(state.Apply(e));
    }
    if (journal && journal->bytes() > options.journal_compact_bytes) {
      std::vector<std::string> records;
      for (const json& e : state.Snapshot()) records.push_back(e.dump());
      if (records.size() * 2 < journal->records()) CTRAIN_RETURN_IF_ERROR(journal->Rewrite(records));
    }
    return Status::OK();
  }

  // Live: heard from within the lease (--worker-timeout-ms) since this
  // dispatcher started (workers are not journaled: a restored dispatcher
  // routes nothing to a worker until it heartbeats again), and not leaving.
  bool Alive(const WorkerRecord& w, Clock::time_point now) const {
    return !w.left && now - w.last_seen < options.worker_timeout;
  }

  // A call from consumer k of `job` with `session`: refused when a later join
  // took the index over; adopted when this dispatcher has not seen a join
  // for it (it restarted). REQUIRES: mu held.
  grpc::Status CheckSession(const std::string& job, int32_t k, uint64_t session) {
    ConsumerRecord& cr = consumers[{job, k}];
    if (cr.session == 0 || session == 0) {
      if (cr.session == 0) cr.session = session;
      return grpc::Status::OK;
    }
    if (cr.session != session)
      return service::ToGrpcStatus(FailedPreconditionError(
          "consumer index " + std::to_string(k) + " of job " + job +
          " was taken over by a newer trainer that joined with the same index; two live trainers must not share "
          "an index: give each its own --consumer-index"));
    return grpc::Status::OK;
  }
  uint64_t next_session = 0;  // GUARDED_BY(mu)

  std::vector<std::string> LiveWorkers(Clock::time_point now) const {
    std::vector<std::string> live;
    for (const auto& [addr, w] : workers)
      if (Alive(w, now)) live.push_back(addr);
    return live;  // sorted (map order)
  }

  // ---- RPCs ----

  grpc::Status RegisterDataset(grpc::ServerContext* ctx, const proto::RegisterDatasetRequest* req,
                               proto::RegisterDatasetResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    proto::DatasetDef def = req->dataset();
    std::vector<std::string> patterns(def.files().begin(), def.files().end());
    for (const std::string& p : patterns)
      if (p.empty() || p[0] != '/')
        return service::ToGrpcStatus(InvalidArgumentError("dataset file \"" + p + "\" is not an absolute path"));
    StatusOr<std::vector<std::string>> files = data::ExpandFileList(patterns);
    if (!files.ok()) return service::ToGrpcStatus(files.status().WithContext("the dispatcher's host"));
    def.clear_files();
    std::vector<int64_t> sizes;
    for (const std::string& f : *files) {
      if (data::IsStreamPath(f) || f.rfind("pipe:", 0) == 0)
        return service::ToGrpcStatus(InvalidArgumentError(f + ": the data service reads regular files only"));
      def.add_files(f);
      sizes.push_back(data::RegularFileSize(f));
    }
    if (Status s = ValidateDatasetDef(def); !s.ok()) return service::ToGrpcStatus(s);
    DatasetInfo info{DatasetFingerprint(def), def, sizes};
    std::lock_guard<std::mutex> lock(mu);
    const DatasetInfo* have = state.dataset(info.id);
    resp->set_already_registered(have != nullptr);
    if (have == nullptr) {
      if (Status s = Commit({DispatcherState::DatasetEvent(info)}); !s.ok()) return service::ToGrpcStatus(s);
      Log("dataset " + info.id + " registered: " + std::to_string(def.files_size()) + " file(s), format " +
          def.format() + ", batch " + std::to_string(def.batch_size()));
      have = state.dataset(info.id);
    }
    resp->set_dataset_id(have->id);
    *resp->mutable_dataset() = have->def;
    for (int64_t b : have->file_bytes) resp->add_file_bytes(b);
    return grpc::Status::OK;
  }

  grpc::Status JoinJob(grpc::ServerContext* ctx, const proto::JoinJobRequest* req, proto::JoinJobResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    std::lock_guard<std::mutex> lock(mu);
    const bool existed = state.job(req->job_name()) != nullptr;
    StatusOr<std::vector<json>> events = state.JoinEvents(*req);
    if (!events.ok()) return service::ToGrpcStatus(events.status());
    if (Status s = Commit(*events); !s.ok()) return service::ToGrpcStatus(s);
    const JobInfo* j = state.job(req->job_name());
    resp->set_job_id(j->name);
    resp->set_num_splits(j->num_splits);
    resp->set_created(!existed);
    if (next_session == 0)  // distinct across dispatcher restarts too
      next_session = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) << 8;
    const uint64_t session = ++next_session;
    ConsumerRecord& cr = consumers[{j->name, req->consumer_index()}];
    cr.session = session;
    cr.last_seen = Clock::now();
    resp->set_session(session);
    if (!existed)
      Log("job " + j->name + " created (" + ProcessingModeName(j->mode) + ", " + std::to_string(j->num_splits) +
          " split(s)/epoch, " + std::to_string(j->epochs) + " epoch(s))");
    Log("trainer " + std::to_string(req->consumer_index()) + " joined job " + j->name +
        (req->cursor_json().empty() ? "" : " from its checkpoint cursor " + req->cursor_json()));
    return grpc::Status::OK;
  }

  grpc::Status GetSplit(grpc::ServerContext* ctx, const proto::GetSplitRequest* req,
                        proto::GetSplitResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    const JobInfo* j = state.job(req->job_id());
    if (j == nullptr) return service::ToGrpcStatus(NotFoundError("unknown job \"" + req->job_id() + "\""));
    if (!j->consumers.count(req->consumer_index()))
      return service::ToGrpcStatus(FailedPreconditionError("consumer " + std::to_string(req->consumer_index()) +
                                                           " has not joined job " + j->name));
    if (grpc::Status ss = CheckSession(j->name, req->consumer_index(), req->session()); !ss.ok()) return ss;
    ConsumerRecord& cr = consumers[{req->job_id(), req->consumer_index()}];
    cr.last_seen = now;
    cr.stats = req->stats();
    const std::set<std::string> failed(req->failed_workers().begin(), req->failed_workers().end());
    std::vector<std::string> live = LiveWorkers(now);
    std::vector<std::string> usable;
    for (const std::string& a : live)
      if (!failed.count(a)) usable.push_back(a);
    int32_t unit = -1;
    bool found = false;
    StatusOr<std::vector<json>> events = std::vector<json>{};
    if (req->has_reclaim()) {
      StatusOr<int32_t> u = SplitUnit(*j, req->reclaim());
      if (!u.ok()) return service::ToGrpcStatus(u.status());
      unit = *u;
      events = state.ReclaimEvents(j->name, req->consumer_index(), req->reclaim().epoch(), unit);
      found = true;
    } else {
      const std::set<int32_t> active(req->active().begin(), req->active().end());
      events = state.NextUnitEvents(j->name, req->consumer_index(), req->epoch(), active,
                                    static_cast<int32_t>(live.size()), &unit, &found);
    }
    if (!events.ok() && events.status().code() == StatusCode::kUnavailable) {
      resp->set_result(proto::GetSplitResponse::RETRY);
      resp->set_message("no live worker yet");
      return grpc::Status::OK;
    }
    if (!events.ok()) return service::ToGrpcStatus(events.status());
    if (found && usable.empty()) {  // hand nothing out until a worker can take it
      resp->set_result(proto::GetSplitResponse::RETRY);
      resp->set_message(live.empty() ? "no live worker" : "no live worker other than the failed " +
                                                               *req->failed_workers().begin());
      return grpc::Status::OK;
    }
    if (Status s = Commit(*events); !s.ok()) return service::ToGrpcStatus(s);
    if (!found) {
      resp->set_result(proto::GetSplitResponse::END_OF_EPOCH);
      return grpc::Status::OK;
    }
    // parallel_epochs: copy u goes to the u-th worker (each worker makes its
    // own copy); distributed_epoch: the least busy worker.
    std::string chosen;
    if (j->mode == proto::PARALLEL_EPOCHS) {
      chosen = usable[static_cast<size_t>(unit) % usable.size()];
    } else {
      int64_t best = INT64_MAX;
      for (const std::string& a : usable) {
        const WorkerRecord& w = workers[a];
        const int64_t load = w.stats.active_streams() + w.assigned_since_heartbeat;
        if (load < best) best = load, chosen = a;
      }
    }
    ++workers[chosen].assigned_since_heartbeat;
    cr.worker_addresses.insert(chosen);
    resp->set_result(proto::GetSplitResponse::SPLIT);
    *resp->mutable_split() = UnitSplit(*j, req->has_reclaim() ? req->reclaim().epoch() : req->epoch(), unit);
    resp->set_worker_address(chosen);
    return grpc::Status::OK;
  }

  grpc::Status CompleteSplit(grpc::ServerContext* ctx, const proto::CompleteSplitRequest* req,
                             proto::CompleteSplitResponse*) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    std::lock_guard<std::mutex> lock(mu);
    if (state.job(req->job_id()) != nullptr && state.job(req->job_id())->consumers.count(req->consumer_index()))
      if (grpc::Status ss = CheckSession(req->job_id(), req->consumer_index(), req->session()); !ss.ok()) return ss;
    StatusOr<std::vector<json>> events = state.CompleteEvents(*req);
    if (!events.ok()) return service::ToGrpcStatus(events.status());
    return service::ToGrpcStatus(Commit(*events));
  }

  grpc::Status ReleaseJob(grpc::ServerContext* ctx, const proto::ReleaseJobRequest* req,
                          proto::ReleaseJobResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    std::lock_guard<std::mutex> lock(mu);
    if (state.job(req->job_id()) != nullptr && state.job(req->job_id())->consumers.count(req->consumer_index()))
      if (grpc::Status ss = CheckSession(req->job_id(), req->consumer_index(), req->session()); !ss.ok()) return ss;
    StatusOr<std::vector<json>> events = state.ReleaseEvents(req->job_id(), req->consumer_index());
    if (!events.ok()) return service::ToGrpcStatus(events.status());
    if (Status s = Commit(*events); !s.ok()) return service::ToGrpcStatus(s);
    const JobInfo* j = state.job(req->job_id());
    resp->set_job_finished(j->finished());
    if (!events->empty())
      Log("trainer " + std::to_string(req->consumer_index()) + " finished job " + j->name +
          (j->finished() ? "; the job is finished" : ""));
    return grpc::Status::OK;
  }

  grpc::Status WorkerHeartbeat(grpc::ServerContext* ctx, const proto::WorkerHeartbeatRequest* req,
                               proto::WorkerHeartbeatResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    if (Status s = service::CheckHostPort(req->worker_address(), "worker_address"); !s.ok())
      return service::ToGrpcStatus(s);
    std::lock_guard<std::mutex> lock(mu);
    auto [it, added] = workers.try_emplace(req->worker_address());
    WorkerRecord& w = it->second;
    const bool was_dead = !added && !Alive(w, Clock::now());
    if (req->leaving()) {  // off the live list now: no split goes to it any more
      if (!was_dead) Log("worker " + req->worker_address() + " left");
      w.left = true;
      resp->set_shutdown(shutdown.load());
      return grpc::Status::OK;
    }
    w.left = false;
    w.last_seen = Clock::now();
    w.stats = req->stats();
    w.threads = req->threads();
    w.assigned_since_heartbeat = 0;
    if (added || was_dead) Log("worker " + req->worker_address() + (added ? " registered" : " is back"));
    resp->set_shutdown(shutdown.load());
    if (shutdown.load()) w.heard_shutdown = true;
    resp->set_all_jobs_finished(state.all_jobs_finished());
    int32_t unfinished = 0;
    for (const auto& [name, j] : state.jobs()) unfinished += j.finished() ? 0 : 1;
    resp->set_unfinished_jobs(unfinished);
    resp->set_jobs(static_cast<int32_t>(state.jobs().size()));
    return grpc::Status::OK;
  }

  grpc::Status GetStatus(grpc::ServerContext* ctx, const proto::GetStatusRequest*, proto::GetStatusResponse* resp) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    resp->set_status_json(StatusDoc());
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext* ctx, const proto::ShutdownRequest*, proto::ShutdownResponse*) override {
    if (grpc::Status a = Check(*ctx); !a.ok()) return a;
    if (!shutdown.exchange(true)) {
      std::lock_guard<std::mutex> lock(mu);
      shutdown_at = Clock::now();
      Log("shutdown requested: telling the workers, then exiting");
    }
    return grpc::Status::OK;
  }

  std::string StatusDoc() const {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    json doc;
    doc["address"] = server.address;
    doc["uptime_seconds"] = std::chrono::duration<double>(now - started).count();
    doc["shutdown"] = shutdown.load();
    if (journal)
      doc["journal"] = {{"path", journal->path()}, {"bytes", journal->bytes()}, {"records", journal->records()}};
    json ws = json::array();
    double fill_sum = 0;
    int live = 0;
    for (const auto& [addr, w] : workers) {
      const bool alive = Alive(w, now);
      ws.push_back({{"address", addr},
                    {"alive", alive},
                    {"last_heartbeat_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_seen).count()},
                    {"threads", w.threads},
                    {"batches", w.stats.batches()},
                    {"bytes", w.stats.bytes()},
                    {"batches_per_sec", alive ? w.stats.batches_per_sec() : 0.0},
                    {"bytes_per_sec", alive ? w.stats.bytes_per_sec() : 0.0},
                    {"active_streams", alive ? w.stats.active_streams() : 0},
                    {"queue_fill", alive ? w.stats.queue_fill() : 0.0},
                    {"buffered_bytes", w.stats.buffered_bytes()},
                    {"rss_bytes", w.stats.rss_bytes()}});
      if (alive) fill_sum += w.stats.queue_fill(), ++live;
    }
    doc["workers"] = ws;
    json js = json::array();
    json advice = json::array();
    for (const auto& [name, j] : state.jobs()) {
      json jj = {{"name", name},          {"dataset", j.dataset_id}, {"processing_mode", ProcessingModeName(j.mode)},
                 {"num_splits", j.num_splits}, {"epochs", j.epochs},   {"finished", j.finished()}};
      json eps = json::array();
      for (const auto& [epoch, info] : j.epoch_units)
        eps.push_back({{"epoch", epoch},
                       {"units", info.units.size()},
                       {"done", info.done()},
                       {"in_flight", info.owned()},
                       {"pending", info.pending()}});
      jj["epoch_progress"] = eps;
      json cs = json::array();
      for (const auto& [k, c] : j.consumers) {
        json cj = {{"index", k}, {"epoch", c.epoch}, {"released", c.released}};
        auto it = consumers.find({name, k});
        if (it != consumers.end()) {
          const proto::ConsumerStats& st = it->second.stats;
          cj["input_wait_fraction"] = st.input_wait_fraction();
          cj["batches_per_sec"] = st.batches_per_sec();
          cj["bytes_per_sec"] = st.bytes_per_sec();
          cj["batches"] = st.batches();
          cj["last_seen_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.last_seen).count();
          if (!c.released && now - it->second.last_seen < std::chrono::seconds(30)) {  // a live trainer
            AdviceInputs in;
            in.trainer = "trainer " + std::to_string(k) + " of job " + name;
            in.input_wait_fraction = st.input_wait_fraction();
            in.batches_per_sec = st.batches_per_sec();
            in.workers = std::max(1, live);
            in.worker_queue_fill = live > 0 ? fill_sum / live : 0;
            const std::string a = InputAdvice(in);
            if (!a.empty()) advice.push_back(a);
          }
        }
        cs.push_back(cj);
      }
      jj["trainers"] = cs;
      js.push_back(jj);
    }
    doc["jobs"] = js;
    doc["datasets"] = state.datasets().size();
    doc["advice"] = advice;
    return doc.dump();
  }
};

Dispatcher::Dispatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dispatcher::~Dispatcher() {
  if (impl_ && impl_->server.server) impl_->server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

const std::string& Dispatcher::address() const { return impl_->server.address; }
int Dispatcher::port() const { return impl_->server.port; }
std::string Dispatcher::StatusJson() const { return impl_->StatusDoc(); }

StatusOr<std::unique_ptr<Dispatcher>> Dispatcher::Start(const DispatcherOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.server.role == "server") impl->options.server.role = "data-service dispatcher";
  if (!options.work_dir.empty()) {
    std::vector<std::string> records;
    service::JournalOpenInfo info;
    CTRAIN_ASSIGN_OR_RETURN(impl->journal, service::Journal::Open(options.work_dir, &records, &info));
    for (size_t i = 0; i < records.size(); ++i) {
      json e = json::parse(records[i], nullptr, /*allow_exceptions=*/false);
      if (e.is_discarded())
        return DataLossError(impl->journal->path() + ": record " + std::to_string(i) + " is not JSON");
      CTRAIN_RETURN_IF_ERROR(impl->state.Apply(e).WithContext(impl->journal->path() + ": record " + std::to_string(i)));
    }
    if (info.torn_tail_bytes > 0)
      impl->Log("journal " + impl->journal->path() + ": dropped an incomplete last record (" +
                std::to_string(info.torn_tail_bytes) + " bytes at offset " + std::to_string(info.torn_tail_offset) +
                ", a crash mid-append)");
    if (!records.empty())
      impl->Log("resumed from " + impl->journal->path() + ": " + std::to_string(records.size()) + " records, " +
                std::to_string(impl->state.jobs().size()) + " job(s)");
  }
  service::ServerConfig sc = options.server;
  sc.max_receive_message_bytes = std::max<int64_t>(sc.max_receive_message_bytes, 16 << 20);
  CTRAIN_ASSIGN_OR_RETURN(service::RunningServer running, service::StartServer(sc, {impl.get()}));
  {  // the handlers run from here on: GetStatus reads server.address under mu
    std::lock_guard<std::mutex> lock(impl->mu);
    impl->server = std::move(running);
  }
  return std::unique_ptr<Dispatcher>(new Dispatcher(std::move(impl)));
}

Status Dispatcher::Run(const std::atomic<int>* stop) {
  Impl& m = *impl_;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stop != nullptr && stop->load() != 0) {
      m.Log("stopping (signal)");
      break;
    }
    if (m.shutdown.load()) {
      // Keep answering heartbeats until every live worker heard it, or two timeouts passed.
      std::lock_guard<std::mutex> lock(m.mu);
      const auto now = Clock::now();
      bool all_heard = true;
      for (const auto& [a, w] : m.workers)
        if (m.Alive(w, now) && !w.heard_shutdown) all_heard = false;
      if (all_heard || now - m.shutdown_at > 2 * m.options.worker_timeout) break;
    }
  }
  m.server.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  m.server.server->Wait();
  m.server.server.reset();
  m.journal.reset();
  return Status::OK();
}

}  // namespace ctrain::dataservice
