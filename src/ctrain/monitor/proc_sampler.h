// Utilisation of this process from /proc: CPU (total and per core) and RSS.
//
// Each Sample() reports the interval since the previous one (the first call
// covers the time since Start):
//   cpu/process_cores     CPU seconds of all threads / wall seconds (2.0 = two cores busy)
//   cpu/process_percent   the same as a share of the cores this machine has online (0-100)
//   cpu/core<k>_percent   CPU time of this process's threads on core k / wall time (0-100):
//                         each thread's CPU time in the interval is counted on the core it
//                         last ran on (/proc/self/task/<tid>/stat field 39), exact for pinned
//                         threads and an approximation for threads the kernel migrates
//   memory/rss_mib        resident set size (/proc/self/statm), MiB
// Sources: /proc/self/stat (utime, stime), /proc/self/task/*/stat, /proc/self/statm,
// sysconf(_SC_CLK_TCK) and sysconf(_SC_NPROCESSORS_ONLN). A file that cannot be read
// leaves its scalars out of that sample (counted in read_failures()).
//
// Thread safety: one thread calls Sample().
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ctrain/base/clock.h"
#include "ctrain/monitor/event_file.h"

namespace ctrain::monitor {

class ProcSampler {
 public:
  ProcSampler();
  std::vector<Scalar> Sample();
  int64_t read_failures() const { return read_failures_; }
  int cores() const { return cores_; }

 private:
  struct ThreadTicks {
    uint64_t ticks = 0;
    int cpu = 0;
  };
  bool ReadThreads(std::map<int, ThreadTicks>* out);
  Clock::time_point last_;
  uint64_t last_process_ticks_ = 0;
  std::map<int, ThreadTicks> last_threads_;
  int cores_ = 1;
  double ticks_per_sec_ = 100;
  int64_t read_failures_ = 0;
};

// Parses one /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line: utime + stime
// (clock ticks) and the processor it last ran on. False if the line is malformed.
// The command name (field 2) may hold spaces and parentheses: fields are counted
// after the last ')'.
bool ParseProcStat(const std::string& line, uint64_t* ticks, int* cpu);

}  // namespace ctrain::monitor
