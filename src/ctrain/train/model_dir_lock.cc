#include "ctrain/train/model_dir_lock.h"
#include "ctrain/base/log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

namespace ctrain::train {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string SelfCommandLine() {
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && s.size() < 4096) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  return s;
}

// The holder as recorded in the lock file, for the error message.
std::string DescribeHolder(int fd) {
  std::string text;
  char buf[4096];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    off += n;
    if (text.size() > 65536) break;
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "holder not recorded yet";
  std::string s = "pid " + std::to_string(j.value("pid", int64_t{-1})) + " on host " + j.value("host", "?") +
                  ", started " + j.value("started", "?");
  const std::string cmd = j.value("command", "");
  if (!cmd.empty()) s += ": " + cmd;
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<ModelDirLock>> ModelDirLock::Acquire(const std::string& model_dir,
                                                              const std::string& command) {
  const std::string path =
      model_dir.empty() || model_dir.back() == '/' ? model_dir + kModelDirLockName : model_dir + "/" + kModelDirLockName;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(path, "--model-dir: cannot create the lock file", errno);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    if (err == EWOULDBLOCK) {
      const std::string holder = DescribeHolder(fd);
      ::close(fd);
      return FailedPreconditionError(model_dir + ": model directory is in use by another training (" + holder +
                                     "); wait for it to finish or use another --model-dir");
    }
    if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
      // A file system without flock (some network mounts): train unguarded rather than not at all.
      Warnf("%s: cannot lock (%s); make sure no other training uses %s\n",
                   path.c_str(), std::strerror(err), model_dir.c_str());
      break;
    }
    ::close(fd);
    return ErrnoError(path, "--model-dir: lock", err);
  }
  nlohmann::json j{{"pid", static_cast<int64_t>(::getpid())}, {"host", HostName()}, {"started", UtcNow()},
                   {"command", command.empty() ? SelfCommandLine() : command}};
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  Status s;
  if (::ftruncate(fd, 0) != 0) s = ErrnoError(path, "--model-dir: write the lock file", errno);
  if (s.ok() && ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    s = ErrnoError(path, "--model-dir: write the lock file", errno);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  return std::unique_ptr<ModelDirLock>(new ModelDirLock(path, fd));
}

ModelDirLock::~ModelDirLock() {
  ::close(fd_);  // releases the flock
}

}  // namespace ctrain::train
