// base/signals.h: interrupts unlink the registered temporary files and end the
// process with the signal's own status; a deferral records the first
// SIGINT/SIGTERM and a second one exits at once (issue #7, item 12 / trial/10, trial/11).
#include "ctrain/base/signals.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace ctrain {
namespace {

std::string TempPath(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  return std::string(base ? base : "/tmp") + "/ctrain_signals_test_" + std::to_string(::getpid()) + "_" + name;
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

void Touch(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "w");
  if (f != nullptr) std::fclose(f);
}

// Sends `sig` to this process, as `kill`, `timeout` and a launcher do (InstallInterruptHandlers' signal
// thread takes it, not this one), and waits up to 5 s for it to act: the process dies, or the interrupt is
// recorded as pending.
void Send(int sig) {
  ::kill(::getpid(), sig);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (PendingInterrupt() != sig && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Runs `body` in a forked child with default signal dispositions; returns its wait status.
template <typename F>
int InChild(F body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
    body();
    ::_exit(0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

TEST(Signals, EachInterruptRemovesRegisteredTempFilesAndKeepsItsExitStatus) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    SCOPED_TRACE(SignalName(sig));
    const std::string tmp = TempPath("out.tfrecord.tmp.1"), kept = TempPath("unregistered");
    Touch(tmp);
    Touch(kept);
    const int status = InChild([&] {
      InstallInterruptHandlers();
      RegisterTempFile(tmp);
      if (sig == SIGPIPE)
        ::raise(sig);  // a write(2) to a closed pipe signals the writing thread
      else
        Send(sig);
      ::_exit(3);  // not reached
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);  // a shell reports 128 + sig
    EXPECT_FALSE(Exists(tmp));
    EXPECT_TRUE(Exists(kept));
    ::unlink(kept.c_str());
  }
}

TEST(Signals, UnregisteredFilesSurvive) {
  const std::string done = TempPath("renamed_into_place");
  Touch(done);
  const int status = InChild([&] {
    InstallInterruptHandlers();
    const int slot = RegisterTempFile(done);
    UnregisterTempFile(slot);  // e.g. after the rename
    Send(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(Exists(done));
  ::unlink(done.c_str());
}

TEST(Signals, DeferralRecordsTheFirstSignalAndTheSecondExitsAtOnce) {
  const std::string tmp = TempPath("ckpt-7.bin.tmp.1");
  Touch(tmp);
  const int status = InChild([&] {
    InstallInterruptHandlers();
    InterruptDeferral defer;
    RegisterTempFile(tmp);
    Send(SIGTERM);
    // Still alive: the signal is pending for the trainer to act on.
    if (PendingInterrupt() != SIGTERM || *PendingInterruptFlag() != SIGTERM) ::_exit(4);
    if (!Exists(tmp)) ::_exit(5);
    Send(SIGINT);  // a second signal (e.g. while the checkpoint is written)
    ::_exit(6);       // not reached
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_FALSE(Exists(tmp));
}

TEST(Signals, SigpipeDuringADeferredStopIsIgnored) {
  const int status = InChild([&] {
    InstallInterruptHandlers();
    InterruptDeferral defer;
    Send(SIGINT);
    ::raise(SIGPIPE);  // e.g. `| tee` ended by the same Ctrl-C
    ::_exit(PendingInterrupt() == SIGINT ? 9 : 8);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 9);
}

// The stderr note names what this process does (a data worker does not "stop after the
// current step"); the innermost deferral's wording is used, the outer one's comes back after it.
TEST(Signals, DeferralSaysWhatThisProcessDoes) {
  const std::string err = TempPath("stderr");
  const int status = InChild([&] {
    FILE* f = std::freopen(err.c_str(), "w", stderr);
    if (f == nullptr) ::_exit(7);
    InstallInterruptHandlers();
    InterruptDeferral outer("stopping the data-service worker");
    { InterruptDeferral inner("finishing the output files"); }
    Send(SIGTERM);
    ::_exit(PendingInterrupt() == SIGTERM ? 9 : 8);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 9);
  FILE* f = std::fopen(err.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  ::unlink(err.c_str());
  EXPECT_EQ(std::string(buf, n),
            "\nctrain: SIGTERM received: stopping the data-service worker (send it again to exit at once)\n");
}

TEST(Signals, DeferralByDefaultSaysTheTrainerStopsAfterTheCurrentStep) {
  const std::string err = TempPath("stderr_default");
  const int status = InChild([&] {
    FILE* f = std::freopen(err.c_str(), "w", stderr);
    if (f == nullptr) ::_exit(7);
    InstallInterruptHandlers();
    InterruptDeferral defer;
    Send(SIGINT);
    ::_exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  FILE* f = std::fopen(err.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  ::unlink(err.c_str());
  EXPECT_EQ(std::string(buf, n),
            "\nctrain: SIGINT received: stopping after the current step (send it again to exit at once)\n");
}

TEST(Signals, ExitForSignalRemovesTempFilesAndEndsWithTheSignal) {
  const std::string tmp = TempPath("metrics.json.tmp.1");
  Touch(tmp);
  const int status = InChild([&] {
    InstallInterruptHandlers();
    RegisterTempFile(tmp);
    ExitForSignal(SIGTERM);
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(Exists(tmp));
}

TEST(Signals, IgnoredSignalsStayIgnored) {
  const std::string tmp = TempPath("nohup.tmp.1");
  Touch(tmp);
  const int status = InChild([&] {
    ::signal(SIGHUP, SIG_IGN);  // nohup
    InstallInterruptHandlers();
    RegisterTempFile(tmp);
    ::kill(::getpid(), SIGHUP);  // discarded at once: ignored
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::_exit(7);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_TRUE(Exists(tmp));
  ::unlink(tmp.c_str());
}

// The interrupts never run a handler on the threads that compute: oneDNN's GEMM kernels may point rsp
// at the heap (uxlfoundation/oneDNN#4845), where a handler's frame would land. The thread that installs
// the handlers, and every thread started after, block SIGINT, SIGTERM and SIGHUP; SIGPIPE (sent to the
// thread whose write failed) is not blocked.
TEST(Signals, InterruptsAreBlockedOnTheInstallingThreadAndTheThreadsItStarts) {
  auto routed = [](const sigset_t& m) {
    return sigismember(&m, SIGINT) == 1 && sigismember(&m, SIGTERM) == 1 && sigismember(&m, SIGHUP) == 1 &&
           sigismember(&m, SIGPIPE) == 0;
  };
  const int status = InChild([&] {
    sigset_t before;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &before);
    if (sigismember(&before, SIGTERM) != 0) ::_exit(2);
    InstallInterruptHandlers();
    sigset_t self, later;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &self);
    std::thread([&] { ::pthread_sigmask(SIG_BLOCK, nullptr, &later); }).join();
    if (!routed(self)) ::_exit(3);
    if (!routed(later)) ::_exit(4);
    // ... and a deferred SIGTERM is still recorded while this thread never enters a system call.
    InterruptDeferral defer;
    ::kill(::getpid(), SIGTERM);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (PendingInterrupt() == 0 && std::chrono::steady_clock::now() < end) {
    }
    ::_exit(PendingInterrupt() == SIGTERM ? 9 : 5);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 9) << "2: blocked before; 3: not blocked on the installing thread; 4: not blocked "
                                       "on a later thread; 5: the deferred SIGTERM was not recorded";
}

TEST(Signals, RegistryIsBounded) {
  std::vector<int> slots;
  for (int i = 0; i < kMaxTempFiles; ++i) {
    slots.push_back(RegisterTempFile("/nonexistent/x" + std::to_string(i)));
    ASSERT_GE(slots.back(), 0);
  }
  EXPECT_EQ(RegisterTempFile("/nonexistent/one-too-many"), -1);
  EXPECT_EQ(RegisterTempFile(std::string(kMaxTempPath, 'a')), -1);
  for (int s : slots) UnregisterTempFile(s);
  const int again = RegisterTempFile("/nonexistent/again");
  EXPECT_GE(again, 0);
  UnregisterTempFile(again);
}

TEST(Signals, RequestInterruptKeepsTheFirstRequestUntilCleared) {
  // An embedder (the Python package) that saw Ctrl-C itself asks for the stop a deferred SIGINT gives.
  ClearPendingInterrupt();
  EXPECT_EQ(PendingInterrupt(), 0);
  RequestInterrupt(SIGINT);
  EXPECT_EQ(PendingInterrupt(), SIGINT);
  EXPECT_EQ(PendingInterruptFlag()->load(), SIGINT);
  RequestInterrupt(SIGTERM);  // the first one stays
  EXPECT_EQ(PendingInterrupt(), SIGINT);
  ClearPendingInterrupt();
  EXPECT_EQ(PendingInterrupt(), 0);
}

}  // namespace
}  // namespace ctrain
