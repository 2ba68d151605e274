#include "ctrain/data/pipe_mode.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace ctrain::data {
namespace {

class PollingFile final : public io::SequentialFile {
 public:
  PollingFile(int fd, bool owned, std::string name, const std::atomic<bool>* cancel)
      : fd_(fd), owned_(owned), name_(std::move(name)), cancel_(cancel) {}
  ~PollingFile() override {
    if (owned_) close(fd_);
  }
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t got = 0;
    while (got < n && !eof_) {
      if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) return CancelledError(name_ + ": cancelled");
      pollfd p{fd_, POLLIN, 0};
      int rc = poll(&p, 1, 100);
      if (rc < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(name_, "poll", errno);
      }
      if (rc == 0) continue;  // no writer yet, or no bytes yet
      ssize_t r = read(fd_, buf + got, n - got);
      if (r > 0) {
        got += static_cast<size_t>(r);
      } else if (r == 0) {
        eof_ = true;
      } else if (errno != EINTR && errno != EAGAIN) {
        return ErrnoError(name_, "read", errno);
      }
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return name_; }
  uint64_t position() const override { return pos_; }

 private:
  int fd_;
  bool owned_;
  std::string name_;
  const std::atomic<bool>* cancel_;
  bool eof_ = false;
  uint64_t pos_ = 0;
};

}  // namespace

std::string ChannelFifoPath(const std::string& channel_spec, int64_t pass) {
  std::string prefix = channel_spec.starts_with(kPipeChannelPrefix) ? channel_spec.substr(kPipeChannelPrefix.size())
                                                                    : channel_spec;
  return prefix + "_" + std::to_string(pass);
}

Status WaitForPath(const std::string& path, int64_t timeout_ms, const std::atomic<bool>* cancel) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  struct stat st;
  while (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(path, "stat", errno);
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return CancelledError(path + ": cancelled");
    if (std::chrono::steady_clock::now() >= deadline)
      return DeadlineExceededError("pipe mode: FIFO " + path + " did not appear within " +
                                   std::to_string(timeout_ms) +
                                   " ms (SageMaker creates one FIFO <channel>_<epoch> per epoch)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputStream(const std::string& path,
                                                              const std::atomic<bool>* cancel) {
  if (path == "-") return std::unique_ptr<io::SequentialFile>(new PollingFile(0, false, "<stdin>", cancel));
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
    // O_NONBLOCK: open returns at once even without a writer; PollingFile waits.
    int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ErrnoError(path, "open", errno);
    return std::unique_ptr<io::SequentialFile>(new PollingFile(fd, true, path, cancel));
  }
  return io::OpenSequentialFile(path);
}

StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputPass(const std::string& path, int64_t pass,
                                                            int64_t timeout_ms) {
  if (!path.starts_with(kPipeChannelPrefix)) return OpenInputStream(path, nullptr);
  const std::string fifo = ChannelFifoPath(path, pass);
  CTRAIN_RETURN_IF_ERROR(WaitForPath(fifo, timeout_ms, nullptr));
  return OpenInputStream(fifo, nullptr);
}

}  // namespace ctrain::data
