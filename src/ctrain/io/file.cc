#include "ctrain/base/clock.h"
#include "ctrain/io/file.h"

#include <algorithm>

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"

namespace ctrain::io {
namespace {

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string name, int fd, bool owns, uint64_t pos = 0)
      : name_(std::move(name)), fd_(fd), owns_(owns), pos_(pos) {}
  ~PosixSequentialFile() override {
    if (owns_) ::close(fd_);
  }
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, buf + got, n - got);
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return ErrnoError(name_, "read at offset " + std::to_string(pos_ + got), errno);
      }
      if (r == 0) break;  // EOF
      got += static_cast<size_t>(r);
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return name_; }
  uint64_t position() const override { return pos_; }

 private:
  std::string name_;
  int fd_;
  bool owns_;
  uint64_t pos_ = 0;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd, uint64_t size) : name_(std::move(name)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t n) const override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, buf + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return ErrnoError(name_, "read at offset " + std::to_string(offset + got), errno);
      }
      if (r == 0) break;  // EOF
      got += static_cast<size_t>(r);
    }
    return got;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
  uint64_t size_;
};

// open(2) + fstat(2) of a regular file; the fd, or an error naming `path`.
StatusOr<int> OpenRegularFile(const std::string& path, uint64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoError(path, "stat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + ": not a regular file (a byte range of it cannot be read)");
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

class MemoryFile final : public SequentialFile {
 public:
  MemoryFile(std::string name, std::string data) : name_(std::move(name)), data_(std::move(data)) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  const std::string& name() const override { return name_; }
  uint64_t position() const override { return pos_; }

 private:
  std::string name_;
  std::string data_;
  size_t pos_ = 0;
};

// FIFOs, character devices and stdin: poll(2) in short slices, so that a
// missing or stalled writer ends in DeadlineExceeded (FIFOs) and cancellation
// is noticed (StreamWaitOptions).
class PollingFile final : public SequentialFile {
 public:
  PollingFile(int fd, bool owned, std::string name, bool fifo, StreamWaitOptions wait)
      : fd_(fd), owned_(owned), fifo_(fifo), name_(std::move(name)), wait_(std::move(wait)) {}
  ~PollingFile() override {
    if (owned_) ::close(fd_);
  }
  StatusOr<size_t> Read(char* buf, size_t n) override {
    using Clock = ::ctrain::Clock;  // base/clock.h
    constexpr int kSliceMs = 100;
    constexpr int64_t kFirstLogMs = 1000, kLogEveryMs = 5000;
    size_t got = 0;
    auto idle_since = Clock::now();  // the wait restarts with each byte and each call
    int64_t next_log_ms = kFirstLogMs;
    while (got < n && !eof_) {
      if (wait_.cancel != nullptr && wait_.cancel->load(std::memory_order_relaxed))
        return CancelledError(name_ + ": cancelled");
      if (PendingInterrupt() != 0)
        return CancelledError(name_ + ": interrupted by " + SignalName(PendingInterrupt()));
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, kSliceMs);
      if (rc < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(name_, "poll", errno);
      }
      if (rc == 0) {
        const int64_t idle_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - idle_since).count();
        const uint64_t bytes = pos_ + got;
        if (fifo_ && wait_.timeout_ms > 0 && idle_ms >= wait_.timeout_ms) {
          const std::string t = std::to_string(wait_.timeout_ms);
          if (bytes == 0)
            return DeadlineExceededError("no writer connected to " + name_ + " within " + t + " ms (pipe timeout)");
          return DeadlineExceededError("writer on " + name_ + " sent nothing for " + t + " ms (after " +
                                       std::to_string(bytes) + " bytes) (pipe timeout)");
        }
        if (idle_ms >= next_log_ms) {
          next_log_ms += kLogEveryMs;
          char line[96];
          std::snprintf(line, sizeof line, " (%.0f s, %llu bytes so far, ", idle_ms / 1000.0,
                        static_cast<unsigned long long>(bytes));
          std::string msg = "ctrain: waiting for writer on " + name_ + line;
          msg += !fifo_ || wait_.timeout_ms == 0 ? std::string("no timeout)")
                                                : "timeout " + std::to_string(wait_.timeout_ms) + " ms)";
          if (wait_.log)
            wait_.log(msg);
          else
            std::fprintf(stderr, "%s\n", msg.c_str());
        }
        continue;
      }
      const ssize_t r = ::read(fd_, buf + got, n - got);
      if (r > 0) {
        got += static_cast<size_t>(r);
        idle_since = Clock::now();
        next_log_ms = kFirstLogMs;
      } else if (r == 0) {
        eof_ = true;
      } else if (errno != EINTR && errno != EAGAIN) {
        return ErrnoError(name_, "read at offset " + std::to_string(pos_ + got), errno);
      }
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return name_; }
  uint64_t position() const override { return pos_; }

 private:
  int fd_;
  bool owned_, fifo_;
  std::string name_;
  StreamWaitOptions wait_;
  bool eof_ = false;
  uint64_t pos_ = 0;
};

std::string DirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Creates and removes a probe file in `dir`; ErrnoError(shown, what, errno) if that fails.
Status ProbeCreate(const std::string& dir, const std::string& shown, const std::string& what) {
  const std::string probe = dir + "/.ctrain-write-check." + std::to_string(::getpid());
  const int slot = RegisterTempFile(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    UnregisterTempFile(slot);
    return ErrnoError(shown, what, err);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  UnregisterTempFile(slot);
  return Status::OK();
}

// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N...: a descriptor the
// shell opened (not /dev/shm files, which are ordinary files).
bool IsDescriptorPath(const std::string& path) {
  if (path.starts_with("/proc/") || path.starts_with("/dev/fd/")) return true;
  struct stat lst;
  return path.starts_with("/dev/") && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
}

// Opens a FIFO or device for writing. A FIFO without a reader (ENXIO with
// O_NONBLOCK) is retried every 100 ms for up to kDefaultStreamTimeoutMs,
// logging after 1 s and every 5 s, then DeadlineExceeded; an interrupt ends the wait.
StatusOr<int> OpenStreamForWriting(const std::string& path, bool fifo) {
  using Clock = ::ctrain::Clock;  // base/clock.h
  const auto start = Clock::now();
  int64_t next_log_ms = 1000;
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd >= 0) {
      if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    if (!fifo || errno != ENXIO) return ErrnoError(path, "open for writing", errno);
    if (PendingInterrupt() != 0) return CancelledError(path + ": interrupted by " + SignalName(PendingInterrupt()));
    const int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (waited >= kDefaultStreamTimeoutMs)
      return DeadlineExceededError("no reader connected to " + path + " within " +
                                   std::to_string(kDefaultStreamTimeoutMs) + " ms (pipe timeout)");
    if (waited >= next_log_ms) {
      next_log_ms += 5000;
      Logf("waiting for a reader on %s (%.0f s)\n", path.c_str(), waited / 1000.0);
    }
    ::usleep(100 * 1000);
  }
}

class PosixWritableFile final : public WritableFile {
 public:
  // `slot`: the temporary's RegisterTempFile slot (-1 if none).
  PosixWritableFile(std::string name, std::string tmp, int fd, bool owns, int slot)
      : name_(std::move(name)), tmp_(std::move(tmp)), fd_(fd), owns_(owns), slot_(slot) {
    buf_.reserve(kBuf);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0 && owns_) {
      ::close(fd_);
      if (!tmp_.empty()) ::unlink(tmp_.c_str());
    }
    UnregisterTempFile(slot_);
  }
  Status Append(std::string_view d) override {
    if (buf_.size() + d.size() > kBuf) {
      CTRAIN_RETURN_IF_ERROR(Flush());
      if (d.size() >= kBuf) return WriteRaw(d);
    }
    buf_.append(d);
    return Status::OK();
  }
  Status Flush() override {
    Status s = WriteRaw(buf_);
    buf_.clear();
    return s;
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    Status s = Flush();
    if (s.ok() && !tmp_.empty() && ::fsync(fd_) != 0) s = ErrnoError(tmp_, "fsync", errno);
    if (owns_ && ::close(fd_) != 0 && s.ok()) s = ErrnoError(name_, "close", errno);
    fd_ = -1;
    if (!tmp_.empty()) {
      if (s.ok() && ::rename(tmp_.c_str(), name_.c_str()) != 0) s = ErrnoError(name_, "rename", errno);
      if (!s.ok()) ::unlink(tmp_.c_str());
    }
    UnregisterTempFile(slot_);
    slot_ = -1;
    return s;
  }
  const std::string& name() const override { return name_; }

 private:
  static constexpr size_t kBuf = 1 << 20;
  Status WriteRaw(std::string_view d) {
    const std::string& shown = tmp_.empty() ? name_ : tmp_;
    while (!d.empty()) {
      ssize_t w = ::write(fd_, d.data(), d.size());
      if (w < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return ErrnoError(shown, "write", errno);
      }
      d.remove_prefix(static_cast<size_t>(w));
    }
    return Status::OK();
  }
  std::string name_, tmp_;
  int fd_;
  bool owns_;
  int slot_;
  std::string buf_;
};

}  // namespace

StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(const std::string& path,
                                                             const StreamWaitOptions& wait) {
  if (wait.timeout_ms < 0)
    return InvalidArgumentError(path + ": pipe timeout must be >= 0 ms, got " + std::to_string(wait.timeout_ms));
  if (path == "-") return std::unique_ptr<SequentialFile>(new PollingFile(0, false, "<stdin>", false, wait));
  // O_NONBLOCK: opening the read end of a FIFO returns at once even without a
  // writer (PollingFile waits, with a deadline); regular files ignore it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(path, "open", errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + ": is a directory, expected a file");
  }
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode))
    return std::unique_ptr<SequentialFile>(new PollingFile(fd, true, path, S_ISFIFO(st.st_mode), wait));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
#ifdef POSIX_FADV_SEQUENTIAL
  if (S_ISREG(st.st_mode)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd, true));
}

StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFileAt(const std::string& path, uint64_t offset) {
  uint64_t size = 0;
  CTRAIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, &size));
  if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoError(path, "seek to offset " + std::to_string(offset), e);
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd, static_cast<off_t>(offset), 0, POSIX_FADV_SEQUENTIAL);
#endif
  return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd, true, offset));
}

StatusOr<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path) {
  uint64_t size = 0;
  CTRAIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, &size));
  return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd, size));
}

