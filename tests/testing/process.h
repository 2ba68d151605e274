// Test helper: a child process started with fork/exec, its stdout and stderr
// sent to files, killed (SIGKILL) and reaped by the destructor if still alive,
// so no test leaves a process behind. Waits are bounded.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ctrain::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Kill(SIGKILL), Wait(std::chrono::seconds(10)); }

  // Starts argv[0] with argv; stdout -> out_path, stderr -> err_path. Returns false on failure.
  bool Start(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
    out_path_ = out_path;
    err_path_ = err_path;
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0 || err < 0) ::_exit(126);
      ::dup2(out, 1), ::dup2(err, 2);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return true;
  }

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }

  void Kill(int sig) {
    if (running()) ::kill(pid_, sig);
  }

  // Waits up to `limit` for the exit; returns the exit code, 128 + signal, or -1 on timeout.
  int Wait(std::chrono::milliseconds limit) {
    if (pid_ <= 0) return -1;
    if (reaped_) return status_;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
        return status_;
      }
      if (std::chrono::steady_clock::now() >= end) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::string Out() const { return Read(out_path_); }
  std::string Err() const { return Read(err_path_); }

  // Waits up to `limit` for a stdout line starting with `prefix`; returns the
  // rest of that line ("" on timeout or when the process exited first).
  std::string WaitForLine(const std::string& prefix, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      std::istringstream in(Out());
      for (std::string line; std::getline(in, line);)
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
      if (Wait(std::chrono::milliseconds(0)) != -1) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }

  static std::string Read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  std::string out_path_, err_path_;
};

}  // namespace ctrain::testing
