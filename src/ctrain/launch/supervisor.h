// The processes of one host's roles (`ctrain launch`): children of this process,
// each with its stdout and stderr read line by line and copied to ours with a
// "[<name>] " prefix, so one log shows every role.
//
// Each child gets PR_SET_PDEATHSIG = SIGTERM: if the launcher dies, its roles get
// the same stop SageMaker would send, so nothing is left running. Each child is
// the leader of its own process group (stdin /dev/null): a signal to the
// launcher's group (Ctrl-C, `timeout`) reaches only the launcher, which forwards
// one stop to each role (SignalAll), so no role sees it twice.
// Remembered per child: its exit status, the last line it wrote that starts with
// "ctrain: " (the CLI's error lines do: the failure reason) or that CLI11 wrote
// for a flag it rejected (the line before "Run with --help for more
// information.", e.g. "Could not convert: --learning-rate = abc"), and the address of a
// "ctrain: <what> listening on ADDR" line on stdout (data-service servers).
// For the root cause of a failure (Cause): the signal that killed the child, the
// order children exited in, and under mpirun the first rank's own error line
// ("ctrain: error: rank R ...") and mpirun's notice of a rank killed by a signal
// ("mpirun noticed that process rank R with PID P on node N exited on signal S
// (...)"), both kept as they first came, so that the other ranks' later lines
// (their "interrupted by SIGTERM" as mpirun stops them) never replace them.
//
// Thread safety: one thread drives a Supervisor; the reader threads are internal.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::launch {

class Supervisor {
 public:
  Supervisor() = default;
  ~Supervisor();  // SIGTERM, then (after 10 s) SIGKILL, to every child still running; reaps them
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  struct StartOptions {
    // Set in the child's environment (over this process's own, which it inherits).
    std::vector<std::pair<std::string, std::string>> env;
    std::string dir;  // the child's working directory ("" = ours)
    // Any program's errors (a user's script): the last non-empty stderr line is its failure
    // line (a Python traceback ends with the exception), not only "ctrain: " lines.
    bool any_stderr_line = false;
  };
  // Starts argv (argv[0] is the program path) as `name`; returns its index.
  // Errors: the fork/pipe failure (an exec failure shows as exit status 127; a working
  // directory that cannot be entered as 126).
  StatusOr<int> Start(const std::string& name, const std::vector<std::string>& argv);
  StatusOr<int> Start(const std::string& name, const std::vector<std::string>& argv, const StartOptions& options);

  // Waits up to `limit` for child i's "listening on ADDR" line; returns ADDR.
  // Errors: Unavailable naming the child and its exit status when it exits
  // first; DeadlineExceeded after `limit`; Cancelled when *stop becomes non-zero.
  StatusOr<std::string> WaitListening(int i, std::chrono::milliseconds limit, const std::atomic<int>* stop);

  // Reaps children that exited (non-blocking). Returns true if child i has exited.
  bool Exited(int i);
  // Exit status: the code, 128 + signal, -1 while running.
  int status(int i);
  // The signal that killed child i (WIFSIGNALED), 0 when it exited or is running.
  int term_signal(int i);
  // 1, 2, ...: the order in which children were seen to exit (reaped); 0 while running.
  int64_t exit_order(int i);
  std::string last_line(int i);
  // Why child i failed, in words, without host or name: "killed by signal 9" (a signal
  // this supervisor did not send; one it sent is the stop it forwarded: the status and line),
  // "rank 1 killed by signal 9" (mpirun's notice), or "exited with status N" followed by
  // ": " and the first rank error line, else the last error line (prefix "ctrain: " cut).
  std::string Cause(int i);
  const std::string& name(int i) const { return children_[i]->name; }
  pid_t pid(int i) const { return children_[i]->pid; }
  int size() const { return static_cast<int>(children_.size()); }

  void Signal(int i, int sig);
  void SignalAll(int sig);
  // Waits (bounded) for child i; returns its status or -1 on timeout.
  int Wait(int i, std::chrono::milliseconds limit);

 private:
  struct Child {
    std::string name;
    pid_t pid = -1;
    int status = -1;
    int term_signal = 0;
    int sent_signal = 0;  // the first signal Signal() sent it (0: none)
    int64_t exit_order = 0;
    bool reaped = false;
    std::mutex mu;
    std::condition_variable cv;
    std::string last_line, listening;
    std::string first_rank_error, rank_signal;  // see the comment at the top
    std::vector<std::thread> readers;
  };
  void Reap(Child& c, bool block);
  // Records a reaped child's wait status and joins its log readers.
  void Record(Child& c, int wait_status);
  // As PID 1 (the container's init: scripts/train execs ctrain launch), processes orphaned below the roles
  // (an mpirun's daemons, ssh sessions) are re-parented to the launcher: reaps every exited child, so none
  // stays a zombie, recording those that are roles. Elsewhere a no-op (children are waited for by pid).
  void ReapOrphans();
  std::vector<std::unique_ptr<Child>> children_;
  int64_t exits_ = 0;
  int64_t orphans_reaped_ = 0;
};

// The path of the running executable (/proc/self/exe resolved).
std::string SelfExe();

}  // namespace ctrain::launch
