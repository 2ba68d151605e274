#include "ctrain/base/clock.h"
#include "ctrain/launch/supervisor.h"
#include "ctrain/base/log.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <string_view>

namespace ctrain::launch {
namespace {

// Copies `fd` to `out` line by line with `prefix`, calling on_line for each.
template <typename F>
void CopyLines(int fd, FILE* out, const std::string& prefix, F on_line) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      // A CRLF line ending (sshd -e) is a line ending; progress lines redraw with \r: keep what the last
      // redraw shows.
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (size_t cr = line.rfind('\r'); cr != std::string::npos) line = line.substr(cr + 1);
      std::fprintf(out, "%s%s\n", prefix.c_str(), line.c_str());
      std::fflush(out);
      on_line(line);
    }
  }
  if (!buf.empty()) {
    std::fprintf(out, "%s%s\n", prefix.c_str(), buf.c_str());
    std::fflush(out);
    on_line(buf);
  }
  ::close(fd);
}

// Open MPI's notice of a rank killed by a signal ("mpirun noticed that process rank 1 with
// PID 42 on node vm exited on signal 9 (Killed)."), as "rank 1 killed by signal 9"; else "".
std::string MpiRankSignal(const std::string& line) {
  static const std::string kNotice = " noticed that process rank ";
  const size_t p = line.find(kNotice);
  if (p == std::string::npos) return "";
  unsigned long rank = 0;
  int sig = 0;
  const std::string rest = line.substr(p + kNotice.size());
  if (std::sscanf(rest.c_str(), "%lu", &rank) != 1) return "";
  const size_t on = rest.find(" exited on signal ");
  if (on == std::string::npos || std::sscanf(rest.c_str() + on + 18, "%d", &sig) != 1) return "";
  return "rank " + std::to_string(rank) + " killed by signal " + std::to_string(sig);
}

}  // namespace

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buf, static_cast<size_t>(n));
}

Supervisor::~Supervisor() {
  SignalAll(SIGTERM);
  for (int i = 0; i < size(); ++i)
    if (Wait(i, std::chrono::seconds(10)) < 0) {
      Signal(i, SIGKILL);
      Wait(i, std::chrono::seconds(10));
    }
  for (auto& c : children_)
    for (auto& t : c->readers)
      if (t.joinable()) t.join();
}

StatusOr<int> Supervisor::Start(const std::string& name, const std::vector<std::string>& argv) {
  return Start(name, argv, StartOptions());
}

