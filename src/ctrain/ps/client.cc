#include "ctrain/base/clock.h"
#include "ctrain/ps/client.h"

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <mutex>
#include <thread>

#include <grpcpp/client_context.h>

#include "ctrain/base/log.h"
#include "ctrain/ps/dense_placement.h"
#include "ctrain/ps/float_bytes.h"
#include "ctrain/ps/parameter_server.grpc.pb.h"
#include "ctrain/service/grpc_status.h"
#include "ctrain/service/server.h"

namespace ctrain::ps {
namespace {


// Seconds to serialize and parse `req` and `resp` once each (what gRPC does with them on both ends).
template <typename Req, typename Resp>
double ProtobufSeconds(const Req& req, const Resp& resp) {
  const auto t0 = Clock::now();
  std::string a, b;
  req.SerializeToString(&a);
  resp.SerializeToString(&b);
  Req r2;
  Resp p2;
  r2.ParseFromString(a);
  p2.ParseFromString(b);
  return SecondsSince(t0);
}
constexpr int64_t kProtobufSampleEvery = 16;

}  // namespace

struct PsClient::Impl {
  ClientOptions options;
  std::vector<std::unique_ptr<proto::ParameterServer::Stub>> stubs;
  proto::ModelSpec spec;
  bool initialized = false;
  std::optional<train::Partitioner> part;
  int32_t K = 0;
  std::vector<int64_t> dense_sizes;
  std::vector<std::vector<int32_t>> dense_of;  // per shard: the indices of its dense parameters (PlaceDense)
  std::string restored_meta;
  int64_t initial_step = 0;
  std::vector<int64_t> versions;  // per shard: the version of the last pull
  // Per shard: the life that answered last (proto::ShardLife; incarnation 0: none yet), the most updates it
  // was seen to have applied, and the global steps of this worker's pushes it applied after its newest
  // checkpoint (what a restart from that checkpoint loses), oldest first.
  struct Life {
    uint64_t incarnation = 0;
    int64_t seen = 0;
    std::vector<int64_t> pushed;
    bool pushed_truncated = false;  // more than kMaxPushedSteps since the last checkpoint: counts are lower bounds
  };
  static constexpr size_t kMaxPushedSteps = size_t{1} << 20;  // 8 MiB per shard
  std::vector<Life> lives;
  std::vector<char> saves;  // per shard: started with --model-dir (InitResponse.saves)
  std::vector<int64_t> limits;       // per shard: the message size limit used (ps/chunking.h)
  std::vector<int64_t> dense_bytes;  // per shard: its dense parameters in a message (chunk 0's extra)
  uint64_t next_push_id = 0;
  std::mutex life_mu;  // NoteLife (Init may run on the shards' threads: a re-initialised shard)
  ClientStats stats;
  // Per-shard scratch, reused across steps.
  std::vector<proto::PullRequest> pull_req;
  std::vector<proto::PullResponse> pull_resp;
  std::vector<proto::PushRequest> push_req;
  std::vector<proto::PushResponse> push_resp;
  std::vector<std::vector<int64_t>> pos;  // per shard: positions of its ids in the caller's array
  // Per shard, summed into stats after each call: bytes, chunks beyond the first, resends, time encoding.
  struct Traffic {
    int64_t sent = 0, received = 0, extra_chunks = 0, resent = 0;
    double encode_seconds = 0;
  };
  std::vector<Traffic> traffic;

  void Log(const std::string& line) const {
    if (options.log)
      options.log(line);
    else
      Logf("worker %d: %s\n", options.worker_index, line.c_str());
  }
  std::string Name(int32_t s) const {
    return "parameter server shard " + std::to_string(s) + " at " + options.addresses[s];
  }

