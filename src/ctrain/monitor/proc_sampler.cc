#include "ctrain/base/clock.h"
#include "ctrain/monitor/proc_sampler.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ctrain::monitor {
namespace {

bool ReadLine(const std::string& path, std::string* line) {
  std::ifstream in(path);
  return static_cast<bool>(std::getline(in, *line));
}

}  // namespace

bool ParseProcStat(const std::string& line, uint64_t* ticks, int* cpu) {
  const size_t rp = line.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream in(line.substr(rp + 1));
  // After ')': field 3 (state) is the first token; utime = 14, stime = 15, processor = 39.
  std::string tok;
  uint64_t utime = 0, stime = 0;
  int field = 2;
  bool have_cpu = false;
  while (in >> tok) {
    ++field;
    if (field == 14) utime = std::strtoull(tok.c_str(), nullptr, 10);
    if (field == 15) stime = std::strtoull(tok.c_str(), nullptr, 10);
    if (field == 39) {
      *cpu = std::atoi(tok.c_str());
      have_cpu = true;
      break;
    }
  }
  if (field < 15) return false;
  *ticks = utime + stime;
  if (!have_cpu) *cpu = 0;
  return true;
}

ProcSampler::ProcSampler() {
  cores_ = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  ticks_per_sec_ = std::max(1L, ::sysconf(_SC_CLK_TCK));
  last_ = Clock::now();
  std::string line;
  int cpu = 0;
  if (ReadLine("/proc/self/stat", &line)) ParseProcStat(line, &last_process_ticks_, &cpu);
  ReadThreads(&last_threads_);
}

bool ProcSampler::ReadThreads(std::map<int, ThreadTicks>* out) {
  out->clear();
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string line;
    ThreadTicks t;
    // A thread that ended between readdir and open is simply gone.
    if (ReadLine(std::string("/proc/self/task/") + e->d_name + "/stat", &line) && ParseProcStat(line, &t.ticks, &t.cpu))
      (*out)[std::atoi(e->d_name)] = t;
  }
  ::closedir(d);
  return true;
}

std::vector<Scalar> ProcSampler::Sample() {
  std::vector<Scalar> out;
  const auto now = Clock::now();
  const double wall = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  std::string line;
  uint64_t ticks = 0;
  int cpu = 0;
  if (ReadLine("/proc/self/stat", &line) && ParseProcStat(line, &ticks, &cpu)) {
    if (wall > 0) {
      const double cores_used = static_cast<double>(ticks - std::min(ticks, last_process_ticks_)) / ticks_per_sec_ / wall;
      out.emplace_back("cpu/process_cores", cores_used);
      out.emplace_back("cpu/process_percent", 100.0 * cores_used / cores_);
    }
    last_process_ticks_ = ticks;
  } else {
    ++read_failures_;
  }
  std::map<int, ThreadTicks> threads;
  if (ReadThreads(&threads) && wall > 0) {
    std::vector<double> per_core(cores_, 0.0);
    for (const auto& [tid, t] : threads) {
      auto it = last_threads_.find(tid);
      const uint64_t before = it == last_threads_.end() ? 0 : std::min(t.ticks, it->second.ticks);
      if (t.cpu >= 0 && t.cpu < cores_) per_core[t.cpu] += static_cast<double>(t.ticks - before);
    }
    for (int k = 0; k < cores_; ++k)
      out.emplace_back("cpu/core" + std::to_string(k) + "_percent",
                       std::min(100.0, 100.0 * per_core[k] / ticks_per_sec_ / wall));
    last_threads_ = std::move(threads);
  } else if (wall > 0) {
    ++read_failures_;
  }
  if (ReadLine("/proc/self/statm", &line)) {
    std::istringstream in(line);
    uint64_t size = 0, resident = 0;
    if (in >> size >> resident)
      out.emplace_back("memory/rss_mib", static_cast<double>(resident) * ::sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0));
  } else {
    ++read_failures_;
  }
  return out;
}

}  // namespace ctrain::monitor
