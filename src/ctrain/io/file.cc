#include "ctrain/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ctrain::io {
namespace {

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string name, int fd, bool owns) : name_(std::move(name)), fd_(fd), owns_(owns) {}
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

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string name, std::string tmp, int fd, bool owns)
      : name_(std::move(name)), tmp_(std::move(tmp)), fd_(fd), owns_(owns) {
    buf_.reserve(kBuf);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0 && owns_) {
      ::close(fd_);
      if (!tmp_.empty()) ::unlink(tmp_.c_str());
    }
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
  std::string buf_;
};

}  // namespace

StatusOr<std::unique_ptr<SequentialFile>> OpenSequentialFile(const std::string& path) {
  if (path == "-") return std::unique_ptr<SequentialFile>(new PosixSequentialFile("<stdin>", 0, false));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "open", errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + ": is a directory, expected a file");
  }
#ifdef POSIX_FADV_SEQUENTIAL
  if (S_ISREG(st.st_mode)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd, true));
}

std::unique_ptr<SequentialFile> NewMemoryFile(std::string name, std::string contents) {
  return std::make_unique<MemoryFile>(std::move(name), std::move(contents));
}

StatusOr<std::unique_ptr<WritableFile>> OpenWritableFile(const std::string& path,
                                                         const WriteOptions& options) {
  if (path == "-") return std::unique_ptr<WritableFile>(new PosixWritableFile("<stdout>", "", 1, false));
  std::string tmp = options.atomic ? path + ".tmp." + std::to_string(::getpid()) : std::string();
  const std::string& target = options.atomic ? tmp : path;
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(target, "open for writing", errno);
  return std::unique_ptr<WritableFile>(new PosixWritableFile(path, tmp, fd, true));
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

LineReader::LineReader(SequentialFile* file, size_t buffer_size) : file_(file) {
  buf_.resize(buffer_size);
}

StatusOr<bool> LineReader::Next(std::string_view* line) {
  for (;;) {
    const char* nl = static_cast<const char*>(std::memchr(buf_.data() + begin_, '\n', end_ - begin_));
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(nl - (buf_.data() + begin_));
      *line = std::string_view(buf_.data() + begin_, len);
      line_offset_ = consumed_ + begin_;
      begin_ += len + 1;
      ++line_number_;
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
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
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    CTRAIN_ASSIGN_OR_RETURN(size_t n, file_->Read(buf_.data() + end_, buf_.size() - end_));
    if (n < buf_.size() - end_) eof_ = true;
    end_ += n;
  }
}

}  // namespace ctrain::io
