// Interrupts while the trainer's kernels run: a deferred SIGTERM/SIGINT must be
// recorded without ever running a handler on a thread that computes.
//
// Before, the kernel delivered a process-directed signal to any thread that did
// not block it, usually the main thread, which runs the trainer's steps. A
// trainer stopped by SIGTERM right at an epoch's start then aborted in free()
// ("double free or corruption", in about 6 of 100 stops timed there; the
// launch tests' SIGTERM cases failed in CI). A handler frame written where the
// thread's stack pointer points is the known way for that to happen inside
// oneDNN's GEMM kernels (uxlfoundation/oneDNN#4845). With the interrupts on a
// signal thread of their own (base/signals.h), 0 of 338 such stops failed.
//
// Here the main thread of a child process runs DeepFM's deep-layer GEMMs
// (FullyConnected, as the trainer does) while another thread sends one deferred
// SIGTERM after another. The child checks that its threads block the
// interrupts, that each signal is recorded, and that the results stay right.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/base/signals.h"
#include "ctrain/model/layers/fully_connected.h"

namespace ctrain::model {
namespace {

// The child's exit codes.
constexpr int kOk = 0, kPrepareFailed = 2, kSignalLost = 3, kWrongThread = 4, kWrongResult = 5;

// In the child: B x in x out GEMMs on this thread while a second thread sends
// `signals` SIGTERMs to the process, each recorded (deferred) and then cleared.
int GemmsUnderSignals(int signals) {
  InstallInterruptHandlers();
  InterruptDeferral defer("ignoring it (test)");
  // This thread, and every thread started after the handlers, block the
  // interrupts: only the signal thread takes them.
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  if (sigismember(&mask, SIGTERM) != 1 || sigismember(&mask, SIGINT) != 1 || sigismember(&mask, SIGHUP) != 1)
    return kWrongThread;
  // DeepFM's deep layers on Criteo (39 fields x 32 -> 400 -> 400 -> 1), a training batch and an evaluation one.
  struct Shape {
    int64_t B, in, out;
  };
  const Shape shapes[] = {{256, 1248, 400}, {256, 400, 400}, {256, 400, 1}, {2040, 1248, 400}, {2040, 400, 400}};
  struct Layer {
    Shape s;
    FullyConnected fc;
    std::vector<float> src, wei, bia, dst, diff_src, diff_wei, diff_bia;
  };
  std::vector<Layer> layers;
  for (const Shape& s : shapes) {
    Layer l{s, FullyConnected(s.in, s.out), std::vector<float>(s.B * s.in, 0.5f), std::vector<float>(s.in * s.out, 0.25f),
            std::vector<float>(s.out, 1.0f), std::vector<float>(s.B * s.out), std::vector<float>(s.B * s.in),
            std::vector<float>(s.in * s.out), std::vector<float>(s.out)};
    if (!l.fc.Prepare(s.B).ok()) return kPrepareFailed;
    layers.push_back(std::move(l));
  }
  std::atomic<bool> done{false};
  std::atomic<int> lost{0};
  std::thread signaller([&] {
    sigset_t m;
    pthread_sigmask(SIG_BLOCK, nullptr, &m);
    if (sigismember(&m, SIGTERM) != 1) lost = -1;  // started after the handlers: blocked too
    for (int i = 0; i < signals && lost == 0; ++i) {
      ::kill(::getpid(), SIGTERM);  // process-directed, as `kill`, `timeout` and the launcher send it
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (PendingInterrupt() == 0 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
      if (PendingInterrupt() != SIGTERM) lost = 1;
      ClearPendingInterrupt();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    done = true;
  });
  int64_t rounds = 0;
  while (!done) {
    for (Layer& l : layers) {
      l.fc.Forward(l.s.B, l.src.data(), l.wei.data(), l.bia.data(), l.dst.data());
      l.fc.Backward(l.s.B, l.src.data(), l.wei.data(), l.dst.data(), l.diff_src.data(), l.diff_wei.data(),
                    l.diff_bia.data());
    }
    // Allocation churn: a corrupted heap aborts here rather than at exit.
    std::vector<std::string> churn;
    for (int i = 0; i < 64; ++i) churn.emplace_back(48 + i, 'x');
    ++rounds;
  }
  signaller.join();
  if (lost != 0) return lost < 0 ? kWrongThread : kSignalLost;
  // Every output is in * 0.5 * 0.25 + 1.
  for (const Layer& l : layers)
    for (float v : l.dst)
      if (v != static_cast<float>(l.s.in) * 0.125f + 1.0f) return kWrongResult;
  std::fprintf(stderr, "%lld GEMM rounds under %d signals\n", static_cast<long long>(rounds), signals);
  return kOk;
}

TEST(KernelSignals, DeferredInterruptsDuringGemmsLeaveTheHeapIntact) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
    if (std::freopen("/dev/null", "w", stderr) == nullptr) ::_exit(kPrepareFailed);  // a note per signal
    ::_exit(GemmsUnderSignals(2000));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (SIGABRT: the heap was corrupted)";
  EXPECT_EQ(WEXITSTATUS(status), kOk) << "2: Prepare failed; 3: a signal was not recorded; 4: a thread left the "
                                         "interrupts unblocked; 5: the GEMM result changed";
}

}  // namespace
}  // namespace ctrain::model
