#include "ctrain/base/clock.h"
#include "ctrain/dist/mpi_exchange.h"
#include "ctrain/base/log.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ctrain::dist {

namespace {

using Clock = ::ctrain::Clock;  // base/clock.h
constexpr int kArriveTag = 7101;
// Liveness probe of a stalled collective: a waiting rank pings the peers that
// arrived; every rank waiting in a collective answers pings.
constexpr int kPingTag = 7102, kPongTag = 7103;
// A stop request while peers do not arrive: give up after this long.
constexpr double kStopGraceSecs = 5.0;
// Poll without sleeping this long before sleeping between polls.
constexpr double kSpinSecs = 0.002;
// Largest piece of one broadcast (MPI counts are int).
constexpr size_t kMaxChunkBytes = size_t{1} << 30;

std::string MpiErrorText(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(buf, len);
}

std::string Secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", s);
  return b;
}

}  // namespace

bool LaunchedByMpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

struct MpiExchange::Impl {
  MPI_Comm data = MPI_COMM_NULL;    // the collectives
  MPI_Comm notify = MPI_COMM_NULL;  // arrival messages (stall detection)
  std::vector<uint64_t> arrived;    // per peer: the collective number it said it entered
  std::vector<MPI_Request> recv, send;
  uint64_t out = 0;
  std::vector<uint64_t> pong;       // per peer: the collective number its answer names
  std::vector<MPI_Request> pong_recv;

  // Answers every ping that came in (8 bytes: eager, MPI_Send returns at once).
  void AnswerPings() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, notify, &flag, &st) != MPI_SUCCESS || !flag) return;
      uint64_t v = 0;
      MPI_Recv(&v, 1, MPI_UINT64_T, st.MPI_SOURCE, kPingTag, notify, MPI_STATUS_IGNORE);
      MPI_Send(&v, 1, MPI_UINT64_T, st.MPI_SOURCE, kPongTag, notify);
    }
  }
};

