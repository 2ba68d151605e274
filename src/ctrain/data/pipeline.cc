#include "ctrain/base/clock.h"
#include "ctrain/data/pipeline.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "ctrain/base/log.h"
#include "ctrain/data/batch_parser.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/interleave.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/data/pipeline_stages.h"
#include "ctrain/data/raw_record_reader.h"

namespace ctrain::data {

namespace {

const std::vector<std::string_view> kStageNames = {"shard", "interleave", "cache",  "shuffle",
                                                   "batch", "parse",      "repeat", "prefetch"};

std::vector<std::string> SplitOrder(std::string_view order) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= order.size()) {
    size_t comma = order.find(',', pos);
    if (comma == std::string_view::npos) comma = order.size();
    std::string tok(order.substr(pos, comma - pos));
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (!tok.empty()) out.push_back(tok);
    pos = comma + 1;
  }
  return out;
}

int Pos(const std::vector<std::string>& order, std::string_view name) {
  auto it = std::find(order.begin(), order.end(), name);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

std::string Normalize(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (n.starts_with("_")) n.erase(0, 1);
  return n;
}

template <typename T>
Status ParseInt(std::string_view name, std::string_view v, T* out) {
  T x{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size())
    return InvalidArgumentError("pipeline option " + std::string(name) + ": expected an integer, got '" +
                                std::string(v) + "'");
  *out = x;
  return Status::OK();
}

Status ParseBool(std::string_view name, std::string_view v, bool* out) {
  std::string s = Normalize(v);
  if (s == "true" || s == "1" || s == "yes") {
    *out = true;
  } else if (s == "false" || s == "0" || s == "no") {
    *out = false;
  } else {
    return InvalidArgumentError("pipeline option " + std::string(name) + ": expected true or false, got '" +
                                std::string(v) + "'");
  }
  return Status::OK();
}

}  // namespace

Status SetPipelineOption(PipelineOptions* o, std::string_view name, std::string_view value) {
  const std::string n = Normalize(name);
  if (n == "num_parallel_reads") return ParseInt(n, value, &o->num_parallel_reads);
  if (n == "deterministic") return ParseBool(n, value, &o->deterministic);
  if (n == "num_parallel_calls") return ParseInt(n, value, &o->num_parallel_calls);
  if (n == "shuffle_buffer_size") return ParseInt(n, value, &o->shuffle_buffer_size);
  if (n == "shuffle_seed") return ParseInt(n, value, &o->shuffle_seed);
  if (n == "reshuffle_each_iteration") return ParseBool(n, value, &o->reshuffle_each_iteration);
  if (n == "batch_size") return ParseInt(n, value, &o->batch_size);
  if (n == "drop_remainder") return ParseBool(n, value, &o->drop_remainder);
  if (n == "prefetch_buffer_size") return ParseInt(n, value, &o->prefetch_buffer_size);
  if (n == "cache") {
    o->cache = std::string(value);
    return Status::OK();
  }
  if (n == "cache_max_bytes") return ParseInt(n, value, &o->cache_max_bytes);
  if (n == "num_shards") return ParseInt(n, value, &o->num_shards);
  if (n == "shard_index") return ParseInt(n, value, &o->shard_index);
  if (n == "count_shard_records") return ParseBool(n, value, &o->count_shard_records);
  if (n == "epochs") return ParseInt(n, value, &o->epochs);
  if (n == "order") {
    o->order = std::string(value);
    return Status::OK();
  }
  if (n == "pipe_timeout_ms") return ParseInt(n, value, &o->pipe_timeout_ms);
  std::string expected;
  for (const std::string& k : PipelineOptionNames()) expected += (expected.empty() ? "" : ", ") + k;
  return InvalidArgumentError("unknown pipeline option '" + std::string(name) + "' (expected " + expected + ")");
}

