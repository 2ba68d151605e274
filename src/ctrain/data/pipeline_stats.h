// Input pipeline measurements: throughput, per-stage queue fill, and the
// consumer-side input wait that tells whether training is input-bound.
//
// input_wait_fraction = wait / (wait + compute), where per step
//   wait    = seconds the consumer spent inside Pipeline::Next() (blocked on input)
//   compute = seconds from the previous Next() returning to this call
// A value near 0 means the pipeline keeps up; above ~0.1 the trainer idles
// waiting for batches and `suggestion` says what to try.
//
// Thread safety: InputWaitMeter is used by the consumer thread only;
// PipelineStats is a value.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/clock.h"
#include "ctrain/data/bounded_queue.h"

namespace ctrain::data {

// One input as this pipeline's first pass read it (file-level shards: only
// the shard's own inputs appear).
struct InputReadStats {
  uint32_t file = 0;         // index in the pipeline's input list
  std::string name;          // display name (a channel: its FIFO "<prefix>_<pass>")
  std::string format;        // as opened: given or sniffed (never "auto"), e.g. "libsvm"
  std::string compression;   // as opened: "none", "gzip" or "zlib"
  uint64_t records = 0;      // raw records read (before the record-level shard filter)
  bool finished = false;     // read to its end without an error
  // Bytes read from the file (compressed bytes for gzip/zlib); for a byte
  // range with the walk to its start (data/record_index.h).
  uint64_t input_bytes = 0;
  uint64_t index_bytes = 0;  // read to extend the process-wide record index
  bool byte_range = false;   // only this shard's byte range was read (shard.h)
};

struct PipelineStats {
  double elapsed_seconds = 0;      // since Pipeline::Create
  uint64_t records = 0;            // records delivered to the consumer (in batches)
  uint64_t batches = 0;            // batches delivered
  double records_per_second = 0;   // records / elapsed_seconds
  uint64_t records_read = 0;       // raw records read from the inputs (all passes, before shard filter)
  uint64_t bytes_read = 0;         // their payload bytes
  uint64_t records_sharded_out = 0;  // record-level shard: records left to other shards
  uint64_t input_bytes_read = 0;     // bytes read from the input files (InputReadStats::input_bytes, all passes)
  uint64_t record_index_bytes_read = 0;  // bytes read to extend record indexes (InputReadStats::index_bytes)
  uint64_t blank_lines = 0, comment_lines = 0, header_lines = 0, corrupt_records = 0;  // skipped on purpose
  // Text inputs (per pass) whose last line has no final '\n': a cut file (torn
  // tail) reads its last line as written, so this makes the cut visible.
  uint64_t unterminated_last_lines = 0;
  // Criteo rows read with criteo_pad_missing_trailing whose missing trailing
  // cells were read as empty (all passes).
  uint64_t criteo_padded_rows = 0;
  // Ids read as their field's out-of-vocabulary row (ExampleReaderOptions::oov_buckets, --oov bucket), all passes.
  uint64_t oov_ids = 0;
  uint64_t dropped_remainder_records = 0;  // batch(drop_remainder): records of dropped partial batches
  uint64_t epochs_completed = 0;   // repeat passes finished
  uint64_t cache_records = 0, cache_bytes = 0;  // what the cache holds
  uint64_t shuffle_buffer_max = 0; // most records ever held by the shuffle buffer
  std::vector<QueueStats> queues;  // every bounded queue, upstream first
  // The inputs opened by the first pass, in input-list order; an entry appears
  // once the input is opened (format known) and is complete once finished.
  std::vector<InputReadStats> inputs;

  // Consumer side (InputWaitMeter).
  uint64_t steps = 0;
  double wait_seconds = 0;
  double compute_seconds = 0;
  double input_wait_fraction = 0;
  std::string suggestion;          // non-empty when input-bound

  // One line of JSON (no newline).
  std::string ToJson() const;
};

// Records, per consumer step, the time spent waiting for input vs computing.
class InputWaitMeter {
 public:
  using Clock = ::ctrain::Clock;  // base/clock.h
  // Call right before asking for the next batch and right after getting it.
  void BeginWait() {
    const auto now = Clock::now();
    if (have_last_) compute_ += std::chrono::duration<double>(now - last_end_).count();
    begin_ = now;
  }
  void EndWait() {
    const auto now = Clock::now();
    wait_ += std::chrono::duration<double>(now - begin_).count();
    last_end_ = now;
    have_last_ = true;
    ++steps_;
  }
  uint64_t steps() const { return steps_; }
  double wait_seconds() const { return wait_; }
  double compute_seconds() const { return compute_; }
  double input_wait_fraction() const { return wait_ + compute_ > 0 ? wait_ / (wait_ + compute_) : 0.0; }
  // Fills the consumer fields of *stats and its suggestion.
  void Fill(PipelineStats* stats, int32_t num_parallel_calls, int32_t prefetch_buffer_size) const;

 private:
  Clock::time_point begin_{}, last_end_{};
  bool have_last_ = false;
  uint64_t steps_ = 0;
  double wait_ = 0, compute_ = 0;
};

// The advice for a given wait fraction ("" below 0.1), e.g.
// "input-bound: input_wait_fraction 0.31; try --num-parallel-calls 2 or a larger
//  --prefetch-buffer-size; a data service can offload parsing".
std::string InputBoundSuggestion(double input_wait_fraction, int32_t num_parallel_calls,
                                 int32_t prefetch_buffer_size);

}  // namespace ctrain::data