StatusOr<std::unique_ptr<MpiExchange>> MpiExchange::Create(const DistOptions& options) {
  std::unique_ptr<MpiExchange> x(new MpiExchange());
  x->options_ = options;
  x->impl_ = std::make_unique<Impl>();
  // The ring algorithm for MPI_Iallreduce (unless the user chose one): libnbc's
  // default pick for our message sizes ran 2-8x slower than the blocking
  // MPI_Allreduce on this machine (2.6 vs 0.9 ms for 3.3 MB, 2 ranks); the
  // ring matches it and sends the modelled 2(N-1)/N bytes per element.
  ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return InternalError("MPI_Init_thread: " + MpiErrorText(rc));
  // Errors come back as codes (turned into Status), never as a silent abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &x->impl_->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &x->impl_->notify);
  MPI_Comm_set_errhandler(x->impl_->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(x->impl_->notify, MPI_ERRORS_RETURN);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  x->rank_ = r;
  x->size_ = n;
  if (const char* lr = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) x->local_rank_ = std::atoi(lr);
  x->impl_->arrived.assign(n, 0);
  x->impl_->recv.assign(n, MPI_REQUEST_NULL);
  x->impl_->send.assign(n, MPI_REQUEST_NULL);
  x->impl_->pong.assign(n, 0);
  x->impl_->pong_recv.assign(n, MPI_REQUEST_NULL);
  // Host names and pids of every rank (blocking: nothing to detect yet).
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  std::vector<char> hosts(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  rc = MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                     x->impl_->data);
  if (rc != MPI_SUCCESS) return InternalError("MPI_Allgather (host names): " + MpiErrorText(rc));
  int64_t pid = ::getpid();
  x->pids_.resize(n);
  rc = MPI_Allgather(&pid, 1, MPI_INT64_T, x->pids_.data(), 1, MPI_INT64_T, x->impl_->data);
  if (rc != MPI_SUCCESS) return InternalError("MPI_Allgather (pids): " + MpiErrorText(rc));
  for (int i = 0; i < n; ++i) {
    const char* h = hosts.data() + static_cast<size_t>(i) * MPI_MAX_PROCESSOR_NAME;
    x->hosts_.emplace_back(h, strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }
  return x;
}

MpiExchange::~MpiExchange() {
  if (impl_ == nullptr) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (impl_->notify != MPI_COMM_NULL) MPI_Comm_free(&impl_->notify);
  if (impl_->data != MPI_COMM_NULL) MPI_Comm_free(&impl_->data);
  MPI_Finalize();
}

std::string MpiExchange::RankName(int32_t r) const {
  if (r < 0 || r >= size_) return "rank " + std::to_string(r);
  return "rank " + std::to_string(r) + " (host " + hosts_[r] + ", pid " + std::to_string(pids_[r]) + ")";
}

void MpiExchange::Abort(const std::string& message, int code) {
  Logf("error: %s: %s\n", RankName(rank_).c_str(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

template <typename Start>
Status MpiExchange::Run(std::string_view what, Start&& start) {
  Impl& m = *impl_;
  const uint64_t seq = ++seq_;
  m.out = seq;
  // Arrival messages: tell every peer we entered collective #seq, and listen
  // for theirs (per source, messages arrive in order: one per collective).
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    MPI_Isend(&m.out, 1, MPI_UINT64_T, p, kArriveTag, m.notify, &m.send[p]);
    MPI_Irecv(&m.arrived[p], 1, MPI_UINT64_T, p, kArriveTag, m.notify, &m.recv[p]);
  }
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = start(m.data, &req);
  if (rc != MPI_SUCCESS) return InternalError(std::string(what) + ": " + MpiErrorText(rc));
  const auto t0 = Clock::now();
  bool warned = false, pinged = false;
  double stop_since = -1;
  // Probe the arrived peers half-way to the first deadline: by then a live one has answered.
  double ping_at = 0;
  for (double t : {options_.stall_warning_secs, options_.stall_shutdown_secs})
    if (t > 0) ping_at = ping_at > 0 ? std::min(ping_at, t / 2) : t / 2;
  auto ping = [&]() {
    pinged = true;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      int done = 0;
      if (m.recv[p] != MPI_REQUEST_NULL) MPI_Test(&m.recv[p], &done, MPI_STATUS_IGNORE);
      if (m.recv[p] != MPI_REQUEST_NULL) continue;  // not arrived: named as such
      uint64_t v = seq;
      MPI_Send(&v, 1, MPI_UINT64_T, p, kPingTag, m.notify);
      MPI_Irecv(&m.pong[p], 1, MPI_UINT64_T, p, kPongTag, m.notify, &m.pong_recv[p]);
    }
  };
  auto answered = [&](int p) {  // a pong for this collective (older ones are skipped)
    for (;;) {
      if (m.pong_recv[p] == MPI_REQUEST_NULL) return true;
      int done = 0;
      MPI_Test(&m.pong_recv[p], &done, MPI_STATUS_IGNORE);
      if (!done) return false;
      if (m.pong[p] == seq) return true;
      MPI_Irecv(&m.pong[p], 1, MPI_UINT64_T, p, kPongTag, m.notify, &m.pong_recv[p]);
    }
  };
  auto missing = [&]() {
    std::string names;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      int done = 0;
      if (m.recv[p] != MPI_REQUEST_NULL) MPI_Test(&m.recv[p], &done, MPI_STATUS_IGNORE);
      if (m.recv[p] != MPI_REQUEST_NULL)
        names += (names.empty() ? "" : ", ") + RankName(p) + " (did not enter it)";
      else if (pinged && !answered(p))
        names += (names.empty() ? "" : ", ") + RankName(p) + " (entered it, then stopped responding)";
    }
    return names.empty() ? std::string("none (every rank entered it and responds; the transfer itself is slow)")
                         : names;
  };
  for (int spins = 0;; ++spins) {
    int done = 0;
    rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return InternalError(std::string(what) + ": " + MpiErrorText(rc));
    if (done) break;
    const double el = std::chrono::duration<double>(Clock::now() - t0).count();
    if (spins % 64 == 63) m.AnswerPings();
    if (ping_at > 0 && !pinged && el >= ping_at) ping();
    if (options_.stall_warning_secs > 0 && el >= options_.stall_warning_secs && !warned) {
      warned = true;
      std::fprintf(stderr,
                   "ctrain: warning: %s: stall: '%.*s' (collective #%llu) has waited %s s for: %s "
                   "(--stall-warning-secs %g)\n",
                   RankName(rank_).c_str(), static_cast<int>(what.size()), what.data(),
                   static_cast<unsigned long long>(seq), Secs(el).c_str(), missing().c_str(),
                   options_.stall_warning_secs);
      std::fflush(stderr);
    }
    if (options_.stall_shutdown_secs > 0 && el >= options_.stall_shutdown_secs)
      Abort("stall: '" + std::string(what) + "' (collective #" + std::to_string(seq) + ") waited " + Secs(el) +
                " s for: " + missing() + "; shutting down (--stall-shutdown-secs " +
                Secs(options_.stall_shutdown_secs) + ")",
            1);
    const int sig = stop_flag_ != nullptr ? stop_flag_->load(std::memory_order_acquire) : 0;
    if (sig != 0) {
      if (stop_since < 0) stop_since = el;
      if (el - stop_since >= kStopGraceSecs)
        return CancelledError(std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal") +
                              " while '" + std::string(what) + "' waited for: " + missing() +
                              "; no checkpoint written (the other ranks did not reach the step)");
    }
    // Non-blocking collectives progress only inside MPI_Test: poll without
    // sleeping for kSpinSecs (a collective usually completes within that of
    // the last arrival), then sleep a little between polls so a rank waiting
    // for a slow peer leaves its core to others.
    if (el < kSpinSecs) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(el < 1.0 ? 20 : 500));
  }
  collective_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  // Everyone arrived (the collective completed): collect the arrival messages.
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    if (m.pong_recv[p] != MPI_REQUEST_NULL) {  // an unanswered probe: withdrawn
      MPI_Cancel(&m.pong_recv[p]);
      MPI_Wait(&m.pong_recv[p], MPI_STATUS_IGNORE);
    }
    MPI_Wait(&m.recv[p], MPI_STATUS_IGNORE);
    MPI_Wait(&m.send[p], MPI_STATUS_IGNORE);
    if (m.arrived[p] != seq)
      return InternalError(std::string(what) + ": " + RankName(p) + " was at collective #" +
                           std::to_string(m.arrived[p]) + ", this rank at #" + std::to_string(seq) +
                           ": the ranks run different steps");
  }
  return Status::OK();
}