const std::vector<std::string>& PipelineOptionNames() {
  static const std::vector<std::string> kNames = {
      "num_parallel_reads", "deterministic", "num_parallel_calls", "shuffle_buffer_size", "shuffle_seed",
      "reshuffle_each_iteration", "batch_size", "drop_remainder", "prefetch_buffer_size", "cache",
      "cache_max_bytes", "num_shards", "shard_index", "count_shard_records", "epochs", "order", "pipe_timeout_ms"};
  return kNames;
}

Status ValidatePipelineOptions(const PipelineOptions& o) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("pipeline: " + what); };
  if (o.num_parallel_reads < 1) return bad("num_parallel_reads must be >= 1, got " + std::to_string(o.num_parallel_reads));
  if (o.num_parallel_calls < 1) return bad("num_parallel_calls must be >= 1, got " + std::to_string(o.num_parallel_calls));
  if (o.shuffle_buffer_size < 0) return bad("shuffle_buffer_size must be >= 0, got " + std::to_string(o.shuffle_buffer_size));
  if (o.batch_size < 1) return bad("batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.prefetch_buffer_size < 0) return bad("prefetch_buffer_size must be >= 0, got " + std::to_string(o.prefetch_buffer_size));
  if (o.epochs < -1 || o.epochs == 0) return bad("epochs must be >= 1 or -1 (forever), got " + std::to_string(o.epochs));
  if (o.read_chunk_records < 1 || o.read_chunk_bytes < 1 || o.queue_chunks < 1)
    return bad("read_chunk_records, read_chunk_bytes and queue_chunks must be >= 1");
  if (o.pipe_timeout_ms < 0) return bad("pipe_timeout_ms must be >= 0");
  if (!o.cache.empty() && o.cache != "memory" && o.cache.back() == '/')
    return bad("cache '" + o.cache + "' names a directory; give a file path");
  CTRAIN_RETURN_IF_ERROR(ValidateShardSpec(ShardSpec{o.num_shards, o.shard_index, 0}));

  const std::vector<std::string> order = SplitOrder(o.order);
  for (size_t i = 0; i < order.size(); ++i) {
    if (std::find(kStageNames.begin(), kStageNames.end(), order[i]) == kStageNames.end())
      return bad("unknown stage '" + order[i] +
                 "' in order (stages: shard, interleave, cache, shuffle, batch, parse, repeat, prefetch)");
    if (Pos(order, order[i]) != static_cast<int>(i)) return bad("stage '" + order[i] + "' appears twice in order");
  }
  const int shard = Pos(order, "shard"), interleave = Pos(order, "interleave"), cache = Pos(order, "cache"),
            shuffle = Pos(order, "shuffle"), batch = Pos(order, "batch"), parse = Pos(order, "parse"),
            repeat = Pos(order, "repeat"), prefetch = Pos(order, "prefetch");
  if (interleave < 0 || batch < 0 || parse < 0) return bad("order must contain interleave, batch and parse");
  if (interleave != (shard >= 0 ? 1 : 0) || (shard >= 0 && shard != 0))
    return bad("order must start with [shard,] interleave (files are sharded and read first)");
  if (parse < batch) return bad("parse must come after batch (it parses whole batches)");
  if (prefetch >= 0 && prefetch != static_cast<int>(order.size()) - 1) return bad("prefetch must be the last stage");
  if (cache >= 0 && cache > batch) return bad("cache must come before batch (it caches raw records)");
  if (shuffle >= 0 && shuffle > parse) return bad("shuffle must come before parse");
  if (!o.cache.empty() && cache < 0) return bad("cache='" + o.cache + "' but 'cache' is not in the order");
  if (o.shuffle_buffer_size > 0 && shuffle < 0)
    return bad("shuffle_buffer_size=" + std::to_string(o.shuffle_buffer_size) + " but 'shuffle' is not in the order");
  if (o.epochs != 1 && repeat < 0) return bad("epochs=" + std::to_string(o.epochs) + " but 'repeat' is not in the order");
  if (o.num_shards > 1 && shard < 0) return bad("num_shards>1 but 'shard' is not in the order");
  if (o.prefetch_buffer_size > 0 && prefetch < 0)
    return bad("prefetch_buffer_size>0 but 'prefetch' is not in the order");
  return Status::OK();
}

