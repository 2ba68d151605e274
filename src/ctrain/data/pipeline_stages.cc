#include "ctrain/data/pipeline_stages.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "ctrain/data/bounded_queue.h"
#include "ctrain/io/feature_hash.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {

void PipelineCounters::Fill(PipelineStats* s) const {
  auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s->records_read = r(records_read);
  s->bytes_read = r(bytes_read);
  s->records_sharded_out = r(sharded_out);
  s->input_bytes_read = r(input_bytes);
  s->record_index_bytes_read = r(index_bytes);
  s->blank_lines = r(blank_lines);
  s->comment_lines = r(comment_lines);
  s->header_lines = r(header_lines);
  s->unterminated_last_lines = r(unterminated_last_lines);
  s->criteo_padded_rows = r(criteo_padded_rows);
  s->oov_ids = r(oov_ids);
  s->corrupt_records = r(corrupt_records);
  s->dropped_remainder_records = r(dropped_remainder);
  s->epochs_completed = r(epochs_completed);
  s->cache_records = r(cache_records);
  s->cache_bytes = r(cache_bytes);
  s->shuffle_buffer_max = r(shuffle_max);
  std::lock_guard<std::mutex> lock(inputs_mu);
  s->inputs.clear();
  for (const auto& [file, in] : inputs) s->inputs.push_back(in);
}

namespace {

// Counter-based generator (SplitMix64) with Lemire's unbiased-enough bounded draw.
struct Rng {
  uint64_t s;
  uint64_t Next() { return io::Mix64(s += 0x9E3779B97F4A7C15ull); }
  uint64_t Uniform(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64); }
};

uint64_t PassSeed(uint64_t seed, bool reshuffle, int64_t pass) {
  return io::Mix64(seed ^ (reshuffle ? io::Mix64(static_cast<uint64_t>(pass) + 1) : 0));
}

