#include "ctrain/base/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

namespace ctrain {
namespace {

// Slot states: free -> writing (path being copied) -> used -> free.
constexpr int kFree = 0, kWriting = 1, kUsed = 2;

std::atomic<int> g_state[kMaxTempFiles];
char g_path[kMaxTempFiles][kMaxTempPath];
std::atomic<int> g_defer{0};
std::atomic<int> g_pending{0};
std::atomic<const char*> g_what{kStopAfterStep};

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");
static_assert(std::atomic<const char*>::is_always_lock_free, "the signal handler needs lock-free atomics");

void WriteStderr(const char* s) {
  ssize_t r = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)r;
}

void UnlinkTempFiles() {
  for (int i = 0; i < kMaxTempFiles; ++i)
    if (g_state[i].load(std::memory_order_acquire) == kUsed) ::unlink(g_path[i]);
}

[[noreturn]] void Die(int signo) {
  UnlinkTempFiles();
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  ::sigaction(signo, &sa, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signo);
  ::_exit(128 + signo);
}

// What an interrupt does: record it (deferred), or unlink and die. Runs on the
// signal thread (SignalLoop), or as the handler of a thread that does not block
// the signal (one started before InstallInterruptHandlers, SIGPIPE): async-signal-safe.
void OnSignal(int signo) {
  const int saved_errno = errno;
  // Stopping after a deferred interrupt: a closed stderr pipe (`ctrain train 2>&1 | tee log`,
  // Ctrl-C ends tee too) must not cut the checkpoint short; the write just fails with EPIPE.
  // (Also after the deferral ended: the process is on its way to ExitForSignal.)
  if (signo == SIGPIPE && g_pending.load(std::memory_order_acquire) != 0) {
    errno = saved_errno;
    return;
  }
  if ((signo == SIGINT || signo == SIGTERM) && g_defer.load(std::memory_order_acquire) > 0) {
    int expected = 0;
    if (g_pending.compare_exchange_strong(expected, signo)) {
      WriteStderr("\nctrain: ");
      WriteStderr(SignalName(signo));
      WriteStderr(" received: ");
      WriteStderr(g_what.load(std::memory_order_acquire));
      WriteStderr(" (send it again to exit at once)\n");
      errno = saved_errno;
      return;
    }
  }
  Die(signo);
}

// The signal thread: takes the routed interrupts (blocked in every other thread) one at a time.
void SignalLoop(sigset_t routed) {
  for (;;) {
    int signo = 0;
    if (::sigwait(&routed, &signo) == 0) OnSignal(signo);
  }
}

}  // namespace

void InstallInterruptHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t routed;
    sigemptyset(&routed);
    for (int signo : kSignals) {
      struct sigaction old;
      if (::sigaction(signo, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // nohup, `cmd &`
      struct sigaction sa;
      std::memset(&sa, 0, sizeof sa);
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      for (int s : kSignals) sigaddset(&sa.sa_mask, s);  // one handler at a time
      sa.sa_flags = SA_RESTART;
      ::sigaction(signo, &sa, nullptr);
      // SIGPIPE comes from a write(2) on the thread that wrote, never from inside a kernel: it stays a handler.
      if (signo != SIGPIPE) sigaddset(&routed, signo);
    }
    // The interrupts go to a thread of their own: a handler must never run on a thread inside oneDNN's
    // GEMM kernels, which may point rsp at a heap workspace (uxlfoundation/oneDNN#4845, fixed in 3.11.1;
    // Debian ships 2.x), where the kernel would write the handler's frame. Threads inherit the mask, so
    // blocking them here, before the program starts any, keeps them off every later thread.
    ::pthread_sigmask(SIG_BLOCK, &routed, nullptr);
    std::thread(SignalLoop, routed).detach();
  });
}

void BlockAsyncSignalsOnThisThread() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGWINCH}) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int RegisterTempFile(std::string_view path) {
  if (path.size() >= static_cast<size_t>(kMaxTempPath)) return -1;
  for (int i = 0; i < kMaxTempFiles; ++i) {
    int expected = kFree;
    if (!g_state[i].compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) continue;
    std::memcpy(g_path[i], path.data(), path.size());
    g_path[i][path.size()] = '\0';
    g_state[i].store(kUsed, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnregisterTempFile(int slot) {
  if (slot < 0 || slot >= kMaxTempFiles) return;
  g_state[slot].store(kFree, std::memory_order_release);
}

InterruptDeferral::InterruptDeferral(const char* what)
    : previous_(g_what.exchange(what != nullptr ? what : kStopAfterStep, std::memory_order_acq_rel)) {
  g_defer.fetch_add(1, std::memory_order_acq_rel);
}
InterruptDeferral::~InterruptDeferral() {
  g_defer.fetch_sub(1, std::memory_order_acq_rel);
  g_what.store(previous_, std::memory_order_release);
}

int PendingInterrupt() { return g_pending.load(std::memory_order_acquire); }
const std::atomic<int>* PendingInterruptFlag() { return &g_pending; }
void RequestInterrupt(int signo) {
  int expected = 0;
  g_pending.compare_exchange_strong(expected, signo);
}
void ClearPendingInterrupt() { g_pending.store(0, std::memory_order_release); }

void ExitForSignal(int signo) {
  // Block the handled signals so that a late one cannot run the handler halfway through.
  sigset_t set;
  sigemptyset(&set);
  for (int s : kSignals) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  Die(signo);
}

const char* SignalName(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
  }
}

}  // namespace ctrain
