// Test helper: parameter servers and trainers as real `ctrain` processes on
// loopback (free ports, bounded waits; the ChildProcess destructors kill and
// reap every process).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "testing/process.h"

namespace ctrain::testing {

using namespace std::chrono_literals;

class PsCluster {
 public:
  explicit PsCluster(std::string dir) : dir_(std::move(dir)) {}

  // Starts `ctrain ps --shard I --num-shards S --port P` (+ extra); returns its address or "".
  // port 0 = a free one; a restart passes the old port so trainers find it again.
  std::string StartPs(int32_t shard, int32_t num_shards, const std::vector<std::string>& extra = {}, int port = 0) {
    auto p = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = {kCtrain, "ps", "--shard", std::to_string(shard), "--num-shards",
                                     std::to_string(num_shards), "--port", std::to_string(port)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string n = "ps" + std::to_string(shard) + "_" + std::to_string(starts_++);
    if (!p->Start(argv, Path(n + ".out"), Path(n + ".err"))) return "";
    const std::string a = p->WaitForLine("ctrain: ps listening on ", 20s);
    if (static_cast<int32_t>(ps_.size()) <= shard) ps_.resize(shard + 1);
    ps_[shard] = std::move(p);
    logs_.push_back(n + ".err");
    return a;
  }

  // Starts `ctrain <args>` in the background.
  ChildProcess* Start(const std::vector<std::string>& args, const std::string& name) {
    auto c = std::make_unique<ChildProcess>();
    std::vector<std::string> argv = {kCtrain};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!c->Start(argv, Path(name + ".out"), Path(name + ".err"))) return nullptr;
    logs_.push_back(name + ".err");
    clients_.push_back(std::move(c));
    return clients_.back().get();
  }

  ChildProcess& ps(int32_t shard) { return *ps_.at(shard); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Logs() const {
    std::string s;
    for (const std::string& n : logs_) {
      const std::string t = ChildProcess::Read(Path(n));
      if (!t.empty()) s += "--- " + n + "\n" + t;
    }
    return s;
  }

 private:
  std::string dir_;
  int starts_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> ps_;
  std::vector<std::unique_ptr<ChildProcess>> clients_;
  std::vector<std::string> logs_;
};

inline int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

}  // namespace ctrain::testing
