// InterleaveSource: the first stage of the pipeline. Reader threads (one per
// interleave slot, num_parallel_reads) open the shard's inputs, read raw
// records (raw_record_reader.h), apply record-level sharding, and hand chunks
// of up to `chunk_records` records / `chunk_bytes` bytes to bounded queues
// (queue_chunks chunks per slot). The stage returns the records one by one.
//
// Order: input j of the shard goes to slot j % R. Deterministic mode visits
// the slots round-robin, one chunk each, skipping slots that finished the
// pass (like tf.data interleave with cycle_length R and block_length
// chunk_records). Otherwise all slots share one queue and the first ready
// chunk wins.
//
// Passes: the readers read `passes` passes (-1 = unbounded) back to back,
// one pass ahead at most (deterministic) or only the requested pass; pass N of a
// channel input "pipe:<prefix>" opens the FIFO "<prefix>_<N>".
//
// Errors (sticky) are those of opening / reading / framing, named by the file.
//
// Thread safety: Start/Next from one thread at a time; Cancel from any.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline_stages.h"
#include "ctrain/data/shard.h"

namespace ctrain::data {

struct InterleaveOptions {
  std::vector<std::string> files;  // the full input list (ShardPlan indices refer to it)
  ShardPlan plan;
  ExampleReaderOptions reader_options;
  int32_t num_parallel_reads = 1;
  bool deterministic = true;
  int64_t passes = 1;  // -1 = until cancelled
  int32_t chunk_records = 256;
  int64_t chunk_bytes = 1 << 20;
  int32_t queue_chunks = 4;
  int64_t pipe_timeout_ms = 60000;
};

// The display name of input `file` in pass `pass` (the FIFO path for channels).
std::string InputName(const std::vector<std::string>& files, uint32_t file, uint32_t pass);

std::unique_ptr<RecordStage> NewInterleaveSource(InterleaveOptions options, PipelineCounters* counters);

}  // namespace ctrain::data
