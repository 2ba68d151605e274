// Pipeline: the input pipeline that feeds the trainer (and, later, remote data
// workers): files -> shard -> interleave -> cache -> shuffle -> batch -> parse
// -> repeat -> prefetch, with tf.data's names and semantics
// (https://www.tensorflow.org/guide/data_performance), yielding data::Batch.
//
// Stages (PipelineOptions knobs in parentheses):
//   files       ExpandFileList: globs, directories, paths, "-" (stdin),
//               "pipe:<dir>/<channel>" (SageMaker channel, pipe_mode.h); sorted.
//   shard       (num_shards, shard_index; ShardFromEnvironment) file level when
//               files >= num_shards, record level otherwise (shard.h).
//   interleave  (num_parallel_reads, deterministic) reader threads, one per
//               slot; file j goes to slot j % R; slots are visited round-robin
//               one chunk (read_chunk_records records) at a time
//               (deterministic) or first-ready (not deterministic).
//   cache       ("" | "memory" | a file path; cache_max_bytes) the first pass
//               is stored, later passes replay it (the way to re-read stdin).
//   shuffle     (shuffle_buffer_size, shuffle_seed, reshuffle_each_iteration)
//               tf.data's buffer shuffle; before batch it shuffles records,
//               after batch whole batches.
//   batch       (batch_size, drop_remainder)
//   parse       (num_parallel_calls) threads each parse a whole batch
//               (batch_parser.h); batches keep their order.
//   repeat      (epochs; -1 = forever) restarts the stages below it. Over a
//               stream: the next FIFO of a channel, the same FIFO re-opened,
//               or (stdin) an error unless cached. An empty pass ends repeat.
//   prefetch    (prefetch_buffer_size batches; 0 = none) a thread runs the
//               pipeline ahead of the consumer.
// `order` may move cache, shuffle and repeat (e.g. shuffle after batch, cache
// after repeat). Orders that grow memory each epoch (cache after repeat) or
// shuffle nothing (a buffer of 1, shuffling batches with a buffer <= 1) are
// reported in warnings() and on stderr. An invalid order is InvalidArgument.
//
// Memory: every buffer is bounded: reader queues (queue_chunks chunks of at
// most read_chunk_records records / read_chunk_bytes bytes each, per reader),
// the shuffle buffer, num_parallel_calls batches in parse, prefetch_buffer_size
// batches; the memory cache by cache_max_bytes (ResourceExhausted past it).
// Nothing grows across epochs.
//
// Errors from any stage surface in Next() with the file name and record /
// line and byte offset, and are sticky. Destroying the Pipeline cancels and
// joins every thread, also while they wait on a FIFO writer or a full queue.
//
// Thread safety: Next() from one consumer thread; stats() and warnings() from
// any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/clock.h"
#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline_stats.h"
#include "ctrain/data/shard.h"