void AtomicMax(std::atomic<uint64_t>* a, uint64_t v) {
  uint64_t cur = a->load(std::memory_order_relaxed);
  while (v > cur && !a->compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

constexpr uint64_t kCacheRecordOverhead = 32;

// ------------------------------------------------------------------ cache
class MemoryCacheStage final : public RecordStage {
 public:
  MemoryCacheStage(RecordStage* up, uint64_t max_bytes, PipelineCounters* c) : up_(up), max_(max_bytes), c_(c) {}
  Status Start(int64_t pass) override {
    if (!started_) {
      started_ = true;
      return up_->Start(pass);
    }
    if (!complete_)
      return FailedPreconditionError("cache: pass " + std::to_string(pass) +
                                     " started before the first pass completed");
    replay_ = 0;
    return Status::OK();
  }
  StatusOr<bool> Next(RawRecord* out) override {
    if (complete_) {
      if (replay_ >= entries_.size()) return false;
      const Entry& e = entries_[replay_++];
      out->data = std::string_view(e.p, e.n);
      out->source = e.src;
      return true;
    }
    CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(out));
    if (!more) {
      complete_ = true;
      return false;
    }
    const uint64_t n = out->data.size();
    if (bytes_ + n + kCacheRecordOverhead > max_)
      return ResourceExhaustedError(
          "cache: the in-memory cache would exceed cache_max_bytes=" + std::to_string(max_) + " at record " +
          std::to_string(entries_.size() + 1) + " (" + std::to_string(bytes_) + " bytes cached so far, " +
          std::to_string(kCacheRecordOverhead) + " bytes overhead per record); raise cache_max_bytes, cache to a "
          "local file (cache=<path>), or remove the cache");
    if (used_ + n > cap_) {
      cap_ = std::max<uint64_t>(kBlockBytes, n);
      blocks_.emplace_back(new char[cap_]);
      used_ = 0;
    }
    char* p = blocks_.back().get() + used_;
    if (n > 0) std::memcpy(p, out->data.data(), n);
    used_ += n;
    entries_.push_back(Entry{p, n, out->source});
    bytes_ += n + kCacheRecordOverhead;
    c_->cache_records.store(entries_.size(), std::memory_order_relaxed);
    c_->cache_bytes.store(bytes_, std::memory_order_relaxed);
    out->data = std::string_view(p, n);
    return true;
  }

 private:
  static constexpr uint64_t kBlockBytes = 4 << 20;
  struct Entry {
    const char* p;
    uint64_t n;
    RecordSource src;
  };
  RecordStage* up_;
  uint64_t max_;
  PipelineCounters* c_;
  bool started_ = false, complete_ = false;
  std::vector<std::unique_ptr<char[]>> blocks_;
  uint64_t used_ = 0, cap_ = 0, bytes_ = 0;
  std::vector<Entry> entries_;
  size_t replay_ = 0;
};

// File cache entry: TFRecord payload = header (25 bytes) + record bytes.
constexpr size_t kCacheHeader = 4 + 4 + 1 + 8 + 8;

class FileCacheStage final : public RecordStage {
 public:
  FileCacheStage(RecordStage* up, std::string path, PipelineCounters* c) : up_(up), path_(std::move(path)), c_(c) {}
  Status Start(int64_t pass) override {
    if (!started_) {
      started_ = true;
      io::WriteOptions wo;
      wo.atomic = true;
      CTRAIN_ASSIGN_OR_RETURN(writer_, io::TFRecordWriter::Open(path_, io::Compression::kNone, wo));
      return up_->Start(pass);
    }
    if (!complete_)
      return FailedPreconditionError("cache " + path_ + ": pass " + std::to_string(pass) +
                                     " started before the first pass completed");
    io::TFRecordReaderOptions ro;
    ro.compression = io::Compression::kNone;
    CTRAIN_ASSIGN_OR_RETURN(reader_, io::TFRecordReader::Open(path_, ro));
    return Status::OK();
  }
  StatusOr<bool> Next(RawRecord* out) override {
    if (complete_) {
      std::string_view payload;
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader_->Next(&payload));
      if (!more) return false;
      if (payload.size() < kCacheHeader)
        return DataLossError(path_ + ": record " + std::to_string(reader_->record_index()) +
                             ": cache entry shorter than its 25-byte header");
      const char* p = payload.data();
      uint8_t fmt;
      std::memcpy(&out->source.file, p, 4);
      std::memcpy(&out->source.pass, p + 4, 4);
      std::memcpy(&fmt, p + 8, 1);
      std::memcpy(&out->source.index, p + 9, 8);
      std::memcpy(&out->source.offset, p + 17, 8);
      out->source.format = static_cast<RecordFormat>(fmt);
      out->data = payload.substr(kCacheHeader);
      return true;
    }
    CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(out));
    if (!more) {
      CTRAIN_RETURN_IF_ERROR(writer_->Close());
      writer_.reset();
      complete_ = true;
      return false;
    }
    buf_.resize(kCacheHeader);
    const uint8_t fmt = static_cast<uint8_t>(out->source.format);
    std::memcpy(buf_.data(), &out->source.file, 4);
    std::memcpy(buf_.data() + 4, &out->source.pass, 4);
    std::memcpy(buf_.data() + 8, &fmt, 1);
    std::memcpy(buf_.data() + 9, &out->source.index, 8);
    std::memcpy(buf_.data() + 17, &out->source.offset, 8);
    buf_.append(out->data);
    CTRAIN_RETURN_IF_ERROR(writer_->Write(buf_));
    ++records_;
    bytes_ += buf_.size() + io::kTFRecordHeaderBytes + io::kTFRecordFooterBytes;
    c_->cache_records.store(records_, std::memory_order_relaxed);
    c_->cache_bytes.store(bytes_, std::memory_order_relaxed);
    return true;
  }

 private:
  RecordStage* up_;
  std::string path_;
  PipelineCounters* c_;
  bool started_ = false, complete_ = false;
  std::unique_ptr<io::TFRecordWriter> writer_;
  std::unique_ptr<io::TFRecordReader> reader_;
  std::string buf_;
  uint64_t records_ = 0, bytes_ = 0;
};

