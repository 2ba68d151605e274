// Files: every byte ctrain reads or writes goes through these classes, so tests
// can use in-memory files and pipes/FIFOs/stdin work like regular files.
//
// Errors name the path and the OS error (see ErrnoError). Short reads from pipes
// and EINTR are retried, so Read() returns fewer than n bytes only at EOF.
//
// Thread safety: a file object is used by one thread at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// Default of StreamWaitOptions::timeout_ms (and of --pipe-timeout-ms).
inline constexpr int64_t kDefaultStreamTimeoutMs = 60000;

// How reads from a FIFO (named pipe), a character device or stdin wait.
// These are opened with O_NONBLOCK and read with poll(2) in 100 ms slices, so
// no open(2) or read(2) ever blocks for good: a FIFO whose writer never
// connects, or stops sending, ends in DeadlineExceeded:
//   "no writer connected to <fifo> within <N> ms (pipe timeout)"
//   "writer on <fifo> sent nothing for <N> ms (after <B> bytes) (pipe timeout)"
// (A writer that connects but sends nothing reads as "no writer connected":
// poll(2) cannot tell the two apart.) Meanwhile a line
//   "ctrain: waiting for writer on <fifo> (<s> s, ...)"
// goes to `log` after 1 s of waiting and every 5 s after that.
// The timeout counts only time spent inside Read() with no byte arriving, so a
// slow consumer never trips it. stdin has no timeout (its writer is the
// caller's own pipeline, which ends it with EOF) but is cancellable.
struct StreamWaitOptions {
  // FIFOs: longest wait in ms for a writer to connect, and then for the next
  // byte. 0 = no limit (wait and log until cancelled). Must be >= 0.
  int64_t timeout_ms = kDefaultStreamTimeoutMs;
  // When it becomes true (checked every 100 ms), Read returns Cancelled
  // "<name>: cancelled". A pending interrupt (base/signals.h) does the same.
  const std::atomic<bool>* cancel = nullptr;
  // Receives the "waiting for writer" lines; null = stderr.
  std::function<void(const std::string&)> log;
};

// Opens `path` for sequential reading. "-" means standard input.
// Errors: NotFound, PermissionDenied, InvalidArgument (a directory), Unavailable;
// reads from a FIFO: DeadlineExceeded, Cancelled (see StreamWaitOptions).
StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(const std::string& path,
                                                             const StreamWaitOptions& wait = {});

// Opens the regular file `path` for sequential reading from byte `offset`
// (a byte-range split, data/record_index.h). position() counts from 0 as for
// OpenSequentialFile, so it starts at `offset`. Errors: those of
// OpenSequentialFile; InvalidArgument when `path` is not a regular file.
StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFileAt(const std::string& path, uint64_t offset);

// Positional reads of a regular file (pread(2)), for walking record headers
// without reading the payloads between them.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at `offset` into buf; fewer than n only at end of file.
  // Errors: ErrnoError naming the path and the offset.
  virtual StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t n) const = 0;
  virtual uint64_t size() const = 0;  // at open
  virtual const std::string& name() const = 0;
};
// Errors: those of open(2)/fstat(2) naming the path; InvalidArgument when it is
// not a regular file.
StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path);

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
  // file behind in atomic mode, and neither does an interrupt (the temporary
  // is registered with base/signals.h while it exists).
  virtual Status Close() = 0;
  virtual const std::string& name() const = 0;
};

struct WriteOptions {
  // Write to "<path>.tmp.<pid>" and rename on Close(): a crash never leaves a
  // half-written file at `path` (checkpoints, converters).
  bool atomic = false;
};

// Creates/truncates `path`. "-" means standard output (atomic is ignored). An
// existing FIFO or character device (/dev/null, /dev/stdout, a named pipe) is
// written in place, never replaced (atomic is ignored; /dev/stdout, /dev/fd/N
// or /proc/self/fd/N redirected to a file is appended to); a FIFO waits up to
// kDefaultStreamTimeoutMs for a reader (DeadlineExceeded "no reader connected
// to <fifo> within 60000 ms (pipe timeout)"). An atomic write through a
// symlink replaces the link's target and keeps the link.
StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(const std::string& path,
                                                         const WriteOptions& options = {});

// Fails now, before any work, when `path` (given with `flag`, e.g. "--output")
// could not be written at the end: its directory must exist and accept a new
// file (a real create + unlink of a probe file, which also catches a
// read-only file system or missing permissions, even for root), and `path`
// must not be a directory. "-" (stdout) and "" always pass.
// Errors: InvalidArgument (a directory), FailedPrecondition (the parent is not
// a directory), ErrnoError naming the path, the flag and the OS error.
Status CheckOutputWritable(std::string_view flag, const std::string& path);
// Same for a directory that files will be created in (--model-dir): it must
// exist and accept a new file. Errors name `flag`, the directory and the OS error.
Status CheckDirWritable(std::string_view flag, const std::string& dir);