  // Shard s answered with `life`, having applied `step` updates; `pushed`: this worker's push was applied as
  // update `step`. A new incarnation is a restarted server: this worker's pushes applied after the checkpoint it
  // came back from are lost. Counted (stats.lost_updates) and said.
  void NoteLife(int32_t s, const proto::ShardLife& life, int64_t step, bool pushed) {
    std::lock_guard<std::mutex> l(life_mu);
    Life& L = lives[s];
    if (L.incarnation != 0 && life.incarnation() != L.incarnation) {
      const int64_t from = life.restored_step();
      const auto first_lost = std::upper_bound(L.pushed.begin(), L.pushed.end(), from);
      const int64_t lost = L.pushed.end() - first_lost;
      stats.lost_updates += lost;
      Log(Name(s) + " restarted " +
          (from > 0 ? "from its checkpoint of update " + std::to_string(from) : std::string("with no checkpoint")) +
          (L.seen > from ? " (it had applied at least " + std::to_string(L.seen) + ")" : std::string()) + ": " +
          (L.pushed_truncated ? "at least " : "") + std::to_string(lost) +
          " of this worker's updates, applied after that, are lost (each worker counts its own)");
      L.pushed.clear();
      L.pushed_truncated = false;
      L.seen = 0;
    }
    L.incarnation = life.incarnation();
    L.seen = std::max(L.seen, step);
    // Pushes up to the newest checkpoint survive any restart of this life.
    L.pushed.erase(L.pushed.begin(), std::upper_bound(L.pushed.begin(), L.pushed.end(), life.saved_step()));
    if (pushed) {
      if (L.pushed.size() >= kMaxPushedSteps) {
        L.pushed.erase(L.pushed.begin(), L.pushed.begin() + static_cast<std::ptrdiff_t>(kMaxPushedSteps / 2));
        L.pushed_truncated = true;
      }
      L.pushed.push_back(step);
    }
  }

  // Runs `once` for shard s, waiting for the shard while it is unavailable
  // (bounded), and initialising a shard that restarted without a checkpoint.
  Status Retry(int32_t s, const std::function<Status()>& once) {
    bool reported = false;
    auto attempt = [&]() -> Status {
      Status st = once();
      // A server that shuts down (SIGTERM, a restart) cancels the calls in flight: wait for it as for one that
      // is down. (This client never cancels its own calls; a stop request ends the wait below.)
      if (st.code() == StatusCode::kCancelled && (options.stop == nullptr || options.stop->load() == 0))
        st = UnavailableError(std::string(st.message()) + " (the server cancelled the call: it is shutting down)");
      if (!st.ok() && st.code() == StatusCode::kUnavailable) {
        if (!reported) {
          reported = true;
          Log(Name(s) + " is unavailable (" + std::string(st.message()) + "): waiting up to " +
              std::to_string(options.max_wait.count() / 1000) + " s for it to come back");
        }
        // A fresh channel connects at the next attempt; the old one would wait
        // out gRPC's reconnect backoff (1 s growing to 120 s) first.
        if (StatusOr<std::shared_ptr<grpc::Channel>> ch = service::MakeChannel(options.addresses[s], options.channel);
            ch.ok())
          stubs[s] = proto::ParameterServer::NewStub(*ch);
      }
      if (!st.ok() && st.code() == StatusCode::kFailedPrecondition && initialized &&
          st.message().find("is not initialised") != std::string_view::npos) {
        Log(Name(s) + " restarted without a checkpoint: initialising it again");
        CTRAIN_RETURN_IF_ERROR(InitShard(s));
        return UnavailableError(Name(s) + " was initialised again");  // retried at once below
      }
      return st;
    };
    service::RetryOptions ro;
    ro.max_wait = options.max_wait;
    ro.stop = options.stop;
    ro.log = [this](const std::string& l) { Log(l); };
    Status st = service::RetryUnavailable(Name(s), ro, attempt);
    if (st.ok() && reported) Log(Name(s) + " is back");
    return st;
  }
  Status Call(int32_t s, const std::string& what, const std::function<grpc::Status(grpc::ClientContext*)>& call) {
    return Retry(s, [&] {
      grpc::ClientContext ctx;
      service::PrepareContext(&ctx, options.channel);
      return service::FromGrpcStatus(call(&ctx), Name(s) + ": " + what);
    });
  }