// ---------------------------------------------------------------- shuffle
class RecordShuffleStage final : public RecordStage {
 public:
  RecordShuffleStage(RecordStage* up, int64_t cap, uint64_t seed, bool reshuffle, PipelineCounters* c)
      : up_(up), cap_(static_cast<size_t>(cap)), seed_(seed), reshuffle_(reshuffle), c_(c) {}
  Status Start(int64_t pass) override {
    rng_.s = PassSeed(seed_, reshuffle_, pass);
    size_ = 0;
    up_done_ = false;
    return up_->Start(pass);
  }
  StatusOr<bool> Next(RawRecord* out) override {
    RawRecord in;
    while (!up_done_ && size_ < cap_) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(&in));
      if (!more) {
        up_done_ = true;
        break;
      }
      if (size_ == slots_.size()) {
        slots_.emplace_back();
        srcs_.emplace_back();
      }
      slots_[size_].assign(in.data);
      srcs_[size_] = in.source;
      ++size_;
    }
    AtomicMax(&c_->shuffle_max, size_);
    if (size_ == 0) return false;
    const size_t j = static_cast<size_t>(rng_.Uniform(size_));
    std::swap(out_, slots_[j]);
    out->source = srcs_[j];
    bool refilled = false;
    if (!up_done_) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(&in));
      if (more) {
        slots_[j].assign(in.data);
        srcs_[j] = in.source;
        refilled = true;
      } else {
        up_done_ = true;
      }
    }
    if (!refilled) {
      std::swap(slots_[j], slots_[size_ - 1]);
      srcs_[j] = srcs_[size_ - 1];
      --size_;
    }
    out->data = out_;
    return true;
  }

 private:
  RecordStage* up_;
  size_t cap_;
  uint64_t seed_;
  bool reshuffle_;
  PipelineCounters* c_;
  Rng rng_{0};
  std::vector<std::string> slots_;
  std::vector<RecordSource> srcs_;
  size_t size_ = 0;
  bool up_done_ = false;
  std::string out_;
};

class BatchShuffleStage final : public RawBatchStage {
 public:
  BatchShuffleStage(RawBatchStage* up, int64_t cap, uint64_t seed, bool reshuffle, PipelineCounters* c)
      : up_(up), cap_(static_cast<size_t>(cap)), seed_(seed), reshuffle_(reshuffle), c_(c) {}
  Status Start(int64_t pass) override {
    rng_.s = PassSeed(seed_, reshuffle_, pass);
    size_ = 0;
    up_done_ = false;
    return up_->Start(pass);
  }
  StatusOr<bool> Next(RawBatch* out) override {
    while (!up_done_ && size_ < cap_) {
      if (size_ == slots_.size()) slots_.emplace_back();
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(&slots_[size_]));
      if (!more) {
        up_done_ = true;
        break;
      }
      ++size_;
    }
    AtomicMax(&c_->shuffle_max, size_);
    if (size_ == 0) return false;
    const size_t j = static_cast<size_t>(rng_.Uniform(size_));
    std::swap(*out, slots_[j]);
    bool refilled = false;
    if (!up_done_) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(&slots_[j]));
      if (more)
        refilled = true;
      else
        up_done_ = true;
    }
    if (!refilled) {
      std::swap(slots_[j], slots_[size_ - 1]);
      --size_;
    }
    return true;
  }

 private:
  RawBatchStage* up_;
  size_t cap_;
  uint64_t seed_;
  bool reshuffle_;
  PipelineCounters* c_;
  Rng rng_{0};
  std::vector<RawBatch> slots_;
  size_t size_ = 0;
  bool up_done_ = false;
};

// ---------------------------------------------------------------- batcher
class BatcherStage final : public RawBatchStage {
 public:
  BatcherStage(RecordStage* up, int64_t b, bool drop, PipelineCounters* c)
      : up_(up), b_(static_cast<size_t>(b)), drop_(drop), c_(c) {}
  Status Start(int64_t pass) override { return up_->Start(pass); }
  StatusOr<bool> Next(RawBatch* out) override {
    out->Clear();
    RawRecord r;
    while (out->size() < b_) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(&r));
      if (!more) break;
      out->Append(r.data, r.source);
    }
    if (out->empty()) return false;
    if (out->size() < b_ && drop_) {
      c_->dropped_remainder.fetch_add(out->size(), std::memory_order_relaxed);
      out->Clear();
      return false;
    }
    return true;
  }

 private:
  RecordStage* up_;
  size_t b_;
  bool drop_;
  PipelineCounters* c_;
};

