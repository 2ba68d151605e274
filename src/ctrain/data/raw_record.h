// Raw records: the unparsed unit that flows through the first half of the
// input pipeline (read -> shard -> interleave -> cache -> shuffle -> batch),
// before the vectorised parse turns a whole batch into a data::Batch.
//
// A raw record is one TFRecord payload (a serialized tf.train.Example) or one
// text data line (LibSVM, Criteo TSV/CSV; without its '\n'; blank, comment and
// header lines never become records, the reader counts them instead).
// Every record carries its provenance so a parse error much later still names
// the file, the record index / line number and the byte offset.
//
// RawBatch stores its records back to back in one arena, so building and
// moving batches costs no allocation per record once capacities are warm.
//
// Thread safety: plain values; move them between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/data/example_reader.h"

namespace ctrain::data {

// Where a record came from.
struct RecordSource {
  uint32_t file = 0;   // index into the pipeline's file list (or the channel)
  uint32_t pass = 0;   // read pass (epoch) of the source; names the FIFO in channel mode
  RecordFormat format = RecordFormat::kTFRecord;  // never kAuto
  uint64_t index = 0;  // TFRecord: 0-based record index; text: 1-based line number
  uint64_t offset = 0; // byte offset of the record header / line in the uncompressed stream
};

// One record as a view; valid until the producing stage's next call.
struct RawRecord {
  std::string_view data;
  RecordSource source;
};

// A batch of raw records (arena + end offsets + provenance).
struct RawBatch {
  std::string arena;                 // record bytes back to back
  std::vector<uint64_t> ends;        // ends[i] = end offset of record i in arena
  std::vector<RecordSource> sources; // [size()]

  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  std::string_view record(size_t i) const {
    const uint64_t b = i == 0 ? 0 : ends[i - 1];
    return std::string_view(arena.data() + b, ends[i] - b);
  }
  void Clear() {  // keeps capacity
    arena.clear();
    ends.clear();
    sources.clear();
  }
  void Append(std::string_view data, const RecordSource& src) {
    arena.append(data);
    ends.push_back(arena.size());
    sources.push_back(src);
  }
  // Bytes held (payload + per-record bookkeeping), for memory accounting.
  uint64_t bytes() const { return arena.size() + ends.size() * (sizeof(uint64_t) + sizeof(RecordSource)); }
};

}  // namespace ctrain::data