  Status InitShard(int32_t s) {
    proto::InitRequest req;
    *req.mutable_spec() = spec;
    req.set_worker_index(options.worker_index);
    proto::InitResponse resp;
    grpc::ClientContext ctx;
    service::PrepareContext(&ctx, options.channel);
    Status st = service::FromGrpcStatus(stubs[s]->Init(&ctx, req, &resp), Name(s) + ": Init");
    if (st.code() == StatusCode::kResourceExhausted)
      return ResourceExhaustedError(std::string(st.message()) + " (the Init message, which carries every dense "
                                    "parameter, is " + std::to_string(req.ByteSizeLong()) +
                                    " bytes: raise the server's --max-message-bytes)");
    CTRAIN_RETURN_IF_ERROR(st);
    if (resp.shard() != s || resp.num_shards() != static_cast<int32_t>(stubs.size()))
      return FailedPreconditionError(Name(s) + " is shard " + std::to_string(resp.shard()) + " of " +
                                     std::to_string(resp.num_shards()) + ": list the servers in shard order (--ps " +
                                     std::to_string(stubs.size()) + " addresses, shard 0 first)");
    if (part.has_value() && resp.partitioner() != part->name())
      return FailedPreconditionError(Name(s) + " uses --partitioner " + resp.partitioner() + ", shard 0 uses " +
                                     std::string(part->name()));
    if (s == 0) {
      restored_meta = resp.restored_meta_json();
      initial_step = resp.global_step();
    }
    NoteLife(s, resp.life(), resp.global_step(), /*pushed=*/false);
    saves[s] = resp.saves();
    limits[s] = resp.max_message_bytes() > 0 ? std::min(options.max_message_bytes, resp.max_message_bytes())
                                             : options.max_message_bytes;
    if (dense_bytes[s] + kChunkOverheadBytes > limits[s] || RowsPerChunk(limits[s], 1 + K, 0) < 1)
      return InvalidArgumentError(Name(s) + ": its dense parameters take " + std::to_string(dense_bytes[s]) +
                                  " bytes, more than fit (with 4096 bytes of framing) in one message of " +
                                  std::to_string(limits[s]) +
                                  " bytes (the smaller of --ps-max-message-bytes and the server's "
                                  "--max-message-bytes): raise both");
    if (!part.has_value()) {
      const nlohmann::json mj = nlohmann::json::parse(spec.model_json(), nullptr, false);
      CTRAIN_ASSIGN_OR_RETURN(train::Partitioner p,
                              train::Partitioner::Create(resp.partitioner(), mj.value("feature_size", int64_t{0}),
                                                         static_cast<int32_t>(stubs.size())));
      part = p;
    }
    return Status::OK();
  }