// ------------------------------------------------------------------ parse
class ParseStageImpl final : public BatchStage {
 public:
  ParseStageImpl(RawBatchStage* up, std::vector<BatchParser> parsers)
      : up_(up), parsers_(std::move(parsers)), window_(static_cast<int64_t>(parsers_.size())) {
    for (size_t i = 0; i < parsers_.size(); ++i) threads_.emplace_back([this, i] { Work(&parsers_[i]); });
  }
  ~ParseStageImpl() override {
    Cancel();
    for (auto& t : threads_) t.join();
  }
  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_work_.notify_all();
    cv_out_.notify_all();
  }
  Status Start(int64_t pass) override {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    restart_pending_ = true;
    restart_pass_ = pass;
    ended_ = false;
    end_seq_ = -1;
    cv_work_.notify_all();
    return Status::OK();
  }
  StatusOr<bool> Next(Batch* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_out_.wait(lock, [&] { return stop_ || done_.count(emit_seq_) > 0 || (ended_ && emit_seq_ >= end_seq_); });
    fill_sum_ += done_.size();
    ++samples_;
    if (stop_) return CancelledError("input pipeline cancelled");
    auto it = done_.find(emit_seq_);
    if (it == done_.end()) return false;
    Slot slot = std::move(it->second);
    done_.erase(it);
    ++emit_seq_;
    cv_work_.notify_all();
    if (!slot.status.ok()) return slot.status;
    std::swap(*out, slot.batch);
    if (!slot.batch.labels.empty() && static_cast<int64_t>(spare_.size()) < window_)
      spare_.push_back(std::move(slot.batch));
    return true;
  }
  void Recycle(Batch&& b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int64_t>(spare_.size()) < window_) spare_.push_back(std::move(b));
  }
  void AddStats(PipelineStats* s) const override {
    std::lock_guard<std::mutex> lock(mu_);
    QueueStats q;
    q.name = "parse";
    q.capacity = static_cast<uint64_t>(window_);
    q.average_fill = samples_ == 0 ? 0.0 : static_cast<double>(fill_sum_) / samples_ / window_;
    q.max_items = max_done_;
    q.pushes = pushes_;
    s->queues.push_back(q);
  }

 private:
  struct Slot {
    Batch batch;
    Status status;
  };

  void Work(BatchParser* parser) {
    RawBatch raw;
    Batch out;
    while (true) {
      int64_t seq = 0;
      {
        std::unique_lock<std::mutex> pull(pull_mu_);  // one worker pulls upstream at a time
        bool restart = false;
        int64_t pass = 0;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_work_.wait(lock, [&] {
            return stop_ || restart_pending_ || (started_ && !ended_ && next_seq_ < emit_seq_ + window_);
          });
          if (stop_) return;
          restart = restart_pending_;
          pass = restart_pass_;
          restart_pending_ = false;
          seq = next_seq_++;
        }
        Status st;
        bool more = false;
        if (restart) st = up_->Start(pass);
        if (st.ok()) {
          StatusOr<bool> r = up_->Next(&raw);
          if (!r.ok())
            st = r.status();
          else
            more = *r;
        }
        if (!st.ok() || !more) {
          std::lock_guard<std::mutex> lock(mu_);
          ended_ = true;
          if (!st.ok()) {
            done_.emplace(seq, Slot{Batch(), st});
            end_seq_ = seq + 1;
          } else {
            next_seq_ = seq;  // seq was not used
            end_seq_ = seq;
          }
          cv_out_.notify_all();
          continue;
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!spare_.empty()) {
          out = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      Status ps = parser->Parse(raw, &out);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_.emplace(seq, Slot{std::move(out), std::move(ps)});
        max_done_ = std::max<uint64_t>(max_done_, done_.size());
        ++pushes_;
        out = Batch();
        cv_out_.notify_all();
      }
    }
  }

  RawBatchStage* up_;
  std::vector<BatchParser> parsers_;
  const int64_t window_;
  std::mutex pull_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_work_, cv_out_;
  bool stop_ = false, started_ = false, restart_pending_ = false, ended_ = false;  // GUARDED_BY(mu_)
  int64_t restart_pass_ = 0, next_seq_ = 0, emit_seq_ = 0, end_seq_ = -1;       // GUARDED_BY(mu_)
  std::map<int64_t, Slot> done_;                                                 // GUARDED_BY(mu_)
  std::vector<Batch> spare_;                                                     // GUARDED_BY(mu_)
  uint64_t fill_sum_ = 0, samples_ = 0, max_done_ = 0, pushes_ = 0;              // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

