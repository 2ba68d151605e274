// Test helper: a data service made of real `ctrain data-service` processes on
// loopback (free ports, bounded waits; every process is killed and reaped by
// the destructors), and the multiset comparisons the tests make.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "testing/process.h"

namespace ctrain::testing {

using namespace std::chrono_literals;

// RunCtrain with a time limit (coreutils timeout; 124 = it ran out).
inline RunResult RunCtrainBounded(const std::string& args, int seconds = 120) {
  return Shell("timeout -s KILL " + std::to_string(seconds) + " " + kCtrain + " " + args);
}

class DataServiceCluster {
 public:
  explicit DataServiceCluster(std::string dir) : dir_(std::move(dir)) {}

  // Starts the dispatcher (extra flags appended); returns its address or "".
  std::string StartDispatcher(const std::vector<std::string>& extra = {}) {
    dispatcher_ = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = {kCtrain, "data-service", "dispatcher", "--port", std::to_string(port_)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const int n = starts_++;
    if (!dispatcher_->Start(argv, Path("dispatcher" + std::to_string(n) + ".out"),
                            Path("dispatcher" + std::to_string(n) + ".err")))
      return "";
    address_ = dispatcher_->WaitForLine("ctrain: data-service dispatcher listening on ", 20s);
    if (!address_.empty() && port_ == 0) port_ = std::stoi(address_.substr(address_.rfind(':') + 1));
    return address_;
  }

  // Starts a worker; returns its address or "".
  std::string StartWorker(const std::vector<std::string>& extra = {}) {
    auto w = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = {kCtrain, "data-service", "worker", "--dispatcher", address_, "--port", "0",
                                     "--heartbeat-ms", "200"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string n = std::to_string(workers_.size());
    if (!w->Start(argv, Path("worker" + n + ".out"), Path("worker" + n + ".err"))) return "";
    const std::string a = w->WaitForLine("ctrain: data-service worker listening on ", 20s);
    workers_.push_back(std::move(w));
    return a;
  }

  // Starts `ctrain <args>` (e.g. a trainer or a reader) in the background.
  ChildProcess* StartClient(const std::vector<std::string>& args, const std::string& name) {
    auto c = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = {kCtrain};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!c->Start(argv, Path(name + ".out"), Path(name + ".err"))) return nullptr;
    clients_.push_back(std::move(c));
    return clients_.back().get();
  }

  // Waits until the dispatcher's status lists `n` live workers (bounded).
  bool WaitForLiveWorkers(int n, std::chrono::milliseconds limit = 20s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      RunResult r = RunCtrainBounded("data-service status " + address_ + " --json", 10);
      int live = 0;
      for (size_t at = r.out.find("\"alive\": true"); at != std::string::npos; at = r.out.find("\"alive\": true", at + 1))
        ++live;
      if (r.exit_code == 0 && live >= n) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  ChildProcess& dispatcher() { return *dispatcher_; }
  ChildProcess& worker(size_t i) { return *workers_.at(i); }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Everything the processes wrote to stderr, for failure messages.
  std::string Logs() const {
    std::string s;
    auto add = [&](const std::string& name) {
      const std::string t = ChildProcess::Read(Path(name));
      if (!t.empty()) s += "--- " + name + "\n" + t;
    };
    for (int i = 0; i < starts_; ++i) add("dispatcher" + std::to_string(i) + ".err");
    for (size_t i = 0; i < workers_.size(); ++i) add("worker" + std::to_string(i) + ".err");
    return s;
  }

 private:
  std::string dir_;
  std::string address_;
  int port_ = 0;
  int starts_ = 0;
  std::unique_ptr<ChildProcess> dispatcher_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
  std::vector<std::unique_ptr<ChildProcess>> clients_;
};

// line -> count.
inline std::map<std::string, int> LineCounts(const std::string& text) {
  std::map<std::string, int> m;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ++m[line];
  return m;
}

// `times` x every line of `reference`.
inline std::map<std::string, int> Times(std::map<std::string, int> m, int times) {
  for (auto& [k, v] : m) v *= times;
  return m;
}

// A short description of how two multisets differ (for failure messages).
inline std::string Diff(const std::map<std::string, int>& want, const std::map<std::string, int>& got) {
  int64_t missing = 0, extra = 0, nw = 0, ng = 0;
  for (const auto& [k, v] : want) {
    nw += v;
    auto it = got.find(k);
    const int g = it == got.end() ? 0 : it->second;
    if (g < v) missing += v - g;
    if (g > v) extra += g - v;
  }
  for (const auto& [k, v] : got) {
    ng += v;
    if (!want.count(k)) extra += v;
  }
  return "want " + std::to_string(nw) + " lines, got " + std::to_string(ng) + ": " + std::to_string(missing) +
         " missing, " + std::to_string(extra) + " extra";
}

}  // namespace ctrain::testing