std::vector<std::string> PipelineOrderWarnings(const PipelineOptions& o) {
  std::vector<std::string> w;
  const std::vector<std::string> order = SplitOrder(o.order);
  const int cache = Pos(order, "cache"), shuffle = Pos(order, "shuffle"), batch = Pos(order, "batch"),
            repeat = Pos(order, "repeat");
  if (!o.cache.empty() && repeat >= 0 && cache > repeat && o.epochs != 1)
    w.push_back("cache after repeat caches every epoch again: memory grows each epoch (until cache_max_bytes="
                + std::to_string(o.cache_max_bytes) + " fails); put cache before repeat");
  if (o.shuffle_buffer_size == 1 && shuffle > batch)
    w.push_back("shuffle after batch with a buffer <= 1 shuffles nothing: batches come out in input order");
  else if (o.shuffle_buffer_size == 1)
    w.push_back("shuffle_buffer_size 1 shuffles nothing: records come out in input order; use a buffer of "
                "thousands of records (or 0 to disable shuffling)");
  else if (o.shuffle_buffer_size > 1 && shuffle > batch)
    w.push_back("shuffle after batch only reorders whole batches (the rows of a batch stay together); "
                "shuffle before batch to mix records");
  return w;
}

// ----------------------------------------------------------------- Impl
struct Pipeline::Impl {
  // The earliest (file order) bad record the parse threads reported.
  struct ParseErrors {
    std::mutex mu;
    bool any = false;
    RecordSource first;
    Status status;
  };
  ParseErrors parse_errors;
  ExampleReaderOptions reader_options;
  PipelineCounters counters;
  std::vector<std::unique_ptr<StageBase>> stages;  // creation (upstream-first) order
  BatchStage* top = nullptr;
  BatchStage* parse = nullptr;

  ~Impl() {
    for (auto& s : stages) s->Cancel();
    while (!stages.empty()) stages.pop_back();  // downstream first: its threads call upstream
  }
  template <typename S>
  S* Add(std::unique_ptr<S> s) {
    S* raw = s.get();
    stages.push_back(std::move(s));
    return raw;
  }
};

StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(const std::vector<std::string>& file_patterns,
                                                     const ExampleReaderOptions& reader_options,
                                                     const PipelineOptions& options) {
  CTRAIN_RETURN_IF_ERROR(ValidatePipelineOptions(options));
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->options_ = options;
  p->start_ = Clock::now();
  CTRAIN_ASSIGN_OR_RETURN(p->files_, ExpandFileList(file_patterns));
  const ShardSpec spec{options.num_shards, options.shard_index, 0, options.shard_byte_ranges};
  CTRAIN_ASSIGN_OR_RETURN(p->shard_plan_, PlanShards(p->files_, spec, reader_options, options.count_shard_records));
  p->warnings_ = PipelineOrderWarnings(options);
  for (const std::string& w : p->shard_plan_.warnings) p->warnings_.push_back(w);

  const std::vector<std::string> order = SplitOrder(options.order);
  const int cache_pos = Pos(order, "cache"), repeat_pos = Pos(order, "repeat");
  const bool cached = !options.cache.empty();
  // How many times the source is read: a cache before repeat replays the later passes.
  const int64_t passes = (cached && repeat_pos >= 0 && cache_pos < repeat_pos) ? 1 : options.epochs;
  if (passes != 1) {
    for (uint32_t f : p->shard_plan_.files)
      if (p->files_[f] == "-")
        return FailedPreconditionError("stdin can be read once, but epochs=" + std::to_string(options.epochs) +
                                       " re-reads it; add cache=memory (or a file) before repeat, or use a "
                                       "SageMaker channel (pipe:<dir>/<channel>)");
  }
  if (cached && options.cache != "memory" && IsStreamPath(options.cache))
    return InvalidArgumentError("cache '" + options.cache + "' must be a regular file path");

  auto impl = std::make_unique<Impl>();
  InterleaveOptions io;
  io.files = p->files_;
  io.plan = p->shard_plan_;
  io.reader_options = reader_options;
  io.reader_options.pipe_timeout_ms = options.pipe_timeout_ms;  // writer connect / stall waits
  io.num_parallel_reads = options.num_parallel_reads;
  io.deterministic = options.deterministic;
  io.passes = passes;
  io.chunk_records = options.read_chunk_records;
  io.chunk_bytes = options.read_chunk_bytes;
  io.queue_chunks = options.queue_chunks;
  io.pipe_timeout_ms = options.pipe_timeout_ms;

  // Parsers first: their errors (bad reader options) should not need threads.
  const std::vector<std::string> files_copy = p->files_;
  SourceNameFn names = [files_copy](uint32_t f, uint32_t pass) { return InputName(files_copy, f, pass); };
  std::vector<BatchParser> parsers;
  impl->reader_options = reader_options;
  Impl::ParseErrors* errors = &impl->parse_errors;
  for (int32_t i = 0; i < options.num_parallel_calls; ++i) {
    CTRAIN_ASSIGN_OR_RETURN(BatchParser bp, BatchParser::Create(reader_options, names));
    bp.set_padded_rows_counter(&impl->counters.criteo_padded_rows);
    bp.set_oov_ids_counter(&impl->counters.oov_ids);
    bp.set_error_observer([errors](const RecordSource& src, const Status& s) {
      std::lock_guard<std::mutex> lock(errors->mu);
      if (errors->any && !EarlierInFileOrder(src, errors->first)) return;
      errors->any = true;
      errors->first = src;
      errors->status = s;
    });
    parsers.push_back(std::move(bp));
  }

  RecordStage* rec = impl->Add(NewInterleaveSource(std::move(io), &impl->counters));
  RawBatchStage* raw = nullptr;
  BatchStage* parsed = nullptr;
  PipelineCounters* c = &impl->counters;
  for (const std::string& name : order) {
    if (name == "shard" || name == "interleave") continue;
    if (name == "cache") {
      if (cached) rec = impl->Add(NewCacheStage(rec, options.cache, options.cache_max_bytes, c));
    } else if (name == "shuffle") {
      if (options.shuffle_buffer_size == 0) continue;
      if (raw == nullptr)
        rec = impl->Add(NewRecordShuffleStage(rec, options.shuffle_buffer_size, options.shuffle_seed,
                                              options.reshuffle_each_iteration, c));
      else
        raw = impl->Add(NewBatchShuffleStage(raw, options.shuffle_buffer_size, options.shuffle_seed,
                                             options.reshuffle_each_iteration, c));
    } else if (name == "batch") {
      raw = impl->Add(NewBatcherStage(rec, options.batch_size, options.drop_remainder, c));
    } else if (name == "parse") {
      parsed = impl->Add(NewParseStage(raw, std::move(parsers)));
      impl->parse = parsed;
    } else if (name == "repeat") {
      if (options.epochs == 1) continue;
      if (parsed != nullptr)
        parsed = impl->Add(std::make_unique<RepeatStage<Batch>>(parsed, options.epochs, c));
      else if (raw != nullptr)
        raw = impl->Add(std::make_unique<RepeatStage<RawBatch>>(raw, options.epochs, c));
      else
        rec = impl->Add(std::make_unique<RepeatStage<RawRecord>>(rec, options.epochs, c));
    } else if (name == "prefetch") {
      if (options.prefetch_buffer_size > 0) parsed = impl->Add(NewPrefetchStage(parsed, options.prefetch_buffer_size));
    }
  }
  impl->top = parsed;
  CTRAIN_RETURN_IF_ERROR(impl->top->Start(0));
  p->impl_ = std::move(impl);
  if (options.print_warnings)
    for (const std::string& w : p->warnings_) Warnf("%s\n", w.c_str());
  return p;
}

Pipeline::~Pipeline() = default;

