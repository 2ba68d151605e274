#include "ctrain/data/pipeline_stats.h"

#include <cstdio>

namespace ctrain::data {
namespace {

std::string StatNum(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

}  // namespace

std::string InputBoundSuggestion(double f, int32_t num_parallel_calls, int32_t prefetch_buffer_size) {
  if (f < 0.1) return "";
  char frac[32];
  std::snprintf(frac, sizeof(frac), "%.2f", f);
  return std::string("input-bound: input_wait_fraction ") + frac + "; try --num-parallel-calls " +
         std::to_string(num_parallel_calls * 2) + " or a larger --prefetch-buffer-size (now " +
         std::to_string(prefetch_buffer_size) + "); a data service can offload parsing";
}

void InputWaitMeter::Fill(PipelineStats* s, int32_t num_parallel_calls, int32_t prefetch_buffer_size) const {
  s->steps = steps_;
  s->wait_seconds = wait_;
  s->compute_seconds = compute_;
  s->input_wait_fraction = input_wait_fraction();
  s->suggestion = InputBoundSuggestion(s->input_wait_fraction, num_parallel_calls, prefetch_buffer_size);
}

std::string PipelineStats::ToJson() const {
  std::string j = "{\"elapsed_seconds\":" + StatNum(elapsed_seconds) + ",\"records\":" + std::to_string(records) +
                  ",\"batches\":" + std::to_string(batches) + ",\"records_per_second\":" + StatNum(records_per_second) +
                  ",\"records_read\":" + std::to_string(records_read) + ",\"bytes_read\":" +
                  std::to_string(bytes_read) + ",\"records_sharded_out\":" + std::to_string(records_sharded_out) +
                  ",\"input_bytes_read\":" + std::to_string(input_bytes_read) +
                  ",\"record_index_bytes_read\":" + std::to_string(record_index_bytes_read) +
                  ",\"blank_lines\":" + std::to_string(blank_lines) + ",\"comment_lines\":" +
                  std::to_string(comment_lines) + ",\"header_lines\":" + std::to_string(header_lines) +
                  ",\"corrupt_records\":" + std::to_string(corrupt_records) +
                  ",\"unterminated_last_lines\":" + std::to_string(unterminated_last_lines) +
                  ",\"criteo_padded_rows\":" + std::to_string(criteo_padded_rows) + ",\"oov_ids\":" +
                  std::to_string(oov_ids) + ",\"dropped_remainder_records\":" +
                  std::to_string(dropped_remainder_records) + ",\"epochs_completed\":" +
                  std::to_string(epochs_completed) + ",\"cache_records\":" + std::to_string(cache_records) +
                  ",\"cache_bytes\":" + std::to_string(cache_bytes) + ",\"shuffle_buffer_max\":" +
                  std::to_string(shuffle_buffer_max) + ",\"queues\":[";
  for (size_t i = 0; i < queues.size(); ++i) {
    const QueueStats& q = queues[i];
    j += std::string(i ? "," : "") + "{\"name\":\"" + q.name + "\",\"capacity\":" + std::to_string(q.capacity) +
         ",\"average_fill\":" + StatNum(q.average_fill) + ",\"max_items\":" + std::to_string(q.max_items) +
         ",\"max_bytes\":" + std::to_string(q.max_bytes) + ",\"pushes\":" + std::to_string(q.pushes) + "}";
  }
  j += "],\"steps\":" + std::to_string(steps) + ",\"wait_seconds\":" + StatNum(wait_seconds) +
       ",\"compute_seconds\":" + StatNum(compute_seconds) + ",\"input_wait_fraction\":" + StatNum(input_wait_fraction) +
       ",\"suggestion\":\"" + suggestion + "\"}";
  return j;
}

}  // namespace ctrain::data