  // Runs fn(s) for every shard in `which` on its own thread; the first error (shard order) wins.
  Status ForShards(const std::vector<int32_t>& which, const std::function<Status(int32_t)>& fn) {
    if (which.size() == 1) return fn(which[0]);
    std::vector<Status> st(which.size());
    std::vector<std::thread> threads;
    for (size_t i = 1; i < which.size(); ++i) threads.emplace_back([&, i] { st[i] = fn(which[i]); });
    st[0] = fn(which[0]);
    for (auto& t : threads) t.join();
    for (const Status& x : st) CTRAIN_RETURN_IF_ERROR(x);
    return Status::OK();
  }
  std::vector<int32_t> AllShards() const {
    std::vector<int32_t> v(stubs.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
    return v;
  }
};

PsClient::PsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PsClient::~PsClient() = default;

StatusOr<std::unique_ptr<PsClient>> PsClient::Connect(const ClientOptions& options) {
  if (options.addresses.empty()) return InvalidArgumentError("--ps: give the parameter servers' HOST:PORT addresses");
  CTRAIN_RETURN_IF_ERROR(CheckMaxMessageBytes(options.max_message_bytes, "--ps-max-message-bytes"));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->options.channel.max_send_message_bytes = options.max_message_bytes;
  impl->options.channel.max_receive_message_bytes = options.max_message_bytes;
  for (const std::string& a : options.addresses) {
    CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(a, "--ps"));
    CTRAIN_ASSIGN_OR_RETURN(auto ch, service::MakeChannel(a, impl->options.channel));
    impl->stubs.push_back(proto::ParameterServer::NewStub(ch));
  }
  const size_t S = impl->stubs.size();
  impl->versions.assign(S, 0);
  impl->lives.assign(S, {});
  impl->saves.assign(S, 0);
  impl->limits.assign(S, options.max_message_bytes);
  impl->dense_bytes.assign(S, 0);
  impl->traffic.resize(S);
  impl->next_push_id = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ static_cast<uint64_t>(options.worker_index);
  impl->pull_req.resize(S), impl->pull_resp.resize(S), impl->push_req.resize(S), impl->push_resp.resize(S);
  impl->pos.resize(S);
  return std::unique_ptr<PsClient>(new PsClient(std::move(impl)));
}

Status PsClient::Init(const proto::ModelSpec& spec) {
  Impl& m = *impl_;
  m.spec = spec;
  const nlohmann::json mj = nlohmann::json::parse(spec.model_json(), nullptr, false);
  if (mj.is_discarded()) return InvalidArgumentError("Init: model JSON unreadable");
  m.K = mj.value("embedding_size", 0);
  m.dense_sizes.clear();
  for (const auto& d : spec.dense()) m.dense_sizes.push_back(static_cast<int64_t>(d.values().size() / 4));
  m.dense_of.assign(num_shards(), {});
  const std::vector<int32_t> place = PlaceDense(m.dense_sizes, num_shards());
  for (size_t i = 0; i < place.size(); ++i) m.dense_of[place[i]].push_back(static_cast<int32_t>(i));
  m.dense_bytes.assign(num_shards(), 0);
  for (int32_t s = 0; s < num_shards(); ++s)
    for (int32_t i : m.dense_of[s]) m.dense_bytes[s] += m.dense_sizes[i] * 4 + 16;
  {
    proto::InitRequest probe;
    *probe.mutable_spec() = spec;
    const int64_t bytes = static_cast<int64_t>(probe.ByteSizeLong()) + 64;
    if (bytes > m.options.max_message_bytes)
      return InvalidArgumentError("the Init message to the parameter servers, which carries every dense parameter, is " +
                                  std::to_string(bytes) + " bytes, over --ps-max-message-bytes " +
                                  std::to_string(m.options.max_message_bytes) +
                                  ": raise it, and the servers' --max-message-bytes");
  }
  // Shard 0 first (it decides the partitioner the others must share), then the rest.
  for (int32_t s = 0; s < num_shards(); ++s)
    CTRAIN_RETURN_IF_ERROR(m.Retry(s, [&] { return m.InitShard(s); }));
  m.initialized = true;
  return Status::OK();
}

const train::Partitioner& PsClient::partitioner() const { return *impl_->part; }
const std::string& PsClient::restored_meta() const { return impl_->restored_meta; }
int64_t PsClient::initial_global_step() const { return impl_->initial_step; }
std::vector<int32_t> PsClient::ShardsThatCannotSave() const {
  std::vector<int32_t> out;
  for (size_t s = 0; s < impl_->saves.size(); ++s)
    if (!impl_->saves[s]) out.push_back(static_cast<int32_t>(s));
  return out;
}
Status PsClient::CheckDenseFits(int32_t slots, const std::string& option) const {
  const Impl& m = *impl_;
  for (size_t s = 0; s < m.limits.size(); ++s) {
    const int64_t need = m.dense_bytes[s] * (1 + slots) + kChunkOverheadBytes + RowBytes((1 + m.K) * (1 + slots));
    if (need > m.limits[s])
      return InvalidArgumentError(option + ": " + m.Name(static_cast<int32_t>(s)) +
                                  " sends its dense parameters with their " + std::to_string(slots) +
                                  " optimizer slot(s) in one message of " + std::to_string(need) +
                                  " bytes (with 4096 bytes of framing), over the message size limit " +
                                  std::to_string(m.limits[s]) +
                                  ": raise --ps-max-message-bytes and the servers' --max-message-bytes to at least " +
                                  std::to_string(need));
  }
  return Status::OK();
}
int64_t PsClient::last_version(int32_t shard) const { return impl_->versions.at(shard); }
int32_t PsClient::num_shards() const { return static_cast<int32_t>(impl_->stubs.size()); }
const std::string& PsClient::address(int32_t shard) const { return impl_->options.addresses.at(shard); }
const ClientStats& PsClient::stats() const { return impl_->stats; }
void PsClient::ResetStats() { impl_->stats = ClientStats(); }
void PsClient::set_stats(const ClientStats& stats) { impl_->stats = stats; }

// Splits ids by shard into m.pos (positions in the caller's array). Errors: an id out of range.
static Status SplitByShard(PsClient::Impl& m, std::span<const int64_t> ids) {
  for (auto& p : m.pos) p.clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= m.part->rows()) return train::IdRangeError(id, m.part->rows());
    m.pos[m.part->ShardOf(id)].push_back(static_cast<int64_t>(i));
  }
  return Status::OK();
}

// Adds the shards' traffic of one call to the stats: the slowest shard's encoding counts as encoding, the rest of
// the wall time `wall` as the calls'.
static void AddTraffic(PsClient::Impl& m, double wall) {
  double enc = 0;
  for (PsClient::Impl::Traffic& t : m.traffic) {
    m.stats.bytes_sent += t.sent;
    m.stats.bytes_received += t.received;
    m.stats.extra_chunks += t.extra_chunks;
    m.stats.resent_pushes += t.resent;
    enc = std::max(enc, t.encode_seconds);
    t = PsClient::Impl::Traffic();
  }
  m.stats.encode_seconds += enc;
  m.stats.rpc_seconds += std::max(0.0, wall - enc);
}

