#include "ctrain/service/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/endian.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::service {
namespace {

constexpr uint64_t kFramingBytes = io::kTFRecordHeaderBytes + io::kTFRecordFooterBytes;

// Closes a file descriptor on scope exit unless released.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string Join(const std::string& dir, const char* name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "write", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status SyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(dir, "open directory for fsync", errno);
  if (::fsync(fd.get()) != 0) return ErrnoError(dir, "fsync directory", errno);
  return Status::OK();
}

// Reads the whole file behind `fd` (its size may differ from what fstat said).
Status ReadAll(int fd, const std::string& path, std::string* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError(path + ": the journal is not a regular file");
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    if (got == out->size()) out->resize(std::max<size_t>(4096, 2 * out->size()));
    const ssize_t n = ::pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "read", errno);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  return Status::OK();
}

// Takes the directory lock; on contention names the holder's pid.
StatusOr<int> LockDir(const std::string& dir) {
  const std::string path = Join(dir, kJournalLockFileName);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError(path, "open the lock file", errno);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    if (err != EWOULDBLOCK) return ErrnoError(path, "flock", err);
    std::string holder;
    ReadAll(fd.get(), path, &holder).IgnoreError();  // best effort, for the message only
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    if (holder.rfind("pid ", 0) != 0 || holder.size() > 32) holder = "holder not recorded yet";
    return FailedPreconditionError(dir + ": journal directory is in use by another process (" + holder + " holds " +
                                   path + "); stop it or use another work directory");
  }
  const std::string text = "pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0) return ErrnoError(path, "write the lock file", errno);
  if (::pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return ErrnoError(path, "write the lock file", errno);
  return fd.release();
}

std::string Where(const std::string& path, uint64_t index, uint64_t offset) {
  return path + ": record " + std::to_string(index) + " at offset " + std::to_string(offset) + ": ";
}

Status Corrupt(const std::string& path, uint64_t index, uint64_t offset, const std::string& what) {
  return DataLossError(Where(path, index, offset) + what + " (" + std::to_string(index) +
                       " intact records precede it; the file is left as is: truncating it to " +
                       std::to_string(offset) + " bytes drops this record and all after it)");
}