// --------------------------------------------------------------- prefetch
class PrefetchStage final : public BatchStage {
 public:
  PrefetchStage(BatchStage* up, int32_t n) : up_(up), q_("prefetch", static_cast<size_t>(n)) {}
  ~PrefetchStage() override {
    Cancel();
    if (thread_.joinable()) thread_.join();
  }
  void Cancel() override { q_.Close(/*discard=*/true); }
  Status Start(int64_t pass) override {
    if (thread_.joinable()) return FailedPreconditionError("prefetch: started twice");
    thread_ = std::thread([this, pass] { Run(pass); });
    return Status::OK();
  }
  StatusOr<bool> Next(Batch* out) override {
    if (!error_.ok()) return error_;
    if (ended_) return false;
    std::optional<Item> it = q_.Pop();
    if (!it) return CancelledError("input pipeline cancelled");
    if (!it->status.ok()) {
      error_ = it->status;
      return error_;
    }
    if (it->end) {
      ended_ = true;
      return false;
    }
    std::swap(*out, it->batch);
    return true;
  }
  void AddStats(PipelineStats* s) const override { s->queues.push_back(q_.stats()); }

 private:
  struct Item {
    Batch batch;
    Status status;
    bool end = false;
  };
  void Run(int64_t pass) {
    Status s = up_->Start(pass);
    if (!s.ok()) {
      q_.Push(Item{Batch(), s, false});
      return;
    }
    while (true) {
      Item it;
      StatusOr<bool> r = up_->Next(&it.batch);
      if (!r.ok()) {
        it.status = r.status();
        q_.Push(std::move(it));
        return;
      }
      if (!*r) {
        it.end = true;
        q_.Push(std::move(it));
        return;
      }
      const uint64_t bytes = it.batch.labels.size() * sizeof(float) + it.batch.ids.size() * sizeof(int64_t) +
                             it.batch.values.size() * sizeof(float);
      if (!q_.Push(std::move(it), bytes)) return;
    }
  }
  BatchStage* up_;
  BoundedQueue<Item> q_;
  std::thread thread_;
  Status error_;       // consumer thread only
  bool ended_ = false;  // consumer thread only
};

}  // namespace

std::unique_ptr<RecordStage> NewCacheStage(RecordStage* upstream, const std::string& cache, uint64_t max_bytes,
                                           PipelineCounters* counters) {
  if (cache == "memory") return std::make_unique<MemoryCacheStage>(upstream, max_bytes, counters);
  return std::make_unique<FileCacheStage>(upstream, cache, counters);
}

std::unique_ptr<RecordStage> NewRecordShuffleStage(RecordStage* upstream, int64_t buffer_size, uint64_t seed,
                                                   bool reshuffle, PipelineCounters* counters) {
  return std::make_unique<RecordShuffleStage>(upstream, buffer_size, seed, reshuffle, counters);
}

std::unique_ptr<RawBatchStage> NewBatchShuffleStage(RawBatchStage* upstream, int64_t buffer_size, uint64_t seed,
                                                    bool reshuffle, PipelineCounters* counters) {
  return std::make_unique<BatchShuffleStage>(upstream, buffer_size, seed, reshuffle, counters);
}

std::unique_ptr<RawBatchStage> NewBatcherStage(RecordStage* upstream, int64_t batch_size, bool drop_remainder,
                                               PipelineCounters* counters) {
  return std::make_unique<BatcherStage>(upstream, batch_size, drop_remainder, counters);
}

std::unique_ptr<BatchStage> NewParseStage(RawBatchStage* upstream, std::vector<BatchParser> parsers) {
  return std::make_unique<ParseStageImpl>(upstream, std::move(parsers));
}

void RecycleBatch(BatchStage* parse_stage, Batch&& batch) {
  if (auto* p = dynamic_cast<ParseStageImpl*>(parse_stage)) p->Recycle(std::move(batch));
}

std::unique_ptr<BatchStage> NewPrefetchStage(BatchStage* upstream, int32_t buffer_size) {
  return std::make_unique<PrefetchStage>(upstream, buffer_size);
}

}  // namespace ctrain::data