Status PsClient::Pull(std::span<const int64_t> ids, float* w_rows, float* v_rows,
                      std::vector<std::vector<float>>* dense, PulledSlots* slots) {
  Impl& m = *impl_;
  if (!m.initialized) return FailedPreconditionError("PsClient::Pull before Init");
  const int32_t S = num_shards();
  const int32_t K = m.K;
  auto t0 = Clock::now();
  CTRAIN_RETURN_IF_ERROR(SplitByShard(m, ids));
  if (dense != nullptr) {
    dense->resize(m.dense_sizes.size());
    for (size_t i = 0; i < m.dense_sizes.size(); ++i) (*dense)[i].resize(m.dense_sizes[i]);
  }
  const int64_t nslots = slots != nullptr ? static_cast<int64_t>(slots->w.size()) : 0;
  if (slots != nullptr) {
    if (slots->v.size() != slots->w.size()) return InvalidArgumentError("Pull: as many V slots as w slots");
    if (dense != nullptr) {
      slots->dense.assign(m.dense_sizes.size(), std::vector<std::vector<float>>(nslots));
      for (size_t i = 0; i < m.dense_sizes.size(); ++i)
        for (auto& v : slots->dense[i]) v.resize(m.dense_sizes[i]);
    }
  }
  m.stats.encode_seconds += SecondsSince(t0);
  t0 = Clock::now();
  // Per shard, on its own thread: its chunks one after the other, each scattered into the caller's arrays at
  // the shard's own positions (disjoint from the other shards').
  CTRAIN_RETURN_IF_ERROR(m.ForShards(m.AllShards(), [&](int32_t s) -> Status {
    Impl::Traffic& tr = m.traffic[s];
    const std::vector<int64_t>& pos = m.pos[s];
    const bool with_dense = dense != nullptr && !m.dense_of[s].empty();
    const std::vector<int64_t> bounds = ChunkBounds(static_cast<int64_t>(pos.size()), m.limits[s],
                                                    (1 + K) * (1 + nslots),
                                                    with_dense ? m.dense_bytes[s] * (1 + nslots) : 0);
    int64_t version = INT64_MAX;
    for (size_t c = 0; c + 1 < bounds.size(); ++c) {
      auto te = Clock::now();
      proto::PullRequest& req = m.pull_req[s];
      proto::PullResponse& r = m.pull_resp[s];
      req.Clear();
      for (int64_t i = bounds[c]; i < bounds[c + 1]; ++i) req.add_ids(ids[pos[i]]);
      req.set_dense(with_dense && c == 0);
      req.set_slots(slots != nullptr);
      tr.sent += static_cast<int64_t>(req.ByteSizeLong());
      tr.encode_seconds += SecondsSince(te);
      CTRAIN_RETURN_IF_ERROR(m.Call(s, "Pull", [&](grpc::ClientContext* ctx) {
        r.Clear();
        return m.stubs[s]->Pull(ctx, req, &r);
      }));
      te = Clock::now();
      tr.received += static_cast<int64_t>(r.ByteSizeLong());
      const size_t n = static_cast<size_t>(bounds[c + 1] - bounds[c]);
      if (r.w().size() != n * 4 || r.v().size() != n * K * 4)
        return DataLossError(m.Name(s) + ": Pull answered " + std::to_string(r.w().size() + r.v().size()) +
                             " bytes for " + std::to_string(n) + " rows");
      const float* w = reinterpret_cast<const float*>(r.w().data());
      const float* v = reinterpret_cast<const float*>(r.v().data());
      const int64_t* p = pos.data() + bounds[c];
      for (size_t i = 0; i < n; ++i) {
        if (w_rows != nullptr) w_rows[p[i]] = w[i];
        if (v_rows != nullptr) std::memcpy(v_rows + p[i] * K, v + i * K, K * sizeof(float));
      }
      if (slots != nullptr) {
        if (r.w_slots_size() != nslots || r.v_slots_size() != nslots)
          return DataLossError(m.Name(s) + ": Pull answered " + std::to_string(r.w_slots_size()) +
                               " optimizer slots, want " + std::to_string(nslots));
        for (int64_t k = 0; k < nslots; ++k) {
          const std::string& ws = r.w_slots(static_cast<int>(k));
          const std::string& vs = r.v_slots(static_cast<int>(k));
          if (ws.size() != n * 4 || vs.size() != n * K * 4)
            return DataLossError(m.Name(s) + ": Pull answered slot " + std::to_string(k) + " of the wrong size");
          const float* wd = reinterpret_cast<const float*>(ws.data());
          const float* vd = reinterpret_cast<const float*>(vs.data());
          for (size_t i = 0; i < n; ++i) {
            slots->w[k][p[i]] = wd[i];
            std::memcpy(slots->v[k] + p[i] * K, vd + i * K, K * sizeof(float));
          }
        }
      }
      if (req.dense()) {
        if (r.dense_size() != static_cast<int>(m.dense_of[s].size()))
          return DataLossError(m.Name(s) + ": Pull answered " + std::to_string(r.dense_size()) +
                               " dense parameters, want " + std::to_string(m.dense_of[s].size()));
        for (size_t j = 0; j < m.dense_of[s].size(); ++j) {
          const int32_t i = m.dense_of[s][j];
          const std::string& b = r.dense(static_cast<int>(j));
          if (static_cast<int64_t>(b.size()) != m.dense_sizes[i] * 4)
            return DataLossError(m.Name(s) + ": dense parameter " + std::to_string(i) + " has the wrong size");
          std::memcpy((*dense)[i].data(), b.data(), b.size());
        }
        if (slots != nullptr) {  // per parameter of this server, per slot
          if (r.dense_slots_size() != static_cast<int>(m.dense_of[s].size() * nslots))
            return DataLossError(m.Name(s) + ": Pull answered " + std::to_string(r.dense_slots_size()) +
                                 " dense slots, want " + std::to_string(m.dense_of[s].size() * nslots));
          for (size_t j = 0; j < m.dense_of[s].size(); ++j)
            for (int64_t k = 0; k < nslots; ++k) {
              const int32_t i = m.dense_of[s][j];
              const std::string& b = r.dense_slots(static_cast<int>(j * nslots + k));
              if (static_cast<int64_t>(b.size()) != m.dense_sizes[i] * 4)
                return DataLossError(m.Name(s) + ": a slot of dense parameter " + std::to_string(i) +
                                     " has the wrong size");
              std::memcpy(slots->dense[i][k].data(), b.data(), b.size());
            }
        }
      }
      version = std::min(version, r.version());  // the oldest chunk's: what staleness must count from
      m.NoteLife(s, r.life(), r.version(), /*pushed=*/false);
      tr.encode_seconds += SecondsSince(te);
    }
    m.versions[s] = version;
    tr.extra_chunks += static_cast<int64_t>(bounds.size()) - 2;
    return Status::OK();
  }));
  const double wall = SecondsSince(t0);
  // The protobuf cost of the last chunk of each shard, scaled to every call.
  if (m.stats.pulls / S % kProtobufSampleEvery == 0)
    for (int32_t s = 0; s < S; ++s)
      m.stats.protobuf_seconds += kProtobufSampleEvery * ProtobufSeconds(m.pull_req[s], m.pull_resp[s]);
  m.stats.pulls += S;
  AddTraffic(m, wall);
  return Status::OK();
}