// Parses `data` (the whole journal). On success *valid_end is the end of the
// last intact record; bytes after it are a torn tail.
Status Parse(std::string_view data, const std::string& path, std::vector<std::string>* records,
             uint64_t* valid_end, uint64_t* count) {
  uint64_t off = 0, index = 0;
  const uint64_t n = data.size();
  while (n - off >= io::kTFRecordHeaderBytes) {
    const char* h = data.data() + off;
    if (io::MaskCrc(io::Crc32c(h, 8)) != io::DecodeLE32(h + 8)) {
      return Corrupt(path, index, off, "corrupted record: length crc mismatch");
    }
    const uint64_t len = io::DecodeLE64(h);
    if (len > kMaxJournalRecordBytes) {
      return Corrupt(path, index, off,
                     "corrupted record: length " + std::to_string(len) + " exceeds the limit of " +
                         std::to_string(kMaxJournalRecordBytes) + " bytes");
    }
    if (n - off - io::kTFRecordHeaderBytes < len + io::kTFRecordFooterBytes) break;  // torn tail
    const char* payload = h + io::kTFRecordHeaderBytes;
    if (io::MaskCrc(io::Crc32c(payload, len)) != io::DecodeLE32(payload + len)) {
      return Corrupt(path, index, off, "corrupted record: data crc mismatch");
    }
    if (records != nullptr) records->emplace_back(payload, len);
    off += kFramingBytes + len;
    ++index;
  }
  *valid_end = off;
  *count = index;
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<Journal>> Journal::Open(const std::string& dir, std::vector<std::string>* records,
                                                 JournalOpenInfo* info) {
  if (dir.empty()) return InvalidArgumentError("journal: empty directory name");
  std::error_code ec;
  const bool created_dir = std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoError(dir, "create the journal directory", ec.value());
  if (created_dir) {
    // Make the new directory's own entry durable.
    std::filesystem::path parent = std::filesystem::path(dir).lexically_normal().parent_path();
    CTRAIN_RETURN_IF_ERROR(SyncDir(parent.empty() ? "." : parent.string()));
  }

  CTRAIN_ASSIGN_OR_RETURN(const int lock, LockDir(dir));
  UniqueFd lock_fd(lock);

  // A compaction that did not reach its rename: the journal is the old one.
  JournalOpenInfo found;
  const std::string temp = Join(dir, kJournalTempFileName);
  if (::unlink(temp.c_str()) == 0) {
    found.removed_temp = true;
  } else if (errno != ENOENT) {
    return ErrnoError(temp, "remove the temporary journal of an interrupted compaction", errno);
  }

  const std::string path = Join(dir, kJournalFileName);
  bool created = false;
  int raw_fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (raw_fd < 0 && errno == ENOENT) {
    raw_fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    created = true;
  }
  if (raw_fd < 0) return ErrnoError(path, "open the journal", errno);
  UniqueFd fd(raw_fd);

  std::string data;
  CTRAIN_RETURN_IF_ERROR(ReadAll(fd.get(), path, &data));
  std::vector<std::string> replayed;
  uint64_t valid_end = 0, count = 0;
  CTRAIN_RETURN_IF_ERROR(Parse(data, path, records != nullptr ? &replayed : nullptr, &valid_end, &count));

  if (valid_end < data.size()) {
    found.torn_tail_offset = valid_end;
    found.torn_tail_bytes = data.size() - valid_end;
    if (::ftruncate(fd.get(), static_cast<off_t>(valid_end)) != 0) {
      return ErrnoError(path, "truncate the torn tail at offset " + std::to_string(valid_end), errno);
    }
    if (::fdatasync(fd.get()) != 0) return ErrnoError(path, "fdatasync", errno);
  }
  if (created || found.removed_temp) CTRAIN_RETURN_IF_ERROR(SyncDir(dir));

  found.records = count;
  found.bytes = valid_end;
  if (info != nullptr) *info = found;
  if (records != nullptr) std::move(replayed.begin(), replayed.end(), std::back_inserter(*records));
  return std::unique_ptr<Journal>(new Journal(dir, lock_fd.release(), fd.release(), valid_end, count));
}

Journal::Journal(std::string dir, int lock_fd, int fd, uint64_t bytes, uint64_t records)
    : dir_(std::move(dir)),
      path_(Join(dir_, kJournalFileName)),
      lock_fd_(lock_fd),
      fd_(fd),
      bytes_(bytes),
      records_(records) {}

Journal::~Journal() {
  ::close(fd_);
  ::close(lock_fd_);  // releases the flock
}

Status Journal::CheckUsable() const {
  if (broken_.ok()) return Status::OK();
  return FailedPreconditionError(path_ + ": journal refuses writes after an earlier write error (" +
                                 broken_.ToString() + "); reopen it to replay what reached the disk");
}

Status Journal::Append(std::string_view payload) {
  if (payload.size() > kMaxJournalRecordBytes) {
    return InvalidArgumentError(path_ + ": journal record of " + std::to_string(payload.size()) +
                                " bytes exceeds the limit of " + std::to_string(kMaxJournalRecordBytes) + " bytes");
  }
  std::string record;
  record.reserve(payload.size() + kFramingBytes);
  io::AppendTFRecord(&record, payload);  // CRCs outside the lock

  MutexLock lock(mu_);
  CTRAIN_RETURN_IF_ERROR(CheckUsable());
  Status s = WriteAll(fd_, record.data(), record.size(), path_);
  if (s.ok() && ::fdatasync(fd_) != 0) s = ErrnoError(path_, "fdatasync", errno);
  if (!s.ok()) {
    broken_ = s;
    return s;
  }
  bytes_ += record.size();
  ++records_;
  return Status::OK();
}

Status Journal::Rewrite(const std::vector<std::string>& records) {
  uint64_t total = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].size() > kMaxJournalRecordBytes) {
      return InvalidArgumentError(path_ + ": rewrite record " + std::to_string(i) + " of " +
                                  std::to_string(records[i].size()) + " bytes exceeds the limit of " +
                                  std::to_string(kMaxJournalRecordBytes) + " bytes");
    }
    total += records[i].size() + kFramingBytes;
  }

  MutexLock lock(mu_);
  CTRAIN_RETURN_IF_ERROR(CheckUsable());
  const std::string temp = Join(dir_, kJournalTempFileName);
  UniqueFd fd(::open(temp.c_str(), O_RDWR | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoError(temp, "create", errno);
  // Before the rename, any failure leaves the old journal in place and usable.
  auto abandon = [&](Status s) {
    ::close(fd.release());
    ::unlink(temp.c_str());
    return s;
  };
  constexpr size_t kChunkBytes = size_t{4} << 20;
  std::string buf;
  for (size_t i = 0; i < records.size(); ++i) {
    io::AppendTFRecord(&buf, records[i]);
    if (buf.size() >= kChunkBytes || i + 1 == records.size()) {
      Status s = WriteAll(fd.get(), buf.data(), buf.size(), temp);
      if (!s.ok()) return abandon(s);
      buf.clear();
    }
  }
  if (::fsync(fd.get()) != 0) return abandon(ErrnoError(temp, "fsync", errno));
  if (::rename(temp.c_str(), path_.c_str()) != 0) return abandon(ErrnoError(path_, "rename " + temp + " to", errno));

  // The new file is the journal now; until the directory is synced a crash may
  // still bring back the old one, so a failure here breaks the journal.
  ::close(fd_);
  fd_ = fd.release();
  bytes_ = total;
  records_ = records.size();
  Status s = SyncDir(dir_);
  if (!s.ok()) broken_ = s;
  return s;
}

uint64_t Journal::bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

uint64_t Journal::records() const {
  MutexLock lock(mu_);
  return records_;
}

}  // namespace ctrain::service
