// How many CPUs this process may use.
//
// Thread defaults (intra-op threads, autotune candidates) follow the CPUs the
// process may really run on: the affinity mask AND the cgroup CPU bandwidth
// quota, so a container limited to 2 CPUs on a 64-core host starts 2 threads.
//
// How the OpenMP threads wait (spin or sleep) is chosen in train/openmp_wait.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>


namespace ctrain::train {

// Where the cgroup CPU limit is read from; tests point these at fixture trees.
struct CgroupFiles {
  std::string root = "/sys/fs/cgroup";     // the cgroup mount (v2 unified; v1 has one folder per controller)
  std::string self = "/proc/self/cgroup";  // this process's membership lines "id:controllers:path"
};

// The CPU bandwidth limit of this process's cgroup, in CPUs (quota / period,
// e.g. 1.5); the smallest along the cgroup's path up to the root of the mount.
// nullopt when there is no limit or nothing can be read.
//   v2 (line "0::PATH"): ROOT/PATH/cpu.max = "QUOTA PERIOD" or "max PERIOD".
//   v1 (line "N:...cpu...:PATH"): ROOT/cpu[,cpuacct]/PATH/cpu.cfs_quota_us
//      (-1 = none) and cpu.cfs_period_us.
// A PATH that does not exist under ROOT (a container's own cgroup namespace
// mounted at ROOT) is read as ROOT itself. Unparsable files count as no limit.
std::optional<double> CgroupCpuLimit(const CgroupFiles& files = {});

// The ids of the CPUs in this process's affinity mask (sched_getaffinity), ascending; empty if it cannot be read.
std::vector<int32_t> AffinityCpuIds();

// CPUs in this process's affinity mask (AffinityCpuIds().size()), at least 1.
int32_t AffinityCpus();

// The CPUs this process may use: min(AffinityCpus(), ceil(CgroupCpuLimit())),
// at least 1. The default for thread counts.
int32_t AvailableCpus(const CgroupFiles& files = {});

}  // namespace ctrain::train