namespace ctrain::data {

// The seed's recommended order.
inline constexpr std::string_view kDefaultPipelineOrder =
    "shard,interleave,cache,shuffle,batch,parse,repeat,prefetch";

struct PipelineOptions {
  // Reader threads (files read concurrently). >= 1. Default 1.
  int32_t num_parallel_reads = 1;
  // Interleave order reproducible run to run (round-robin over reader slots).
  // false: the first ready slot wins (a little faster when files differ in speed).
  bool deterministic = true;
  // Parse threads; each parses a whole batch. >= 1. Default 1.
  int32_t num_parallel_calls = 1;
  // Records (or batches, when shuffle comes after batch) in the shuffle
  // buffer; 0 disables shuffling. Memory: buffer_size records.
  int64_t shuffle_buffer_size = 0;
  uint64_t shuffle_seed = 0;
  // A new permutation each epoch (seed mixed with the pass); false repeats
  // the same permutation every epoch.
  bool reshuffle_each_iteration = true;
  // Rows per batch, >= 1. Default 1024.
  int64_t batch_size = 1024;
  // Drop a last partial batch (counted in stats().dropped_remainder_records).
  bool drop_remainder = false;
  // Batches prepared ahead of the consumer by the prefetch thread; 0: none.
  int32_t prefetch_buffer_size = 2;
  // "" (none), "memory", or a local file path (TFRecord-framed, written
  // atomically when the first pass completes; overwritten, never reused).
  std::string cache;
  // Memory cache limit: payload + 32 bytes per record. Default 2 GiB.
  uint64_t cache_max_bytes = uint64_t{2} << 30;
  // Sharding (shard.h). Use ShardFromEnvironment() for MPI jobs.
  int32_t num_shards = 1;
  int32_t shard_index = 0;
  // Fewer files than shards: each shard reads its byte range of every file
  // (shard.h byte-range level) instead of every num_shards-th record of all
  // of it. The data service's splits; not a config option (MPI training keeps
  // the record level, whose shards differ by at most one record per file).
  bool shard_byte_ranges = false;
  // Read every file once at Create to report exact per-shard record counts.
  bool count_shard_records = false;
  // Passes over the data; -1 = forever.
  int64_t epochs = 1;
  // Stage order, comma-separated (see the file comment).
  std::string order = std::string(kDefaultPipelineOrder);
  // Pipe mode (pipe_mode.h): the longest wait in ms for a channel FIFO
  // "<channel>_<epoch>" to appear, for a writer to connect to a FIFO, and for
  // the next byte from a stalled writer. 0 = no limit.
  int64_t pipe_timeout_ms = 60000;
  // Reader chunking and queue depth (per reader).
  int32_t read_chunk_records = 256;
  int64_t read_chunk_bytes = 1 << 20;
  int32_t queue_chunks = 4;
  // Print warnings to stderr at Create ("ctrain: warning: ...").
  bool print_warnings = true;
};

// Sets one option by its config name (hyphens or underscores):
// num_parallel_reads, deterministic, num_parallel_calls, shuffle_buffer_size,
// shuffle_seed, reshuffle_each_iteration, batch_size, drop_remainder,
// prefetch_buffer_size, cache, cache_max_bytes, num_shards, shard_index,
// count_shard_records, epochs, order, pipe_timeout_ms. Booleans: true/false/1/0.
// Errors: InvalidArgument naming the option for an unknown name or bad value.
Status SetPipelineOption(PipelineOptions* options, std::string_view name, std::string_view value);
// The names SetPipelineOption accepts (underscores), in the order above.
const std::vector<std::string>& PipelineOptionNames();

// Range checks and the order rules. Errors: InvalidArgument naming the knob.
Status ValidatePipelineOptions(const PipelineOptions& options);

// Warnings about the order/knobs alone (no files needed).
std::vector<std::string> PipelineOrderWarnings(const PipelineOptions& options);

class Pipeline {
 public:
  // Expands `files` (file_list.h), plans the shard, validates, starts the
  // threads. ExampleReaderOptions decide format (kAuto: sniffed per input),
  // compression, field_size, id_base, schema, hashing/vocabulary (the
  // vocabulary must outlive the pipeline).
  // Errors: those of ExpandFileList, PlanShards, ValidatePipelineOptions;
  // FailedPrecondition for repeat over stdin without cache.
  static StatusOr<std::unique_ptr<Pipeline>> Create(const std::vector<std::string>& files,
                                                    const ExampleReaderOptions& reader_options,
                                                    const PipelineOptions& options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The next batch (moved into *batch; its old buffers are recycled). Returns
  // false after the last batch of the last epoch. Errors are sticky.
  // A parse error names the earliest bad record in file order (input list
  // order, then line / record index), independent of shuffling and of the
  // number of parse threads: on the first error the regular files up to the
  // bad record's file are parsed again in order (streams cannot be, and give
  // the earliest bad record seen so far).
  // Times the call for input_wait_fraction (InputWaitMeter).
  StatusOr<bool> Next(Batch* batch);

  PipelineStats stats() const;
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<std::string>& files() const { return files_; }  // the expanded input list
  const ShardPlan& shard_plan() const { return shard_plan_; }
  const PipelineOptions& options() const { return options_; }

  struct Impl;  // stage graph (pipeline.cc)

 private:
  Pipeline() = default;
  Status FirstParseError(const Status& surfaced);

  PipelineOptions options_;
  std::vector<std::string> files_;
  ShardPlan shard_plan_;
  std::vector<std::string> warnings_;
  std::unique_ptr<Impl> impl_;
  Clock::time_point start_;
  InputWaitMeter meter_;          // consumer thread only
  mutable std::mutex stats_mu_;   // guards the consumer-side snapshot below
  uint64_t records_ = 0, batches_ = 0;
  InputWaitMeter meter_snapshot_;
  Status error_;
  bool done_ = false;
};

}  // namespace ctrain::data