Status PsClient::PullState(std::vector<proto::DenseTensor>* state) {
  Impl& m = *impl_;
  if (!m.initialized) return FailedPreconditionError("PsClient::PullState before Init");
  proto::PullRequest req;
  req.set_state(true);
  proto::PullResponse r;
  CTRAIN_RETURN_IF_ERROR(m.Call(0, "Pull", [&](grpc::ClientContext* ctx) { return m.stubs[0]->Pull(ctx, req, &r); }));
  state->assign(r.state().begin(), r.state().end());
  return Status::OK();
}

Status PsClient::Push(std::span<const int64_t> ids, const float* w_grad, const float* v_grad,
                      const std::vector<const float*>* dense, float learning_rate, int64_t examples,
                      const DenseState* state) {
  Impl& m = *impl_;
  if (!m.initialized) return FailedPreconditionError("PsClient::Push before Init");
  const int32_t S = num_shards();
  const int32_t K = m.K;
  auto t0 = Clock::now();
  const bool with_dense = dense != nullptr && !dense->empty();
  const size_t D = m.dense_sizes.size();
  if (with_dense && dense->size() != D)
    return InvalidArgumentError("Push: " + std::to_string(dense->size()) + " dense gradients for " +
                                std::to_string(D) + " dense parameters");
  const bool dense_only = state != nullptr && state->dense_only;
  int64_t state_tensors = 0;  // dense-sized tensors of the state per parameter (message size)
  if (state != nullptr) {
    if ((!state->delta.empty() && state->delta.size() != D) || (!state->values.empty() && state->values.size() != D) ||
        (!state->slots.empty() && state->slots.size() != D))
      return InvalidArgumentError("Push: dense state for another number of dense parameters than " +
                                  std::to_string(D));
    state_tensors = (state->delta.empty() ? 0 : 1) + (state->values.empty() ? 0 : 1) +
                    (state->slots.empty() ? 0 : static_cast<int64_t>(state->slots[0].size()));
    if (dense_only && !ids.empty()) return InvalidArgumentError("Push: a dense-only push carries no ids");
  }
  CTRAIN_RETURN_IF_ERROR(SplitByShard(m, ids));
  const uint64_t push_id = m.next_push_id++;
  m.stats.encode_seconds += SecondsSince(t0);
  t0 = Clock::now();
  // A shard that restarted between chunks asks for the push again (resend): at most this many times.
  constexpr int kMaxSends = 4;
  CTRAIN_RETURN_IF_ERROR(m.ForShards(m.AllShards(), [&](int32_t s) -> Status {
    Impl::Traffic& tr = m.traffic[s];
    const std::vector<int64_t>& pos = m.pos[s];
    const bool shard_dense = with_dense && !m.dense_of[s].empty();
    const bool shard_state = state_tensors > 0 && !m.dense_of[s].empty();
    if (dense_only && !shard_state) return Status::OK();  // nothing for this server
    const std::vector<int64_t> bounds =
        ChunkBounds(static_cast<int64_t>(pos.size()), m.limits[s], 1 + K,
                    (shard_dense ? m.dense_bytes[s] : 0) + (shard_state ? m.dense_bytes[s] * state_tensors : 0));
    const int32_t chunks = static_cast<int32_t>(bounds.size()) - 1;
    proto::PushRequest& req = m.push_req[s];
    proto::PushResponse& r = m.push_resp[s];
    for (int send = 0;; ++send) {
      if (send == kMaxSends)
        return AbortedError(m.Name(s) + ": Push: the shard asked for the push again " + std::to_string(kMaxSends) +
                            " times (it restarted between its chunks each time)");
      bool resend = false;
      for (int32_t c = 0; c < chunks && !resend; ++c) {
        auto te = Clock::now();
        req.Clear();
        req.set_worker_index(m.options.worker_index);
        req.set_learning_rate(learning_rate);
        req.set_examples(examples);
        req.set_pulled_version(m.versions[s]);
        if (chunks > 1) {
          req.set_push_id(push_id);
          req.set_chunk(c);
          req.set_num_chunks(chunks);
        }
        const int64_t b = bounds[c], n = bounds[c + 1] - b;
        const int64_t* p = pos.data() + b;
        for (int64_t i = 0; i < n; ++i) req.add_ids(ids[p[i]]);
        if (w_grad != nullptr && n > 0) {
          std::string* out = req.mutable_w_grad();
          out->resize(n * 4);
          float* d = reinterpret_cast<float*>(out->data());
          for (int64_t i = 0; i < n; ++i) d[i] = w_grad[p[i]];
        }
        if (v_grad != nullptr && n > 0) {
          std::string* out = req.mutable_v_grad();
          out->resize(n * K * 4);
          float* d = reinterpret_cast<float*>(out->data());
          for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * K, v_grad + p[i] * K, K * sizeof(float));
        }
        if (shard_dense && c == 0)
          for (int32_t i : m.dense_of[s]) PutFloats((*dense)[i], m.dense_sizes[i], req.add_dense_grad());
        if (shard_state && c == 0) {
          req.set_dense_only(dense_only);
          for (int32_t i : m.dense_of[s]) {
            if (!state->delta.empty()) PutFloats(state->delta[i], m.dense_sizes[i], req.add_dense_delta());
            if (!state->values.empty()) PutFloats(state->values[i], m.dense_sizes[i], req.add_dense_value());
            if (!state->slots.empty())
              for (const float* slot : state->slots[i]) PutFloats(slot, m.dense_sizes[i], req.add_dense_slot());
          }
        }
        tr.sent += static_cast<int64_t>(req.ByteSizeLong());
        tr.encode_seconds += SecondsSince(te);
        CTRAIN_RETURN_IF_ERROR(m.Call(s, "Push", [&](grpc::ClientContext* ctx) {
          r.Clear();
          return m.stubs[s]->Push(ctx, req, &r);
        }));
        tr.received += static_cast<int64_t>(r.ByteSizeLong());
        if (c > 0) ++tr.extra_chunks;
        resend = r.resend();
        if (resend) {
          ++tr.resent;
          m.Log(m.Name(s) + " lost the first " + std::to_string(c) + " chunk(s) of a push of " +
                std::to_string(chunks) + " (it restarted between them): sending the push again");
        }
        // The chunks before the last apply nothing; the last answers for the whole push.
        m.NoteLife(s, r.life(), r.global_step(),
                   /*pushed=*/!dense_only && !resend && c + 1 == chunks && !r.dropped_stale());
      }
      if (!resend) break;
    }
    return Status::OK();
  }));
  const double wall = SecondsSince(t0);
  if (dense_only) {  // not a training step
    ++m.stats.dense_syncs;
    AddTraffic(m, wall);
    return Status::OK();
  }
  if (m.stats.pushes / S % kProtobufSampleEvery == 0)
    for (int32_t s = 0; s < S; ++s)
      m.stats.protobuf_seconds += kProtobufSampleEvery * ProtobufSeconds(m.push_req[s], m.push_resp[s]);
  m.stats.pushes += S;
  for (int32_t s = 0; s < S; ++s)
    if (m.push_resp[s].dropped_stale()) ++m.stats.dropped_stale;
  AddTraffic(m, wall);
  return Status::OK();
}