Status MpiExchange::AgreeStep(bool has_data, int stop_signal, bool* all_have_data, int* any_stop_signal) {
  int64_t mine[2] = {has_data ? 0 : 1, stop_signal};
  int64_t all[2] = {0, 0};
  CTRAIN_RETURN_IF_ERROR(Run("step vote (has data, stop request)", [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallreduce(mine, all, 2, MPI_INT64_T, MPI_MAX, c, r);
  }));
  payload_bytes_[kControl] += sizeof mine;
  *all_have_data = all[0] == 0;
  *any_stop_signal = static_cast<int>(all[1]);
  return Status::OK();
}

Status MpiExchange::AllreduceSum(std::span<float> data, std::string_view what) {
  if (data.size() > static_cast<size_t>(INT32_MAX)) return InvalidArgumentError(std::string(what) + ": too large");
  CTRAIN_RETURN_IF_ERROR(Run(what, [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, c, r);
  }));
  payload_bytes_[kDense] += static_cast<int64_t>(data.size_bytes());
  return Status::OK();
}

Status MpiExchange::AllgatherRows(std::span<const int64_t> ids, std::span<const float> rows, int32_t width,
                                  std::vector<int64_t>* all_ids, std::vector<float>* all_rows,
                                  std::vector<int64_t>* counts, std::string_view what) {
  int64_t n = static_cast<int64_t>(ids.size());
  if (static_cast<int64_t>(rows.size()) != n * width)
    return InvalidArgumentError(std::string(what) + ": rows do not match ids x width");
  counts->assign(size_, 0);
  CTRAIN_RETURN_IF_ERROR(Run(std::string(what) + " (counts)", [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgather(&n, 1, MPI_INT64_T, counts->data(), 1, MPI_INT64_T, c, r);
  }));
  std::vector<int> cnt(size_), disp(size_), rcnt(size_), rdisp(size_);
  int64_t total = 0;
  for (int p = 0; p < size_; ++p) {
    if (total + (*counts)[p] > INT32_MAX / std::max(1, width))
      return InvalidArgumentError(std::string(what) + ": too many rows for one allgatherv");
    cnt[p] = static_cast<int>((*counts)[p]);
    disp[p] = static_cast<int>(total);
    rcnt[p] = cnt[p] * width;
    rdisp[p] = disp[p] * width;
    total += (*counts)[p];
  }
  all_ids->resize(total);
  all_rows->resize(total * width);
  CTRAIN_RETURN_IF_ERROR(Run(std::string(what) + " (ids)", [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgatherv(ids.data(), static_cast<int>(n), MPI_INT64_T, all_ids->data(), cnt.data(), disp.data(),
                           MPI_INT64_T, c, r);
  }));
  CTRAIN_RETURN_IF_ERROR(Run(std::string(what) + " (rows)", [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgatherv(rows.data(), static_cast<int>(n * width), MPI_FLOAT, all_rows->data(), rcnt.data(),
                           rdisp.data(), MPI_FLOAT, c, r);
  }));
  payload_bytes_[kSparse] += static_cast<int64_t>(sizeof n + ids.size_bytes() + rows.size_bytes());
  return Status::OK();
}