std::unique_ptr<SequentialFile> NewMemoryFile(std::string name, std::string contents) {
  return std::make_unique<MemoryFile>(std::move(name), std::move(contents));
}

StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(const std::string& path,
                                                         const WriteOptions& options) {
  if (path == "-") return std::unique_ptr<WritableFile>(new PosixWritableFile("<stdout>", "", 1, false, -1));
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    // A FIFO or device (/dev/null, /dev/stdout): written in place, never
    // replaced by a renamed regular file. A FIFO waits for its reader.
    CTRAIN_ASSIGN_OR_RETURN(int fd, OpenStreamForWriting(path, S_ISFIFO(st.st_mode)));
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, "", fd, true, -1));
  }
  if (IsDescriptorPath(path) && ::stat(path.c_str(), &st) == 0) {
    // /dev/stdout or /proc/self/fd/N redirected to a file: appended in place,
    // as the shell opened it (`>` or `>>`); nothing is created in /dev.
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return ErrnoError(path, "open for writing", errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, "", fd, true, -1));
  }
  // A symlink (e.g. /dev/stdout -> /proc/self/fd/1 -> a file) is kept: the
  // temporary goes next to its target, which the rename replaces.
  std::string dest = path;
  struct stat lst;
  if (options.atomic && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) dest = resolved;
  }
  std::string tmp = options.atomic ? dest + ".tmp." + std::to_string(::getpid()) : std::string();
  const std::string& target = options.atomic ? tmp : path;
  // Registered before it exists, so that no interrupt can leave it behind.
  const int slot = options.atomic ? RegisterTempFile(tmp) : -1;
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    UnregisterTempFile(slot);
    return ErrnoError(target, "open for writing", err);
  }
  return std::unique_ptr<WritableFile>(new PosixWritableFile(dest, tmp, fd, true, slot));
}