Status PsClient::Done() {
  Impl& m = *impl_;
  return m.ForShards(m.AllShards(), [&](int32_t s) {
    proto::DoneRequest req;
    req.set_worker_index(m.options.worker_index);
    proto::DoneResponse resp;
    return m.Call(s, "Done", [&](grpc::ClientContext* ctx) { return m.stubs[s]->Done(ctx, req, &resp); });
  });
}

Status PsClient::Save(const nlohmann::json& trainer_meta, const std::vector<proto::DenseTensor>& state,
                      std::vector<std::string>* paths, int64_t* global_step) {
  Impl& m = *impl_;
  const int32_t S = num_shards();
  std::vector<proto::SaveResponse> resp(S);
  CTRAIN_RETURN_IF_ERROR(m.ForShards(m.AllShards(), [&](int32_t s) {
    proto::SaveRequest req;
    req.set_meta_json(trainer_meta.dump());
    if (s == 0)
      for (const auto& t : state) *req.add_state() = t;
    return m.Call(s, "Save", [&](grpc::ClientContext* ctx) { return m.stubs[s]->Save(ctx, req, &resp[s]); });
  }));
  paths->clear();
  for (int32_t s = 0; s < S; ++s) paths->push_back(resp[s].path());
  *global_step = resp[0].global_step();
  return Status::OK();
}

