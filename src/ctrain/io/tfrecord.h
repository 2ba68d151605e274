// TFRecord container: reader and writer.
//
// Format (tensorflow/core/lib/io/record_writer.cc; docs/formats/tfrecord.md):
//   record := uint64 length            little-endian, payload bytes
//             uint32 masked_crc32c(length's 8 bytes)
//             byte   payload[length]
//             uint32 masked_crc32c(payload)
// (CRC-32C and masking in crc32c.h). A file is records back to back, with no
// file header; the whole stream may be wrapped in gzip or zlib
// (compression.h). Payloads are opaque here (usually tf.train.Example).
//
// Reader errors (every message starts "<file>: record <i> at offset <o>: ",
// i = 0-based record index counting skipped records, o = byte offset of the
// record header in the uncompressed stream):
//   OutOfRange  "truncated record (EOF inside the length header), expected 12 bytes, got M"
//               "truncated record (EOF inside the payload), expected N bytes, got M"
//               "truncated record (EOF inside the payload crc), expected 4 bytes, got M"
//               A stream that ends exactly at a record boundary is a clean end.
//   DataLoss    "corrupted record: length crc mismatch"
//               "corrupted record: data crc mismatch"
//   ResourceExhausted "record length N exceeds max_record_bytes M"
//   plus the errors of the decompressor (DataLoss / OutOfRange, see
//   compression.h), of the file (NotFound, ...) and the compression
//   mismatch (InvalidArgument).
// Errors are sticky: once Next() fails it keeps returning the same error.
//
// Skip policy (skip_corrupt_records = true): only DataLoss records are
// skipped; truncation, oversize records and decompression errors still stop.
//   - data crc mismatch: the length was proven by its own CRC, so exactly
//     that record (16 + length bytes) is dropped.
//   - length crc mismatch: the length cannot be trusted. The reader drops
//     the header's first byte and scans forward one byte at a time for the
//     next offset whose 12 bytes form a valid header (length CRC matches and
//     length <= max_record_bytes); everything before it is dropped. If none
//     is found, the rest of the stream is dropped. A false match (2^-32 per
//     offset) is caught by the data CRC and skipped in turn.
//   Each drop counts as one skipped record (and one record index) and adds
//   the dropped bytes to skipped_bytes. When skipped_records would exceed
//   max_skipped_records (if non-zero) the DataLoss error is returned instead,
//   with " (skipped record K exceeds max_skipped_records=M)" appended.
//
// Thread safety: a reader or writer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"
#include "ctrain/io/compression.h"
#include "ctrain/io/file.h"

namespace ctrain::io {

inline constexpr size_t kTFRecordHeaderBytes = 12;  // length + length crc
inline constexpr size_t kTFRecordFooterBytes = 4;   // payload crc

// Appends one framed record (header, payload, footer) to *out.
void AppendTFRecord(std::string* out, std::string_view payload);

// True if `first_bytes` holds at least 12 bytes and they are a TFRecord header
// with a matching length CRC. Used as the plain-format probe of compression
// auto-detection (an uncompressed TFRecord stream is never taken for zlib).
bool LooksLikeTFRecordHeader(std::string_view first_bytes);

struct TFRecordReaderOptions {
  // kAuto detects gzip/zlib/none from the first bytes (compression.h);
  // an explicit value must match the file or Open fails with InvalidArgument.
  Compression compression = Compression::kAuto;
  // Skip DataLoss records instead of failing (policy in the file comment).
  bool skip_corrupt_records = false;
  // With skip_corrupt_records: the most records that may be skipped; one more
  // is a DataLoss error. 0 means no limit (every skip is still counted).
  uint64_t max_skipped_records = 0;
  // Largest accepted payload; a larger declared length is ResourceExhausted,
  // checked before any buffer grows. Default 1 GiB.
  uint64_t max_record_bytes = uint64_t{1} << 30;
  // false skips the payload CRC (saves ~0.1 ns/byte). The length CRC is
  // always checked: framing depends on it and it costs one instruction.
  bool verify_checksums = true;
  // Read block size; the buffer grows beyond it only for larger records, and
  // only as their bytes actually arrive. Default 1 MiB.
  size_t buffer_bytes = size_t{1} << 20;
};

// A byte range of an uncompressed TFRecord file (a split of one file,
// data/record_index.h): the reader starts at the header of record
// `start_index` at `start_offset` and returns the records whose header lies
// before `stop_offset`.
struct TFRecordRange {
  uint64_t start_offset = 0;
  uint64_t start_index = 0;
  uint64_t stop_offset = UINT64_MAX;
};

class TFRecordReader {
 public:
  struct Counters {
    uint64_t records = 0;          // records returned by Next()
    uint64_t bytes = 0;            // payload bytes of those records
    uint64_t skipped_records = 0;  // corrupt records / regions dropped
    uint64_t skipped_bytes = 0;    // stream bytes dropped with them
    // Skips after a length crc mismatch: the dropped region may have held
    // more than one record (its record count is unknown).
    uint64_t resyncs = 0;
  };