// A path named on the command line and the flag that named it ("--train", "-o").
struct FlagPath {
  std::string flag;
  std::string path;
};

// A directory an output writes files into (--model-dir) and which of its
// file names it writes (e.g. "checkpoint", "ckpt-*.bin").
struct OutputDir {
  std::string flag;
  std::string dir;
  std::function<bool(std::string_view name)> writes;
};

// Fails now, before any work, when an output would overwrite an input or
// another output: two paths are the same file when stat(2) gives the same
// st_dev/st_ino (so symlinks, hard links, "./a" and "a" are caught); an output
// that does not exist yet is identified by its directory's st_dev/st_ino and
// its name. An input that is a directory holds every file in it, and a glob
// ("*?[") every file it matches, so an output inside an input directory is
// refused too. For each of `output_dirs`, an input that is that directory, or
// a file in it with a name it writes, is refused. "-", "" and "pipe:" paths,
// and character devices (/dev/null), are never compared.
// Errors: InvalidArgument naming both flags and paths, e.g. "--cache a is the
// same file as --train a: writing it would destroy the input (...)".
Status CheckOutputsAreNotInputs(const std::vector<FlagPath>& inputs, const std::vector<FlagPath>& outputs,
                                const std::vector<OutputDir>& output_dirs = {});

// Whole-file helpers.
StatusOr<std::string> ReadFileToString(const std::string& path);
Status WriteStringToFileAtomic(const std::string& path, std::string_view contents);

// Longest text line (without its '\n') any text reader accepts by default:
// 64 MiB (--max-line-bytes). A longer line, or a stream with no newline within
// that many bytes (/dev/zero, a binary file read as text), is an error, never
// an unbounded buffer.
inline constexpr size_t kDefaultMaxLineBytes = size_t{64} << 20;

// Buffered reader with line access on top of a SequentialFile (LibSVM, Criteo TSV).
// Memory: the buffer grows to fit a line, up to max_line_bytes + 1 bytes.
class LineReader {
 public:
  explicit LineReader(SequentialFile* file, size_t buffer_size = 1 << 20,
                      size_t max_line_bytes = kDefaultMaxLineBytes);
  // Sets *line to the next line without its '\n' (a trailing '\r' is kept; the
  // text parsers treat it as whitespace). Returns false at EOF. The view stays
  // valid until the next call. A last line without '\n' is returned as a line.
  // A line longer than max_line_bytes is InvalidArgument
  //   "<file>:<line>: line longer than N bytes (no newline within N bytes; --max-line-bytes)"
  // A first line starting with a UTF-8 byte-order mark (EF BB BF) is
  // InvalidArgument "<file>:1: file starts with a UTF-8 byte-order mark ...":
  // no text format has one, and it would corrupt the first label or cell.
  // (Errors are not sticky: callers stop at the first one.)
  StatusOr<bool> Next(std::string_view* line);
  // Reading a byte range (a split of one file): the stream given to the
  // constructor starts at stream offset `offset`, which lies on line
  // `lines_before` + 1 (lines_before = newlines before `offset`); Next returns
  // no line that starts at or after `stop_offset` (false instead), and reads
  // past it only the bytes that complete the line crossing it (in 4 KiB
  // reads). Call before the
  // first Next. (The BOM check applies to line 1 only.)
  void StartAt(uint64_t offset, uint64_t lines_before, uint64_t stop_offset);
  // 1-based number of the line last returned.
  uint64_t line_number() const { return line_number_; }
  // Byte offset (in the stream) of the first byte of the line last returned.
  uint64_t line_offset() const { return line_offset_; }
  // True when the line last returned ended at EOF without '\n': the file may
  // have been cut mid-line (a torn tail), so readers count it.
  bool last_line_unterminated() const { return unterminated_; }

 private:
  Status TooLong() const;
  Status CheckNoBom(std::string_view first_line) const;

  SequentialFile* file_;
  size_t max_line_bytes_;
  std::string buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
  uint64_t consumed_ = 0;  // stream offset of buf_[0]
  uint64_t stop_ = UINT64_MAX;  // StartAt's stop_offset
  uint64_t consumed_start_ = 0;  // StartAt's offset: the BOM check needs the file's first byte
  bool unterminated_ = false;
};

}  // namespace ctrain::io
