// Byte-range splits of one file: how split i of n of a regular, uncompressed
// file of S bytes finds its records without reading the others'.
//
// Split i owns the records (TFRecord records, text lines) whose first byte lies
// in [S*i/n, S*(i+1)/n) (SplitByteRange). Its reader starts at the first record
// at or after the range start and stops before the first record at or after
// the range end (the last record it returns may run past the end):
//   text      seek to start - 1 and drop the bytes up to and including the next
//             '\n' (Hadoop's line splits);
//   TFRecord  a record start can only be found from the file's start, by
//             following the headers (length + its masked CRC): the walk reads
//             the 12-byte headers with positional reads and skips each payload
//             and payload CRC (never read, copied or checksummed).
// The union of the splits' records is the file's records, each once, and each
// split returns its records in file order.
//
// So that a split neither walks (TFRecord) nor counts newlines in (text) the
// whole prefix of its range every time, and so that messages keep the file's
// record indices and line numbers, a process-wide sparse index per file
// version (path, device, inode, size, mtime) remembers every G bytes
// (G = max(64 KiB, S / 4096)) the first record start at or after k*G and its
// 0-based index (TFRecord), or the newlines before k*G (text). It is extended
// lazily, only as far as a split needs, so each process reads the file's
// prefix once for it ("index bytes": TFRecord headers, in 1 MiB blocks when
// records are small; text every byte, to count newlines). A split then reads
// at most G bytes (+ one record) besides its range ("walk bytes").
//
// Errors of the walk are those of io/tfrecord.h's reader, with the same text
// ("<file>: record <i> at offset <o>: corrupted record: length crc mismatch",
// "... truncated record (EOF inside the payload) ...", "... record length N
// exceeds max_record_bytes M"), and those of the file.
//
// Thread safety: every function may be called from any thread; splits of one
// file wait for each other only while the index is extended.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ctrain/base/status.h"

namespace ctrain::data {

// [begin, end) of split `index` (0-based) of `count` over a file of `size` bytes.
std::pair<uint64_t, uint64_t> SplitByteRange(uint64_t size, int32_t index, int32_t count);

struct RangeStart {
  // TFRecord: the offset of the first record header at or after the range's
  // begin (the file size when none), and that record's 0-based index.
  // Text: begin - 1 (the reader drops the bytes up to the next '\n'), or 0 for
  // begin 0, and the number of newlines before it.
  uint64_t offset = 0;
  uint64_t index = 0;
  uint64_t walk_bytes = 0;   // bytes this call read besides the index
  uint64_t index_bytes = 0;  // bytes it read to extend the shared index (0 once it reaches)
};

// Where a TFRecord range starting at `begin` starts reading. `size` is the
// file's size when it was opened. Errors: the walk's (above).
StatusOr<RangeStart> FindTFRecordRangeStart(const std::string& path, uint64_t size, uint64_t begin,
                                            uint64_t max_record_bytes);
// Where a text range starting at `begin` starts reading.
StatusOr<RangeStart> FindTextRangeStart(const std::string& path, uint64_t size, uint64_t begin);

// Drops every cached index (tests).
void ClearRecordIndexCache();

}  // namespace ctrain::data