Status CheckOutputWritable(std::string_view flag, const std::string& path) {
  if (path.empty() || path == "-") return Status::OK();
  const std::string f(flag);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return InvalidArgumentError(f + " " + path + ": is a directory, not a file");
  if (::stat(path.c_str(), &st) == 0 &&
      (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || IsDescriptorPath(path))) {
    // Written in place (OpenWritableFile): no file is created next to it.
    if (::access(path.c_str(), W_OK) != 0) return ErrnoError(path, f + ": cannot write", errno);
    return Status::OK();
  }
  std::string dir = DirOf(path);
  struct stat lst;
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {  // written next to the link's target
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) dir = DirOf(resolved);
  }
  if (::stat(dir.c_str(), &st) != 0)
    return ErrnoError(path, f + ": its directory '" + dir + "' cannot be used", errno);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(path + ": " + f + ": '" + dir + "' is not a directory");
  // A real probe (access() says yes to root on a read-only file system): the
  // atomic write later creates a temporary file in the same directory.
  return ProbeCreate(dir, path, f + ": cannot create files in its directory '" + dir + "'");
}

Status CheckDirWritable(std::string_view flag, const std::string& dir) {
  const std::string f(flag);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError(dir, f + ": cannot use the directory", errno);
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(dir + ": " + f + ": not a directory");
  return ProbeCreate(dir, dir, f + ": cannot create files in the directory");
}

namespace {

// What a path names, for CheckOutputsAreNotInputs: an existing file by its
// st_dev/st_ino; a file not yet created by its directory's and its name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // "" for an existing file
  bool operator==(const FileId&) const = default;
};

bool NeverCompared(const std::string& path) { return path.empty() || path == "-" || path.starts_with("pipe:"); }

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<FileId> DirId(const std::string& path) {
  struct stat st;
  if (::stat(DirOf(path).c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino, ""};
}

// The file `path` is or would be; nullopt for a character device or an unusable path.
std::optional<FileId> IdOf(const std::string& path, bool* is_dir = nullptr) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (is_dir != nullptr) *is_dir = S_ISDIR(st.st_mode);
    if (S_ISCHR(st.st_mode)) return std::nullopt;
    return FileId{st.st_dev, st.st_ino, ""};
  }
  std::optional<FileId> dir = DirId(path);
  if (dir) dir->name = BaseName(path);
  return dir;
}

// Input patterns as files: a glob is expanded; others are kept (directories
// are handled by the caller).
std::vector<std::string> ExpandInput(const std::string& pattern) {
  struct stat st;
  if (::stat(pattern.c_str(), &st) == 0 || pattern.find_first_of("*?[") == std::string::npos) return {pattern};
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

std::string Named(const FlagPath& f) { return f.flag + " " + f.path; }

}  // namespace

Status CheckOutputsAreNotInputs(const std::vector<FlagPath>& inputs, const std::vector<FlagPath>& outputs,
                                const std::vector<OutputDir>& output_dirs) {
  struct Input {
    FlagPath given;  // flag and the path (a glob's match)
    FileId id;
    bool dir;
  };
  std::vector<Input> in;
  for (const FlagPath& f : inputs) {
    if (NeverCompared(f.path)) continue;
    for (const std::string& p : ExpandInput(f.path)) {
      bool dir = false;
      std::optional<FileId> id = IdOf(p, &dir);
      if (id && id->name.empty()) in.push_back({{f.flag, p}, *id, dir});  // only existing inputs
    }
  }
  std::vector<std::pair<FlagPath, FileId>> seen_out;
  for (const FlagPath& o : outputs) {
    if (NeverCompared(o.path)) continue;
    const std::optional<FileId> id = IdOf(o.path);
    if (!id) continue;
    const std::optional<FileId> parent = DirId(o.path);
    for (const Input& i : in) {
      if (!i.dir && i.id == *id)
        return InvalidArgumentError(Named(o) + " is the same file as " + Named(i.given) +
                                    ": writing it would destroy the input (choose another output path)");
      if (i.dir && (i.id == *id || (parent && i.id == *parent)))
        return InvalidArgumentError(Named(o) + " is inside the input directory " + Named(i.given) +
                                    ": writing it would change the input (choose a path outside it)");
    }
    for (const auto& [other, other_id] : seen_out)
      if (other_id == *id)
        return InvalidArgumentError(Named(o) + " and " + Named(other) +
                                    " are the same file: one output would overwrite the other");
    seen_out.emplace_back(o, *id);
  }
  for (const OutputDir& d : output_dirs) {
    if (NeverCompared(d.dir)) continue;
    struct stat st;
    if (::stat(d.dir.c_str(), &st) != 0) continue;
    const FileId dir{st.st_dev, st.st_ino, ""};
    for (const Input& i : in) {
      const std::optional<FileId> parent = DirId(i.given.path);
      if (i.id == dir)
        return InvalidArgumentError(Named(i.given) + " is the directory " + d.flag + " " + d.dir +
                                    " writes into: its files would be read as input (use separate directories)");
      if (!i.dir && parent && *parent == dir && d.writes && d.writes(BaseName(i.given.path)))
        return InvalidArgumentError(Named(i.given) + " is a file that " + d.flag + " " + d.dir +
                                    " writes: writing it would destroy the input (choose another name or directory)");
    }
  }
  return Status::OK();
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(auto f, OpenSequentialFile(path));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(size_t n, f->Read(buf, sizeof(buf)));
    out.append(buf, n);
    if (n < sizeof(buf)) break;
  }
  return out;
}