Status MpiExchange::Broadcast(std::span<std::byte> data, std::string_view what) {
  for (size_t off = 0; off < data.size() || (off == 0 && data.empty()); off += kMaxChunkBytes) {
    const size_t len = std::min(kMaxChunkBytes, data.size() - off);
    CTRAIN_RETURN_IF_ERROR(Run(what, [&](MPI_Comm c, MPI_Request* r) {
      return MPI_Ibcast(data.data() + off, static_cast<int>(len), MPI_BYTE, 0, c, r);
    }));
    if (rank_ == 0) payload_bytes_[kBroadcast] += static_cast<int64_t>(len);
    if (data.empty()) break;
  }
  return Status::OK();
}

Status MpiExchange::AllgatherU64(uint64_t mine, std::vector<uint64_t>* all, std::string_view what) {
  all->assign(size_, 0);
  CTRAIN_RETURN_IF_ERROR(Run(what, [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgather(&mine, 1, MPI_UINT64_T, all->data(), 1, MPI_UINT64_T, c, r);
  }));
  payload_bytes_[kControl] += sizeof mine;
  return Status::OK();
}

Status MpiExchange::AllgatherStrings(const std::string& mine, std::vector<std::string>* all, std::string_view what) {
  std::vector<int64_t> len_all(size_);
  int64_t len = static_cast<int64_t>(mine.size());
  CTRAIN_RETURN_IF_ERROR(Run(std::string(what) + " (lengths)", [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgather(&len, 1, MPI_INT64_T, len_all.data(), 1, MPI_INT64_T, c, r);
  }));
  std::vector<int> cnt(size_), disp(size_);
  int64_t total = 0;
  for (int p = 0; p < size_; ++p) {
    cnt[p] = static_cast<int>(len_all[p]);
    disp[p] = static_cast<int>(total);
    total += len_all[p];
  }
  std::string buf(total, '\0');
  CTRAIN_RETURN_IF_ERROR(Run(what, [&](MPI_Comm c, MPI_Request* r) {
    return MPI_Iallgatherv(mine.data(), static_cast<int>(len), MPI_CHAR, buf.data(), cnt.data(), disp.data(), MPI_CHAR,
                           c, r);
  }));
  all->clear();
  for (int p = 0; p < size_; ++p) all->push_back(buf.substr(disp[p], cnt[p]));
  return Status::OK();
}

}  // namespace ctrain::dist