StatusOr<int> Supervisor::Start(const std::string& name, const std::vector<std::string>& argv,
                                const StartOptions& options) {
  // The child's environment, made here: after fork only async-signal-safe calls are made.
  std::vector<std::string> env_text;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view kv(*e);
      const std::string_view key = kv.substr(0, kv.find('='));
      if (std::none_of(options.env.begin(), options.env.end(), [&](const auto& p) { return p.first == key; }))
        env_text.emplace_back(kv);
    }
    for (const auto& [k, v] : options.env) env_text.push_back(k + "=" + v);
    for (std::string& kv : env_text) envp.push_back(kv.data());
    envp.push_back(nullptr);
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoError(name, "pipe", errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]), ::close(out[1]);
    return ErrnoError(name, "pipe", errno);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError(name, "fork", errno);
  if (pid == 0) {
    // Its own process group: a signal to the launcher's group (Ctrl-C, `timeout`, `kill -- -PGID`)
    // reaches only the launcher, which forwards exactly one SIGTERM; the trainer then checkpoints
    // instead of taking the forwarded one as a second signal and dying at once.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(143);  // the launcher died before prctl
    // The child starts with default signal handling and an empty mask.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGTERM, SIG_DFL), ::signal(SIGINT, SIG_DFL), ::signal(SIGPIPE, SIG_DFL);
    // Not in the terminal's foreground group: reading the terminal would stop it (SIGTTIN).
    if (const int null = ::open("/dev/null", O_RDONLY); null >= 0) ::dup2(null, 0);
    ::dup2(out[1], 1), ::dup2(err[1], 2);
    if (!options.dir.empty() && ::chdir(options.dir.c_str()) != 0) {
      Logf("launch: cannot enter %s: %s\n", options.dir.c_str(), std::strerror(errno));
      ::_exit(126);
    }
    if (envp.empty()) ::execv(args[0], args.data());
    else ::execve(args[0], args.data(), envp.data());
    Logf("launch: cannot execute %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // (also here: no group signal may reach it before the child's own setpgid)
  ::close(out[1]), ::close(err[1]);
  auto c = std::make_unique<Child>();
  c->name = name;
  c->pid = pid;
  Child* raw = c.get();
  const std::string prefix = "[" + name + "] ";
  c->readers.emplace_back([raw, fd = out[0], prefix] {
    CopyLines(fd, stdout, prefix, [raw](const std::string& line) {
      static const std::string kListen = " listening on ";
      if (line.rfind("ctrain: ", 0) != 0) return;
      if (size_t p = line.find(kListen); p != std::string::npos) {
        std::lock_guard<std::mutex> l(raw->mu);
        raw->listening = line.substr(p + kListen.size());
        raw->cv.notify_all();
      }
    });
  });
  c->readers.emplace_back([raw, fd = err[0], prefix, any = options.any_stderr_line, previous = std::string()](void) mutable {
    CopyLines(fd, stderr, prefix, [raw, any, &previous](const std::string& line) {
      // A flag CLI11 rejects ("Could not convert: --learning-rate = abc", "--x: ... is required")
      // prints no "ctrain: " prefix; the footer below marks the line before it as the error.
      static const std::string kUsageFooter = "Run with --help for more information.";
      if (line.rfind("ctrain: ", 0) == 0 || (line == kUsageFooter && !previous.empty()) ||
          (any && line.find_first_not_of(" \t") != std::string::npos)) {
        std::lock_guard<std::mutex> l(raw->mu);
        raw->last_line = line == kUsageFooter ? previous : line;
        if (raw->first_rank_error.empty() && line.rfind("ctrain: error: rank ", 0) == 0) raw->first_rank_error = line;
      }
      if (std::string r = MpiRankSignal(line); !r.empty()) {
        std::lock_guard<std::mutex> l(raw->mu);
        if (raw->rank_signal.empty()) raw->rank_signal = r;
      }
      if (!line.empty()) previous = line;
    });
  });
  children_.push_back(std::move(c));
  return size() - 1;
}

void Supervisor::Record(Child& c, int st) {
  c.reaped = true;
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  c.term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  c.exit_order = ++exits_;
  for (auto& t : c.readers)
    if (t.joinable()) t.join();  // the pipes end with the process (its children hold no copy: CLOEXEC)
}

void Supervisor::ReapOrphans() {
  if (::getpid() != 1) return;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(-1, &st, WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    bool role = false;
    for (auto& c : children_)
      if (c->pid == r && !c->reaped) {
        Record(*c, st);
        role = true;
      }
    if (!role) ++orphans_reaped_;
  }
}

void Supervisor::Reap(Child& c, bool block) {
  if (!block) ReapOrphans();
  if (c.reaped || c.pid <= 0) return;
  int st = 0;
  pid_t r;
  do r = ::waitpid(c.pid, &st, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == c.pid) Record(c, st);
}

bool Supervisor::Exited(int i) {
  Reap(*children_[i], false);
  return children_[i]->reaped;
}

int Supervisor::status(int i) {
  Reap(*children_[i], false);
  return children_[i]->reaped ? children_[i]->status : -1;
}

int Supervisor::term_signal(int i) {
  Reap(*children_[i], false);
  return children_[i]->term_signal;
}

int64_t Supervisor::exit_order(int i) {
  Reap(*children_[i], false);
  return children_[i]->exit_order;
}

std::string Supervisor::Cause(int i) {
  const int st = status(i);
  // A signal from outside is the cause; the stop this supervisor forwarded is not: the role's
  // own last line says what it did with it ("interrupted by SIGTERM at step N: checkpoint saved").
  if (const int sig = term_signal(i); sig != 0 && sig != children_[i]->sent_signal)
    return "killed by signal " + std::to_string(sig);
  std::string first_rank_error, rank_signal;
  {
    std::lock_guard<std::mutex> l(children_[i]->mu);
    first_rank_error = children_[i]->first_rank_error;
    rank_signal = children_[i]->rank_signal;
  }
  if (!rank_signal.empty()) return rank_signal;
  std::string why = !first_rank_error.empty() ? first_rank_error : last_line(i);
  if (why.rfind("ctrain: ", 0) == 0) why = why.substr(8);
  return "exited with status " + std::to_string(st) + (why.empty() ? "" : ": " + why);
}

std::string Supervisor::last_line(int i) {
  std::lock_guard<std::mutex> l(children_[i]->mu);
  return children_[i]->last_line;
}

void Supervisor::Signal(int i, int sig) {
  Child& c = *children_[i];
  Reap(c, false);
  if (!c.reaped && c.pid > 0 && ::kill(c.pid, sig) == 0 && c.sent_signal == 0) c.sent_signal = sig;
}

void Supervisor::SignalAll(int sig) {
  for (int i = 0; i < size(); ++i) Signal(i, sig);
}

int Supervisor::Wait(int i, std::chrono::milliseconds limit) {
  const Deadline deadline(limit);
  for (;;) {
    if (Exited(i)) return children_[i]->status;
    if (deadline.expired()) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

StatusOr<std::string> Supervisor::WaitListening(int i, std::chrono::milliseconds limit, const std::atomic<int>* stop) {
  Child& c = *children_[i];
  const Deadline deadline(limit);
  for (;;) {
    {
      std::unique_lock<std::mutex> l(c.mu);
      if (!c.listening.empty()) return c.listening;
      c.cv.wait_for(l, std::chrono::milliseconds(20));
      if (!c.listening.empty()) return c.listening;
    }
    if (Exited(i)) {
      {  // reaping joined the readers: a line read just before the exit is in now
        std::lock_guard<std::mutex> l(c.mu);
        if (!c.listening.empty()) return c.listening;
      }
      return UnavailableError(c.name + " exited with status " + std::to_string(c.status) + " before listening" +
                              (last_line(i).empty() ? "" : ": " + last_line(i)));
    }
    if (stop != nullptr && stop->load() != 0) return CancelledError(c.name + ": stopped while waiting for it to listen");
    if (deadline.expired())
      return DeadlineExceededError(c.name + " did not say where it listens within " +
                                   std::to_string(limit.count()) + " ms");
  }
}

}  // namespace ctrain::launch
