// Interrupts (SIGINT, SIGTERM, SIGHUP, SIGPIPE) and the temporary files they
// must not leave behind.
//
// A process that calls InstallInterruptHandlers() (the ctrain CLI does, first
// thing) gets, on any of those signals:
//   1. every registered temporary file unlinked (RegisterTempFile: the
//      "<path>.tmp.<pid>" files of atomic writes, io/file.h), then
//   2. the signal's default action (it is re-raised), so the exit status is the
//      usual one: a shell reports 130 for SIGINT, 143 for SIGTERM, 129 for
//      SIGHUP and 141 for SIGPIPE.
// While an InterruptDeferral is alive, the first SIGINT or SIGTERM is only
// recorded (PendingInterrupt() returns it) so that a trainer can stop between
// two steps and write a checkpoint; a second one acts at once as above. Once
// one is recorded, SIGPIPE is ignored (a `| tee` that Ctrl-C also ended must
// not cut the checkpoint short; writes to it fail with EPIPE instead).
// A signal that was ignored when the process started (nohup, `cmd &` in a
// non-interactive shell) stays ignored.
//
// SIGINT, SIGTERM and SIGHUP are taken by a thread of their own (sigwait):
// InstallInterruptHandlers() blocks them in the calling thread, so that every
// thread started after it (OpenMP teams, the input pipeline, gRPC) inherits the
// block, and none of them ever runs a handler. That matters: oneDNN's GEMM
// kernels may point rsp at a heap workspace while they run
// (uxlfoundation/oneDNN#4845, fixed in oneDNN 3.11.1; Debian ships 2.x), and
// a handler on such a thread has its frame written into the heap. A signal sent
// to the process (`kill`, `timeout`, a launcher, Ctrl-C) reaches the signal
// thread; one sent to a thread that blocks it (raise(3), pthread_kill(3)) stays
// pending there. SIGPIPE stays a handler: it is sent to the thread whose write
// failed, which is in a system call, not in a kernel. So call it first thing,
// before the program starts threads: a thread started earlier keeps the signals
// unblocked and takes them with the same (handler) logic. A child that the
// program forks and executes inherits the block: reset the mask before exec
// (launch/supervisor.cc does).
//
// The handler logic is async-signal-safe: it reads a fixed-size table of
// fixed-size paths and calls only unlink(2), write(2), sigaction(2),
// pthread_sigmask(3) and raise(3); it allocates nothing and takes no lock. The
// table holds kMaxTempFiles paths of up to kMaxTempPath - 1 bytes; a file that
// does not fit is simply not covered (RegisterTempFile returns -1).
//
// Without InstallInterruptHandlers() (a library user) the registry is kept but
// nothing reacts to signals.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <string_view>

namespace ctrain {

inline constexpr int kMaxTempFiles = 64;
inline constexpr int kMaxTempPath = 4096;

// Installs the handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE and starts the
// signal thread (see above). Idempotent.
void InstallInterruptHandlers();

// Blocks, on the calling thread and the threads it starts from now on, the
// signals an embedder may handle asynchronously: SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD and SIGWINCH. For a thread that
// runs kernels while another takes the signals (the Python package's call
// thread: Python runs its handlers on its main thread), for the reason above.
void BlockAsyncSignalsOnThisThread();

// Records `path` as an in-progress temporary file that an interrupt must
// unlink. Returns the slot to pass to UnregisterTempFile, or -1 when the table
// is full or the path too long.
int RegisterTempFile(std::string_view path);
// Forgets the slot (after the file was renamed into place or deleted). -1 is a no-op.
void UnregisterTempFile(int slot);

// What a trainer does with a deferred interrupt (the default wording).
inline constexpr char kStopAfterStep[] = "stopping after the current step";

// While at least one InterruptDeferral exists, the first SIGINT/SIGTERM sets
// the pending interrupt instead of ending the process, and says so on stderr:
// "ctrain: <SIGNAL> received: <what> (send it again to exit at once)", where
// `what` (static storage: a string literal) says what this process does now,
// e.g. "stopping the data-service worker". The innermost live deferral's
// `what` is used.
class InterruptDeferral {
 public:
  explicit InterruptDeferral(const char* what = kStopAfterStep);
  ~InterruptDeferral();
  InterruptDeferral(const InterruptDeferral&) = delete;
  InterruptDeferral& operator=(const InterruptDeferral&) = delete;

 private:
  const char* previous_;
};

// The deferred signal (SIGINT or SIGTERM), or 0 when none arrived.
int PendingInterrupt();
// The flag PendingInterrupt() reads, for code that polls it (Trainer::set_stop_flag).
const std::atomic<int>* PendingInterruptFlag();
// Records `signo` (SIGINT or SIGTERM) as the pending interrupt, as the handler
// does under an InterruptDeferral: for embedders that see the signal
// themselves (the Python package: Ctrl-C while Trainer.fit runs).
void RequestInterrupt(int signo);
// Tests, embedders: forget a pending interrupt.
void ClearPendingInterrupt();

// Unlinks the registered temporary files and ends the process with `signo`'s
// default action (or _exit(128 + signo) if that does not end it).
[[noreturn]] void ExitForSignal(int signo);

// "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", or "a signal" (static storage).
const char* SignalName(int signo);

}  // namespace ctrain
