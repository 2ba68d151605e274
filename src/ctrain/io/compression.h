// Stream compression for record files: gzip (RFC 1952) and zlib (RFC 1950)
// wrappers around DEFLATE (RFC 1951), via zlib. These are the two
// compressions tf.io.TFRecordWriter/TFRecordDataset accept ("GZIP", "ZLIB").
//
// Reading:
//   OpenForRead / WrapForRead peek at the first bytes of a stream (without
//   seeking, so pipes and stdin work), detect the compression, check it
//   against what the caller asked for, and return a SequentialFile that
//   yields the uncompressed bytes. Detection rule (see DetectCompression and
//   docs/formats/tfrecord.md):
//     1. empty stream                                   -> none
//     2. `plain_probe` (if given) accepts the prefix    -> none
//        (the TFRecord reader passes "first 12 bytes are a TFRecord header
//        with a valid length CRC", a 2^-32 false-positive test)
//     3. bytes 1f 8b                                    -> gzip
//     4. zlib header (CM == 8, CINFO <= 7, FDICT clear, (CMF*256+FLG) % 31 == 0)
//        AND a trial inflate of the peeked prefix's DEFLATE data reports no
//        error -> zlib. The Adler-32 trailer is not part of the trial: a small
//        stream with only a bad trailer is zlib, and reading it reports
//        "corrupt zlib stream ...: incorrect data check".
//     5. otherwise                                      -> none
//   Step 4's trial inflate matters: the first two bytes of an uncompressed
//   TFRecord are the low bytes of a little-endian uint64 length and pass the
//   2-byte zlib header check for about 1 length in 500.
//
// Errors from inflating files (all name the file):
//   DataLoss   "<file>: corrupt gzip stream near compressed byte offset N: <zlib msg>"
//   OutOfRange "<file>: truncated gzip stream: EOF at compressed byte offset N ..."
//   (with "zlib" instead of "gzip" for zlib streams).
//
// Thread safety: a file object is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"
#include "ctrain/io/file.h"

namespace ctrain::io {

enum class Compression {
  kNone,
  kGzip,  // RFC 1952 members; concatenated members are read as one stream
  kZlib,  // RFC 1950 streams; concatenated streams are read as one stream
  kAuto,  // reading only: detect from the first bytes
};

// "none", "gzip", "zlib", "auto" (also accepts TensorFlow's "", "GZIP", "ZLIB",
// case-insensitive). Errors: InvalidArgument naming the accepted values.
StatusOr<Compression> ParseCompression(std::string_view name);
// "none", "gzip", "zlib", "auto".
std::string_view CompressionName(Compression c);

// Returns true when `first_bytes` is plainly the start of an uncompressed
// stream of the caller's format (used as rule 2 above).
using PlainFormatProbe = bool (*)(std::string_view first_bytes);

// Applies the detection rule above to the first bytes of a stream (the more
// bytes, the stronger the zlib trial; WrapForRead passes up to kPeekBytes).
// Never returns kAuto.
Compression DetectCompression(std::string_view first_bytes, PlainFormatProbe plain_probe = nullptr);

// How many bytes WrapForRead peeks (fewer only if the stream is shorter).
inline constexpr size_t kPeekBytes = 4096;

// Wraps `src` in a decompressor. kNone returns `src` unchanged; kAuto is
// InvalidArgument (use WrapForRead). The result's name() is src's name and
// position() counts uncompressed bytes. An empty `src` (0 bytes) is an empty
// stream; otherwise the stream must end exactly at the end of a member /
// zlib stream (trailing garbage is DataLoss, a cut stream is OutOfRange).
StatusOr<std::unique_ptr<SequentialFile>> NewInflatingFile(std::unique_ptr<SequentialFile> src,
                                                           Compression c);

// Peeks up to kPeekBytes of `src` (kept and replayed, no seek), detects its
// compression, and returns the stream of uncompressed bytes.
//  - requested kAuto: uses the detected compression.
//  - requested explicit: the prefix must carry that compression's signature
//    (gzip: 1f 8b; zlib: valid 2-byte header; none: rule above detects none),
//    else InvalidArgument
//    "<file>: compression mismatch: requested gzip, file looks like none (first bytes 0a 00 ...)".
//  An empty stream matches every request.
// *detected (if not null) receives the effective compression (never kAuto).
StatusOr<std::unique_ptr<SequentialFile>> WrapForRead(std::unique_ptr<SequentialFile> src,
                                                      Compression requested, Compression* detected,
                                                      PlainFormatProbe plain_probe = nullptr);

// OpenSequentialFile(path) + WrapForRead. "-" is stdin.
StatusOr<std::unique_ptr<SequentialFile>> OpenForRead(const std::string& path, Compression requested,
                                                      Compression* detected,
                                                      PlainFormatProbe plain_probe = nullptr);

// Wraps `dst` in a compressor writing one gzip member or one zlib stream.
// kNone returns `dst` unchanged; kAuto is InvalidArgument. `level` is zlib's
// 0..9 (or -1 for its default, 6). Flush() emits a zlib sync flush (all data
// so far becomes decodable) and flushes dst; Close() finishes the stream and
// closes dst. Destroying it without Close() drops the stream (an atomic dst
// leaves no file).
StatusOr<std::unique_ptr<WritableFile>> NewDeflatingFile(std::unique_ptr<WritableFile> dst,
                                                         Compression c, int level = 6);

}  // namespace ctrain::io
