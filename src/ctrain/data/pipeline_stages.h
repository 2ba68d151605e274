// Internal stage interfaces of the input pipeline (pipeline.h is the public
// API). A stage is a pull iterator over one element kind:
//   RawRecord  (before batch; a view valid until the next call)
//   RawBatch   (after batch, before parse)
//   Batch      (after parse)
// Start(pass) begins pass 0, 1, 2, ... (repeat restarts the stages below it);
// Next() returns false at the end of the pass. Record and raw-batch stages are
// called by one thread at a time (the parse worker that holds the pull lock).
// Cancel() only sets flags, closes queues and wakes waiters (never blocks);
// destructors join the stage's threads.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/batch_parser.h"
#include "ctrain/data/pipeline_stats.h"
#include "ctrain/data/raw_record.h"

namespace ctrain::data {

// Counters shared by all stages of one pipeline (relaxed atomics).
struct PipelineCounters {
  std::atomic<uint64_t> records_read{0}, bytes_read{0}, sharded_out{0};
  std::atomic<uint64_t> blank_lines{0}, comment_lines{0}, header_lines{0}, corrupt_records{0};
  std::atomic<uint64_t> input_bytes{0}, index_bytes{0};  // RawRecordReader::Counters
  std::atomic<uint64_t> unterminated_last_lines{0};  // text inputs whose last line has no '\n' (per pass)
  std::atomic<uint64_t> criteo_padded_rows{0};  // Criteo rows that lacked trailing cells (pad_missing_trailing)
  std::atomic<uint64_t> oov_ids{0};  // ids read as their field's out-of-vocabulary row (oov_buckets)
  std::atomic<uint64_t> dropped_remainder{0}, epochs_completed{0};
  std::atomic<uint64_t> cache_records{0}, cache_bytes{0}, shuffle_max{0};
  // First-pass inputs by file index (the interleave source's reader threads).
  mutable std::mutex inputs_mu;
  std::map<uint32_t, InputReadStats> inputs;  // GUARDED_BY(inputs_mu)
  void NoteInput(const InputReadStats& in) {
    std::lock_guard<std::mutex> lock(inputs_mu);
    inputs[in.file] = in;
  }
  void Fill(PipelineStats* s) const;
};

class StageBase {
 public:
  virtual ~StageBase() = default;
  virtual void Cancel() {}
  virtual void AddStats(PipelineStats*) const {}
};

template <typename T>
class Stage : public StageBase {
 public:
  virtual Status Start(int64_t pass) = 0;
  virtual StatusOr<bool> Next(T* out) = 0;
};

using RecordStage = Stage<RawRecord>;
using RawBatchStage = Stage<RawBatch>;
using BatchStage = Stage<Batch>;

// Repeat: `epochs` passes of upstream per own pass (-1 = forever); stops
// early when an upstream pass yields nothing (so repeat over empty input ends).
template <typename T>
class RepeatStage final : public Stage<T> {
 public:
  RepeatStage(Stage<T>* upstream, int64_t epochs, PipelineCounters* counters)
      : up_(upstream), epochs_(epochs), counters_(counters) {}
  Status Start(int64_t) override {
    epoch_ = 0;
    produced_ = 0;
    return up_->Start(next_upstream_pass_++);
  }
  StatusOr<bool> Next(T* out) override {
    while (true) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, up_->Next(out));
      if (more) {
        ++produced_;
        return true;
      }
      ++epoch_;
      counters_->epochs_completed.fetch_add(1, std::memory_order_relaxed);
      if ((epochs_ >= 0 && epoch_ >= epochs_) || produced_ == 0) return false;
      produced_ = 0;
      CTRAIN_RETURN_IF_ERROR(up_->Start(next_upstream_pass_++));
    }
  }

 private:
  Stage<T>* up_;
  int64_t epochs_;
  PipelineCounters* counters_;
  int64_t epoch_ = 0, produced_ = 0, next_upstream_pass_ = 0;
};

// Memory ("memory") or file (a path) cache of raw records.
std::unique_ptr<RecordStage> NewCacheStage(RecordStage* upstream, const std::string& cache, uint64_t max_bytes,
                                           PipelineCounters* counters);
// Buffer shuffles (tf.data semantics).
std::unique_ptr<RecordStage> NewRecordShuffleStage(RecordStage* upstream, int64_t buffer_size, uint64_t seed,
                                                   bool reshuffle, PipelineCounters* counters);
std::unique_ptr<RawBatchStage> NewBatchShuffleStage(RawBatchStage* upstream, int64_t buffer_size, uint64_t seed,
                                                    bool reshuffle, PipelineCounters* counters);
// Groups records into raw batches.
std::unique_ptr<RawBatchStage> NewBatcherStage(RecordStage* upstream, int64_t batch_size, bool drop_remainder,
                                               PipelineCounters* counters);
// Parses raw batches on `threads` threads; output in input order. `parsers`
// holds one BatchParser per thread.
class ParseStage;
std::unique_ptr<BatchStage> NewParseStage(RawBatchStage* upstream, std::vector<BatchParser> parsers);
// Gives a consumed batch's buffers back to a parse stage for reuse.
void RecycleBatch(BatchStage* parse_stage, Batch&& batch);
// Runs upstream (already Start(0)ed by the thread) ahead into a queue.
std::unique_ptr<BatchStage> NewPrefetchStage(BatchStage* upstream, int32_t buffer_size);

}  // namespace ctrain::data