  // Opens `path` ("-" = stdin). For a regular uncompressed file the size is
  // taken from stat(2) so impossible lengths fail before reading the payload.
  static StatusOr<std::unique_ptr<TFRecordReader>> Open(const std::string& path,
                                                        const TFRecordReaderOptions& options = {});
  // Reads records from `file`. `file_size`, if known, is the total size of
  // `file` in bytes; it is used only when the effective compression is none.
  static StatusOr<std::unique_ptr<TFRecordReader>> FromFile(std::unique_ptr<SequentialFile> file,
                                                            const TFRecordReaderOptions& options = {},
                                                            std::optional<uint64_t> file_size = std::nullopt);

  // Reads `range` of an uncompressed file of `file_size` bytes; `file` is
  // positioned at range.start_offset (io::OpenSequentialFileAt). Next returns
  // false at the first record whose header lies at or after range.stop_offset,
  // and no byte past stop_offset is read except those of the record that
  // crosses it. record_index(), record_offset() and messages use the file's
  // own indices and offsets. No compression detection (a mid-file offset may
  // look like any magic). skip_corrupt_records must be false (a resync could
  // cross into the next range): InvalidArgument otherwise.
  static StatusOr<std::unique_ptr<TFRecordReader>> FromUncompressedRange(std::unique_ptr<SequentialFile> file,
                                                                         const TFRecordReaderOptions& options,
                                                                         uint64_t file_size, const TFRecordRange& range);

  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;
  ~TFRecordReader();

  // Sets *record to the next payload and returns true; returns false at a
  // clean end of stream. The view points into the reader's buffer and stays
  // valid until the next call (no allocation per record).
  StatusOr<bool> Next(std::string_view* record);

  // 0-based index of the record last returned (counting skipped records).
  uint64_t record_index() const { return record_index_; }
  // Offset of its header in the uncompressed stream.
  uint64_t record_offset() const { return record_offset_; }
  // The effective compression (never kAuto).
  Compression compression() const { return compression_; }
  Counters counters() const { return counters_; }
  const std::string& name() const;

 private:
  TFRecordReader(std::unique_ptr<SequentialFile> file, const TFRecordReaderOptions& options,
                 Compression compression, std::optional<uint64_t> stream_size);
  Status Fill(size_t need);
  Status Fail(Status s);
  std::string Where(uint64_t offset) const;
  Status Truncated(uint64_t offset, std::string_view part, uint64_t expected, uint64_t got);
  Status CountSkip(const Status& why, uint64_t bytes);
  Status Resync();

  std::unique_ptr<SequentialFile> file_;
  TFRecordReaderOptions options_;
  Compression compression_;
  std::optional<uint64_t> stream_size_;  // known total size of the uncompressed stream
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
  uint64_t base_ = 0;           // stream offset of buf_[0]
  bool eof_ = false;
  uint64_t stop_ = UINT64_MAX;  // TFRecordRange::stop_offset
  uint64_t next_index_ = 0;
  uint64_t record_index_ = 0;
  uint64_t record_offset_ = 0;
  Counters counters_;
  Status error_;
};

class TFRecordWriter {
 public:
  // Creates/truncates `path` ("-" = stdout) and writes records compressed with
  // `c` (kNone, kGzip or kZlib; kAuto is InvalidArgument).
  static StatusOr<std::unique_ptr<TFRecordWriter>> Open(const std::string& path,
                                                        Compression c = Compression::kNone,
                                                        const WriteOptions& write_options = {});
  static StatusOr<std::unique_ptr<TFRecordWriter>> ToFile(std::unique_ptr<WritableFile> file,
                                                          Compression c = Compression::kNone);
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;
  // Without Close() the tail of the stream may be lost (an atomic file is not created).
  ~TFRecordWriter();

  // Appends one record. Errors: those of the file; FailedPrecondition after Close().
  Status Write(std::string_view record);
  // Pushes everything written so far to the file (a sync flush for gzip/zlib).
  Status Flush();
  // Finishes the compressed stream and closes the file. Idempotent.
  Status Close();
  uint64_t records_written() const { return records_; }

 private:
  explicit TFRecordWriter(std::unique_ptr<WritableFile> file);
  Status FlushBuffer();

  std::unique_ptr<WritableFile> file_;
  std::string buf_;
  uint64_t records_ = 0;
  bool closed_ = false;
};

}  // namespace ctrain::io
