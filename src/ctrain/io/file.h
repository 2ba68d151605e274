// Files: every byte ctrain reads or writes goes through these classes, so tests
// can use in-memory files and pipes/FIFOs/stdin work like regular files.
//
// Errors name the path and the OS error (see ErrnoError). Short reads from pipes
// and EINTR are retried, so Read() returns fewer than n bytes only at EOF.
//
// Thread safety: a file object is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::io {

// A byte stream read front to back (regular file, FIFO, stdin, memory, decompressor).
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into buf. Returns the number read; fewer than n only at
  // end of stream (0 = EOF). Never returns a short count mid-stream.
  virtual StatusOr<size_t> Read(char* buf, size_t n) = 0;
  // Name used in error messages (the path, "<stdin>", or a test label).
  virtual const std::string& name() const = 0;
  // Bytes consumed from this stream so far.
  virtual uint64_t position() const = 0;
};

// Opens `path` for sequential reading. "-" means standard input.
// Errors: NotFound, PermissionDenied, InvalidArgument (a directory), Unavailable.
StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(const std::string& path);

// A stream over bytes held in memory (the file keeps its own copy).
std::unique_ptr<SequentialFile> NewMemoryFile(std::string name, std::string contents);

// An append-only sink.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  virtual Status Flush() = 0;
  // Flushes and closes; for a file opened with `atomic`, fsyncs and renames the
  // temporary into place. A WritableFile destroyed without Close() leaves no
  // file behind in atomic mode.
  virtual Status Close() = 0;
  virtual const std::string& name() const = 0;
};

struct WriteOptions {
  // Write to "<path>.tmp.<pid>" and rename on Close(): a crash never leaves a
  // half-written file at `path` (checkpoints, converters).
  bool atomic = false;
};

// Creates/truncates `path`. "-" means standard output (atomic is ignored).
StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(const std::string& path,
                                                         const WriteOptions& options = {});

// Whole-file helpers.
StatusOr<std::string> ReadFileToString(const std::string& path);
Status WriteStringToFileAtomic(const std::string& path, std::string_view contents);

// Buffered reader with line access on top of a SequentialFile (LibSVM, Criteo TSV).
class LineReader {
 public:
  explicit LineReader(SequentialFile* file, size_t buffer_size = 1 << 20);
  // Sets *line to the next line without its '\n' (a trailing '\r' is kept; the
  // text parsers treat it as whitespace). Returns false at EOF. The view stays
  // valid until the next call. A last line without '\n' is returned as a line.
  StatusOr<bool> Next(std::string_view* line);
  // 1-based number of the line last returned.
  uint64_t line_number() const { return line_number_; }
  // Byte offset (in the stream) of the first byte of the line last returned.
  uint64_t line_offset() const { return line_offset_; }
  // True when the line last returned ended at EOF without '\n': the file may
  // have been cut mid-line (a torn tail), so readers count it.
  bool last_line_unterminated() const { return unterminated_; }

 private:
  SequentialFile* file_;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
  uint64_t consumed_ = 0;  // stream offset of buf_[0]
  bool unterminated_ = false;
};

}  // namespace ctrain::io
