// RawRecordReader: reads one input (file, FIFO, stdin) as raw records without
// parsing them: TFRecord payloads, or text data lines (LibSVM, Criteo TSV/CSV).
// The parse happens later, a whole batch at a time (batch_parser.h).
//
// Opening: compression as io::WrapForRead (auto-detected from the magic bytes
// unless given); format as ExampleReaderOptions::format, or with kAuto sniffed
// from the first decompressed bytes exactly like OpenExampleReader (a valid
// TFRecord header -> tfrecord; text: "label," -> criteo-csv, "id:value" tokens
// -> libsvm unless most ':' tokens are libFFM triples, tabs without ':' ->
// criteo-tsv). Sniffing replays the peeked bytes, so pipes work.
// Text inputs count a last line without '\n' (unterminated_last_lines: a cut
// file); the line itself is returned as written.
//
// Text lines that are not examples are skipped and counted, never returned:
// blank lines (all formats), lines whose first non-blank byte is '#' (LibSVM),
// and a Criteo header (first non-blank line whose first cell is "label").
//
// Errors: those of the file, the decompressor and the TFRecord framing
// (io/tfrecord.h: "<file>: record <i> at offset <o>: ..."); InvalidArgument
// "<file>: cannot detect the record format ..." for binary non-TFRecord input.
//
// Byte-range splits (Open with a SplitRange; data/record_index.h): a regular,
// uncompressed TFRecord (without skip_corrupt_records) or text file is read
// only from its split's range: ranged() is true and the reader returns exactly
// the split's records, with the file's record indices / line numbers and
// offsets. Any other input (gzip/zlib: a DEFLATE stream cannot be entered
// mid-way; a FIFO; skip_corrupt_records, whose resync could cross ranges) is
// opened whole: ranged() is false and the caller keeps the split's records
// itself (data/shard.h ShardPlan::Keeps: every n-th record).
//
// Thread safety: one reader per thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"

namespace ctrain::data {

class RawRecordReader {
 public:
  struct Counters {
    uint64_t records = 0;        // records returned
    uint64_t bytes = 0;          // their payload bytes
    uint64_t blank_lines = 0;    // text: skipped
    uint64_t comment_lines = 0;  // libsvm: skipped '#' lines
    uint64_t header_lines = 0;   // criteo: skipped "label,..." header
    uint64_t corrupt_records = 0;  // tfrecord with skip_corrupt_records: skipped
    uint64_t unterminated_last_lines = 0;  // text: 1 when the last line has no '\n' (a cut file?)
    // Bytes read from the input (compressed bytes for gzip/zlib; the sniff
    // included), for a byte range with the walk to its start.
    uint64_t input_bytes = 0;
    // Bytes read to extend the process-wide record index (record_index.h).
    uint64_t index_bytes = 0;
  };

  // Split `index` of `count` byte ranges of one file.
  struct SplitRange {
    int32_t index = 0;
    int32_t count = 1;
  };

  // `path` as in pipe_mode.h's OpenInputStream (regular file, FIFO, "-").
  // `cancel` (may be null) aborts waiting on a stream.
  static StatusOr<std::unique_ptr<RawRecordReader>> Open(const std::string& path,
                                                         const ExampleReaderOptions& options,
                                                         const std::atomic<bool>* cancel = nullptr,
                                                         const SplitRange* range = nullptr);
  virtual ~RawRecordReader() = default;
  // True when only the SplitRange's records are returned (see above).
  virtual bool ranged() const { return false; }

  // Next raw record; false at end of input. The view stays valid until the
  // next call. *index: TFRecord record index (0-based) or text line number
  // (1-based); *offset: its byte offset in the uncompressed stream.
  virtual StatusOr<bool> Next(std::string_view* record, uint64_t* index, uint64_t* offset) = 0;
  virtual RecordFormat format() const = 0;
  virtual io::Compression compression() const = 0;
  virtual const std::string& name() const = 0;
  virtual Counters counters() const = 0;
};

// Number of records `path` holds (reads it once; skipped lines not counted);
// with `range`, those of that split (only when the range applies, else the whole file's).
StatusOr<uint64_t> CountRecords(const std::string& path, const ExampleReaderOptions& options,
                                const RawRecordReader::SplitRange* range = nullptr);

}  // namespace ctrain::data