namespace {
// Parses the inputs again in file order (input list order, then record order,
// with the shard's record filter) up to and including file `last`, and returns
// the first parse error: the earliest bad record whatever the shuffle. Streams
// (stdin, FIFOs, channels) cannot be read again and are skipped. OK when no
// bad record is found.
Status RescanForFirstParseError(const std::vector<std::string>& files, const ShardPlan& plan,
                                const ExampleReaderOptions& ro, uint32_t last) {
  SourceNameFn names = [&files](uint32_t f, uint32_t pass) { return InputName(files, f, pass); };
  CTRAIN_ASSIGN_OR_RETURN(BatchParser parser, BatchParser::Create(ro, names));
  RawBatch raw;
  Batch out;
  for (uint32_t f : plan.files) {
    if (f > last) break;
    const std::string& path = files[f];
    if (path == "-" || path.starts_with(kPipeChannelPrefix) || IsStreamPath(path)) continue;
    const RawRecordReader::SplitRange range{plan.spec.index, plan.spec.num_shards};
    CTRAIN_ASSIGN_OR_RETURN(auto reader, RawRecordReader::Open(path, ro, nullptr,
                                                               plan.level == ShardLevel::kByteRange ? &range : nullptr));
    const bool filter = !reader->ranged();
    std::string_view rec;
    uint64_t index = 0, offset = 0, n = 0;
    RecordSource src;
    src.file = f;
    src.format = reader->format();
    for (;;) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&rec, &index, &offset));
      if (more) {
        if (filter && !plan.Keeps(f, n++)) continue;
        src.index = index;
        src.offset = offset;
        raw.Append(rec, src);
      }
      if (raw.size() >= 256 || (!more && !raw.empty())) {
        CTRAIN_RETURN_IF_ERROR(parser.Parse(raw, &out));
        raw.Clear();
      }
      if (!more) break;
    }
  }
  return Status::OK();
}
}  // namespace

Status Pipeline::FirstParseError(const Status& surfaced) {
  RecordSource first;
  Status status;
  {
    std::lock_guard<std::mutex> lock(impl_->parse_errors.mu);
    if (!impl_->parse_errors.any) return surfaced;  // not a parse error
    first = impl_->parse_errors.first;
    status = impl_->parse_errors.status;
  }
  // The earliest of the errors seen so far depends on how far the shuffled
  // stream got; re-reading the regular files in order up to that record's file
  // does not (cost: at most one more read of those files, on the error path only).
  Status rescan = RescanForFirstParseError(files_, shard_plan_, impl_->reader_options, first.file);
  return rescan.ok() ? status : rescan;
}

StatusOr<bool> Pipeline::Next(Batch* batch) {
  if (!error_.ok()) return error_;
  if (done_) return false;
  meter_.BeginWait();
  Batch fresh;
  StatusOr<bool> r = impl_->top->Next(&fresh);
  meter_.EndWait();
  std::lock_guard<std::mutex> lock(stats_mu_);
  meter_snapshot_ = meter_;
  if (!r.ok()) {
    error_ = FirstParseError(r.status());
    return error_;
  }
  if (!*r) {
    done_ = true;
    return false;
  }
  std::swap(*batch, fresh);
  if (impl_->parse != nullptr && !fresh.labels.empty()) RecycleBatch(impl_->parse, std::move(fresh));
  records_ += static_cast<uint64_t>(batch->size());
  ++batches_;
  return true;
}

PipelineStats Pipeline::stats() const {
  PipelineStats s;
  s.elapsed_seconds = SecondsSince(start_);
  impl_->counters.Fill(&s);
  for (const auto& st : impl_->stages) st->AddStats(&s);
  std::lock_guard<std::mutex> lock(stats_mu_);
  s.records = records_;
  s.batches = batches_;
  s.records_per_second = s.elapsed_seconds > 0 ? records_ / s.elapsed_seconds : 0;
  meter_snapshot_.Fill(&s, options_.num_parallel_calls, options_.prefetch_buffer_size);
  return s;
}

}  // namespace ctrain::data
