#include "ctrain/data/interleave.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "ctrain/data/batch_parser.h"
#include "ctrain/data/bounded_queue.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/data/raw_record_reader.h"

namespace ctrain::data {

std::string InputName(const std::vector<std::string>& files, uint32_t file, uint32_t pass) {
  if (file >= files.size()) return "<input " + std::to_string(file) + ">";
  const std::string& f = files[file];
  if (f.starts_with(kPipeChannelPrefix)) return ChannelFifoPath(f, pass);
  return f == "-" ? "<stdin>" : f;
}

namespace {

struct Chunk {
  RawBatch records;
  Status status;
  bool end_of_pass = false;
};

class InterleaveSource final : public RecordStage {
 public:
  InterleaveSource(InterleaveOptions o, PipelineCounters* c) : o_(std::move(o)), c_(c) {
    const size_t n = o_.plan.files.size();
    const size_t r = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(1, o_.num_parallel_reads)), n));
    slots_.resize(r);
    for (size_t j = 0; j < n; ++j) slots_[j % r].files.push_back(o_.plan.files[j]);
    for (uint32_t f : o_.plan.files) has_streams_ = has_streams_ || IsStreamPath(o_.files[f]);
    const size_t qcap = static_cast<size_t>(std::max(1, o_.queue_chunks));
    if (o_.deterministic) {
      for (size_t s = 0; s < r; ++s)
        queues_.push_back(std::make_unique<BoundedQueue<Chunk>>("read[" + std::to_string(s) + "]", qcap));
    } else {
      queues_.push_back(std::make_unique<BoundedQueue<Chunk>>("read", qcap * r));
    }
    for (size_t s = 0; s < r; ++s) threads_.emplace_back([this, s] { ReadLoop(s); });
  }
  ~InterleaveSource() override {
    Cancel();
    for (auto& t : threads_) t.join();
  }
  void Cancel() override {
    cancel_.store(true);
    {
      std::lock_guard<std::mutex> lock(gate_mu_);
      gate_cv_.notify_all();
    }
    for (auto& q : queues_) q->Close(/*discard=*/true);
  }
  Status Start(int64_t pass) override {
    if (!error_.ok()) return error_;
    {
      std::lock_guard<std::mutex> lock(gate_mu_);
      requested_pass_ = pass;
      gate_cv_.notify_all();
    }
    active_.assign(slots_.size(), true);
    num_active_ = slots_.size();
    if (slots_[0].files.empty()) num_active_ = 0;  // no input at all
    markers_ = 0;
    cursor_ = 0;
    cur_.reset();
    pos_ = 0;
    return Status::OK();
  }
  StatusOr<bool> Next(RawRecord* out) override {
    if (!error_.ok()) return error_;
    while (!cur_ || pos_ >= cur_->records.size()) {
      cur_.reset();
      pos_ = 0;
      if (num_active_ == 0) return false;
      std::optional<Chunk> ch;
      size_t slot = 0;
      if (o_.deterministic) {
        while (!active_[cursor_]) cursor_ = (cursor_ + 1) % slots_.size();
        slot = cursor_;
        ch = queues_[slot]->Pop();
        cursor_ = (cursor_ + 1) % slots_.size();
      } else {
        ch = queues_[0]->Pop();
      }
      if (!ch) {
        error_ = CancelledError("input pipeline cancelled");
        return error_;
      }
      if (!ch->status.ok()) {
        error_ = ch->status;
        return error_;
      }
      if (ch->end_of_pass) {
        if (o_.deterministic) {
          active_[slot] = false;
          --num_active_;
        } else if (++markers_ == slots_.size()) {
          num_active_ = 0;
        }
        continue;
      }
      cur_ = std::move(ch);
    }
    out->data = cur_->records.record(pos_);
    out->source = cur_->records.sources[pos_];
    ++pos_;
    return true;
  }
  void AddStats(PipelineStats* s) const override {
    for (const auto& q : queues_) s->queues.push_back(q->stats());
  }

 private:
  struct Slot {
    std::vector<uint32_t> files;
  };

  BoundedQueue<Chunk>& QueueOf(size_t slot) { return *queues_[o_.deterministic ? slot : 0]; }

  // Waits until pass `pass` may be read. False when cancelled.
  bool WaitForPass(int64_t pass) {
    // Streams never run ahead: the next FIFO may appear only after this epoch is consumed
    // (its wait timeout must not start early), and a re-opened FIFO is read once per epoch.
    const int64_t lookahead = o_.deterministic && !has_streams_ ? 1 : 0;
    std::unique_lock<std::mutex> lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return cancel_.load() || pass <= requested_pass_ + lookahead; });
    return !cancel_.load();
  }

  void ReadLoop(size_t s) {
    BoundedQueue<Chunk>& q = QueueOf(s);
    for (int64_t pass = 0; o_.passes < 0 || pass < o_.passes; ++pass) {
      if (!WaitForPass(pass)) return;
      Chunk chunk;
      size_t probe_budget = pass == 0 ? kProbeRecords : 0;
      for (uint32_t f : slots_[s].files) {
        Status st = ReadFile(f, static_cast<uint32_t>(pass), &chunk, q, &probe_budget);
        if (!st.ok()) {
          if (cancel_.load()) return;
          q.Push(Chunk{RawBatch(), st, false});
          return;
        }
      }
      const uint64_t bytes = chunk.records.bytes();
      if (!chunk.records.empty() && !q.Push(std::move(chunk), bytes)) return;
      if (!q.Push(Chunk{RawBatch(), Status::OK(), true})) return;
    }
  }

  // The first kProbeRecords records a reader thread reads in pass 0 are parsed
  // in file order before any shuffle (ReadFile): a file whose lines are all
  // bad (wrong id base, field size or format) fails on its first bad line,
  // the same for every seed, streams included (they cannot be re-read later,
  // see Pipeline::Next). The budget is per thread, so many small files do not
  // get parsed twice.
  static constexpr size_t kProbeRecords = 256;

  Status ReadFile(uint32_t f, uint32_t pass, Chunk* chunk, BoundedQueue<Chunk>& q, size_t* probe_budget) {
    const std::string& spec = o_.files[f];
    std::string path = spec;
    if (spec.starts_with(kPipeChannelPrefix)) {
      path = ChannelFifoPath(spec, pass);
      CTRAIN_RETURN_IF_ERROR(WaitForPath(path, o_.pipe_timeout_ms, &cancel_));
    } else if (spec == "-" && pass > 0) {
      return FailedPreconditionError("<stdin>: cannot be read twice (pass " + std::to_string(pass) +
                                     "); cache it (cache=memory or a file) or use a pipe:<channel>");
    }
    const RawRecordReader::SplitRange range{o_.plan.spec.index, o_.plan.spec.num_shards};
    CTRAIN_ASSIGN_OR_RETURN(auto reader, RawRecordReader::Open(path, o_.reader_options, &cancel_,
                                                               o_.plan.level == ShardLevel::kByteRange ? &range : nullptr));
    const bool filter = !reader->ranged();  // a byte range holds only this shard's records
    std::string_view rec;
    uint64_t index = 0, offset = 0, n = 0, kept_bytes = 0;
    RecordSource src;
    src.file = f;
    src.pass = pass;
    src.format = reader->format();
    InputReadStats input_stats;  // the first pass: what was opened and how much it held
    if (pass == 0) {
      input_stats.file = f;
      input_stats.name = InputName(o_.files, f, pass);
      input_stats.format = std::string(RecordFormatName(reader->format()));
      input_stats.compression = std::string(io::CompressionName(reader->compression()));
      c_->NoteInput(input_stats);
    }
    Status st;
    RawBatch probe;
    bool probed = *probe_budget == 0;
    auto check_probe = [&]() -> Status {
      probed = true;
      if (probe.empty()) return Status::OK();
      const std::vector<std::string>& files = o_.files;
      SourceNameFn names = [&files](uint32_t file, uint32_t p) { return InputName(files, file, p); };
      CTRAIN_ASSIGN_OR_RETURN(BatchParser parser, BatchParser::Create(o_.reader_options, names));
      Batch scratch;
      Status ps = parser.Parse(probe, &scratch);
      probe = RawBatch();
      return ps;
    };
    while (true) {
      StatusOr<bool> r = reader->Next(&rec, &index, &offset);
      if (!r.ok()) {
        st = r.status();
        break;
      }
      if (!*r) break;
      if (filter && !o_.plan.Keeps(f, n++)) {
        c_->sharded_out.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      src.index = index;
      src.offset = offset;
      if (!probed) {
        probe.Append(rec, src);
        --*probe_budget;
        if (*probe_budget == 0) {
          st = check_probe();
          if (!st.ok()) break;
        }
      }
      chunk->records.Append(rec, src);
      kept_bytes += rec.size();
      if (chunk->records.size() >= static_cast<size_t>(o_.chunk_records) ||
          static_cast<int64_t>(chunk->records.arena.size()) >= o_.chunk_bytes) {
        const uint64_t bytes = chunk->records.bytes();
        if (!q.Push(std::move(*chunk), bytes)) return CancelledError("input pipeline cancelled");
        *chunk = Chunk();
      }
    }
    if (st.ok() && !probed) st = check_probe();
    const RawRecordReader::Counters rc = reader->counters();
    c_->records_read.fetch_add(rc.records, std::memory_order_relaxed);
    c_->bytes_read.fetch_add(rc.bytes, std::memory_order_relaxed);
    c_->blank_lines.fetch_add(rc.blank_lines, std::memory_order_relaxed);
    c_->comment_lines.fetch_add(rc.comment_lines, std::memory_order_relaxed);
    c_->header_lines.fetch_add(rc.header_lines, std::memory_order_relaxed);
    c_->unterminated_last_lines.fetch_add(rc.unterminated_last_lines, std::memory_order_relaxed);
    c_->corrupt_records.fetch_add(rc.corrupt_records, std::memory_order_relaxed);
    c_->input_bytes.fetch_add(rc.input_bytes, std::memory_order_relaxed);
    c_->index_bytes.fetch_add(rc.index_bytes, std::memory_order_relaxed);
    if (pass == 0) {
      input_stats.records = rc.records;
      input_stats.input_bytes = rc.input_bytes;
      input_stats.index_bytes = rc.index_bytes;
      input_stats.byte_range = reader->ranged();
      input_stats.finished = st.ok();
      c_->NoteInput(input_stats);
    }
    return st;
  }

  InterleaveOptions o_;
  PipelineCounters* c_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<BoundedQueue<Chunk>>> queues_;
  std::vector<std::thread> threads_;
  bool has_streams_ = false;
  std::atomic<bool> cancel_{false};
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int64_t requested_pass_ = -1;  // GUARDED_BY(gate_mu_)
  // Consumer side (the thread calling Start/Next).
  std::vector<bool> active_;
  size_t num_active_ = 0, markers_ = 0, cursor_ = 0;
  std::optional<Chunk> cur_;
  size_t pos_ = 0;
  Status error_;
};

}  // namespace

std::unique_ptr<RecordStage> NewInterleaveSource(InterleaveOptions options, PipelineCounters* counters) {
  return std::make_unique<InterleaveSource>(std::move(options), counters);
}

}  // namespace ctrain::data