// ---- RemoteParameterTable ----

RemoteParameterTable::RemoteParameterTable(PsClient* client, int64_t rows, int32_t K, float learning_rate)
    : client_(client), rows_(rows), K_(K), lr_(learning_rate) {}

Status RemoteParameterTable::Pull(std::span<const int64_t> ids, float* rows) {
  // The servers take unique ids: pull those once, then copy to every position.
  unique_.assign(ids.begin(), ids.end());
  std::sort(unique_.begin(), unique_.end());
  unique_.erase(std::unique(unique_.begin(), unique_.end()), unique_.end());
  w_.resize(unique_.size());
  v_.resize(unique_.size() * K_);
  CTRAIN_RETURN_IF_ERROR(client_->Pull(unique_, w_.data(), v_.data(), nullptr));
  const int32_t D = 1 + K_;
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t u = std::lower_bound(unique_.begin(), unique_.end(), ids[i]) - unique_.begin();
    rows[i * D] = w_[u];
    std::memcpy(rows + i * D + 1, &v_[u * K_], K_ * sizeof(float));
  }
  return Status::OK();
}

Status RemoteParameterTable::Push(const train::SparseRows& grad, int64_t step) {
  if (step < 1) return InvalidArgumentError("remote parameter table: step " + std::to_string(step) + " must be >= 1");
  if (grad.dim != 1 + K_)
    return InvalidArgumentError("remote parameter table: gradient dim " + std::to_string(grad.dim) + " != " +
                                std::to_string(1 + K_) + " (w and V rows together)");
  const size_t n = grad.ids.size();
  for (size_t i = 1; i < n; ++i)
    if (grad.ids[i] <= grad.ids[i - 1])
      return InvalidArgumentError("remote parameter table: gradient ids not strictly increasing at index " +
                                  std::to_string(i));
  if (n > 0 && grad.grad == nullptr) return InvalidArgumentError("remote parameter table: null gradient");
  w_.resize(n);
  v_.resize(n * K_);
  for (size_t i = 0; i < n; ++i) {
    w_[i] = grad.grad[i * (1 + K_)];
    std::memcpy(&v_[i * K_], grad.grad + i * (1 + K_) + 1, K_ * sizeof(float));
  }
  return client_->Push(grad.ids, w_.data(), v_.data(), nullptr, lr_, 1);
}

}  // namespace ctrain::ps