Status WriteStringToFileAtomic(const std::string& path, std::string_view contents) {
  CTRAIN_ASSIGN_OR_RETURN(auto f, OpenWritableFile(path, WriteOptions{.atomic = true}));
  CTRAIN_RETURN_IF_ERROR(f->Append(contents));
  return f->Close();
}

LineReader::LineReader(SequentialFile* file, size_t buffer_size, size_t max_line_bytes)
    : file_(file), max_line_bytes_(max_line_bytes < 1 ? 1 : max_line_bytes) {
  buf_.resize(std::max<size_t>(1, std::min(buffer_size, max_line_bytes_ + 1)));
}

Status LineReader::CheckNoBom(std::string_view first_line) const {
  if (!first_line.starts_with("\xEF\xBB\xBF")) return Status::OK();
  return InvalidArgumentError(file_->name() +
                              ":1: file starts with a UTF-8 byte-order mark (bytes EF BB BF); remove it "
                              "(e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)");
}

Status LineReader::TooLong() const {
  const std::string n = std::to_string(max_line_bytes_);
  return InvalidArgumentError(file_->name() + ":" + std::to_string(line_number_ + 1) + ": line longer than " + n +
                              " bytes (no newline within " + n + " bytes; raise --max-line-bytes if it is real)");
}

void LineReader::StartAt(uint64_t offset, uint64_t lines_before, uint64_t stop_offset) {
  consumed_ = offset;
  consumed_start_ = offset;
  line_number_ = lines_before;
  stop_ = stop_offset;
}

StatusOr<bool> LineReader::Next(std::string_view* line) {
  for (;;) {
    if (consumed_ + begin_ >= stop_) return false;  // the next line starts in the next range
    const char* nl = static_cast<const char*>(std::memchr(buf_.data() + begin_, '\n', end_ - begin_));
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(nl - (buf_.data() + begin_));
      if (len > max_line_bytes_) return TooLong();
      if (line_number_ == 0 && consumed_start_ == 0) CTRAIN_RETURN_IF_ERROR(CheckNoBom(std::string_view(buf_.data() + begin_, len)));
      *line = std::string_view(buf_.data() + begin_, len);
      line_offset_ = consumed_ + begin_;
      begin_ += len + 1;
      ++line_number_;
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      if (end_ - begin_ > max_line_bytes_) return TooLong();
      if (line_number_ == 0 && consumed_start_ == 0) CTRAIN_RETURN_IF_ERROR(CheckNoBom(std::string_view(buf_.data() + begin_, end_ - begin_)));
      *line = std::string_view(buf_.data() + begin_, end_ - begin_);
      line_offset_ = consumed_ + begin_;
      begin_ = end_;
      ++line_number_;
      unterminated_ = true;
      return true;
    }
    // Compact, grow if a single line fills the buffer, then refill.
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      consumed_ += begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ > max_line_bytes_) return TooLong();  // no '\n' within max_line_bytes + 1 bytes
    if (end_ == buf_.size()) buf_.resize(std::min(buf_.size() * 2, max_line_bytes_ + 1));
    size_t want = buf_.size() - end_;
    if (stop_ != UINT64_MAX) {  // a range: read up to its end, then only what completes the last line
      const uint64_t at = consumed_ + end_;
      want = std::min<uint64_t>(want, at < stop_ ? stop_ - at : uint64_t{4} << 10);
    }
    CTRAIN_ASSIGN_OR_RETURN(size_t n, file_->Read(buf_.data() + end_, want));
    if (n < want) eof_ = true;
    end_ += n;
  }
}

}  // namespace ctrain::io
