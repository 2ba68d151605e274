#include "ctrain/base/clock.h"
#include "ctrain/data/pipe_mode.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"

namespace ctrain::data {

std::string ChannelFifoPath(const std::string& channel_spec, int64_t pass) {
  std::string prefix = channel_spec.starts_with(kPipeChannelPrefix) ? channel_spec.substr(kPipeChannelPrefix.size())
                                                                    : channel_spec;
  return prefix + "_" + std::to_string(pass);
}

Status WaitForPath(const std::string& path, int64_t timeout_ms, const std::atomic<bool>* cancel) {
  if (timeout_ms < 0) return InvalidArgumentError("pipe timeout must be >= 0 ms, got " + std::to_string(timeout_ms));
  using Clock = ::ctrain::Clock;  // base/clock.h
  const auto start = Clock::now();
  int64_t next_log_ms = 1000;
  struct stat st;
  while (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(path, "stat", errno);
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return CancelledError(path + ": cancelled");
    if (PendingInterrupt() != 0) return CancelledError(path + ": interrupted by " + SignalName(PendingInterrupt()));
    const int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (timeout_ms > 0 && waited >= timeout_ms)
      return DeadlineExceededError("pipe mode: FIFO " + path + " did not appear within " +
                                   std::to_string(timeout_ms) +
                                   " ms (SageMaker creates one FIFO <channel>_<epoch> per epoch)");
    if (waited >= next_log_ms) {
      next_log_ms += 5000;
      Logf("waiting for FIFO %s to appear (%.0f s, %s)\n", path.c_str(), waited / 1000.0,
                   timeout_ms > 0 ? ("timeout " + std::to_string(timeout_ms) + " ms").c_str() : "no timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputStream(const std::string& path,
                                                              const std::atomic<bool>* cancel, int64_t timeout_ms) {
  io::StreamWaitOptions wait;
  wait.timeout_ms = timeout_ms;
  wait.cancel = cancel;
  return io::OpenSequentialFile(path, wait);
}

StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputPass(const std::string& path, int64_t pass,
                                                            int64_t timeout_ms) {
  if (!path.starts_with(kPipeChannelPrefix)) return OpenInputStream(path, nullptr, timeout_ms);
  const std::string fifo = ChannelFifoPath(path, pass);
  CTRAIN_RETURN_IF_ERROR(WaitForPath(fifo, timeout_ms, nullptr));
  return OpenInputStream(fifo, nullptr, timeout_ms);
}

}  // namespace ctrain::data
