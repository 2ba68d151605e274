// How the OpenMP threads of `train`, `eval` and `predict` wait between parallel regions: spinning
// (OMP_WAIT_POLICY=ACTIVE) or sleeping (PASSIVE), chosen per run from what the machine is doing.
//
// Measured on 2 cores (docs/performance.md#4, bench/contention_bench.sh): on an idle machine spinning
// threads train 1.05-1.2x faster than sleeping ones (every parallel region wakes sleeping threads); with
// another process on one of the cores, spinners take the core from the thread holding the work, and the run
// drops to 0.4-0.7x the 1-thread speed (0.01-0.3x with libgomp's default spin), where sleeping threads keep
// 0.97x. No single spin count is good at both (GOMP_SPINCOUNT 1000-100000 measured), so the process looks
// before it starts: ChooseOpenMPWaitAndReexec samples the CPUs it may run on for 100 ms (/proc/stat) and
// spins only where nobody else uses them, no other ctrain run is alive on the machine, and no cgroup CPU quota
// would be spent on spinning.
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded, so the choice takes a re-exec of /proc/self/exe
// (about 10-30 ms). The user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT always wins (no sample, no re-exec).
// Contention that starts after the sample is not seen: a run that spins then trains at about 0.7x the
// 1-thread speed until it ends (set OMP_WAIT_POLICY=passive on shared machines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::train {

// The time one CPU spent, in USER_HZ ticks (1/100 s), from a "cpuN" line of /proc/stat
// (proc(5): user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is already in user).
struct CpuTicks {
  int32_t cpu = -1;     // N of "cpuN"
  uint64_t total = 0;   // user + nice + system + idle + iowait + irq + softirq + steal
  uint64_t idle = 0;    // idle + iowait: the CPU had nothing to run
};

// Parses the per-CPU lines of a /proc/stat text (the aggregate "cpu" line and every other line are skipped).
// Errors (InvalidArgument) name `source` and the line number: a "cpuN" line with fewer than 8 numeric fields
// or a non-number among them.
StatusOr<std::vector<CpuTicks>> ParseProcStatCpus(std::string_view text, std::string_view source);

// The CPUs' worth of time others used on `cpus` between two samples: the sum over those CPUs of the busy
// (non-idle) share of the ticks that passed, in [0, cpus.size()]. Steal time counts as busy (another virtual
// machine held the core). A CPU missing from either sample, or with no ticks between them, adds nothing.
double BusyCpus(const std::vector<CpuTicks>& before, const std::vector<CpuTicks>& after,
                const std::vector<int32_t>& cpus);

// The wait policy for a run, and why: policy is "ACTIVE" or "PASSIVE" (libgomp's OMP_WAIT_POLICY values).
struct OpenMPWaitChoice {
  std::string policy;
  std::string reason;  // e.g. "2 CPUs idle at start", "other processes used 1.00 of our 2 CPUs at start"
  // From the CPU sample (idle or busy), not forced by the CPU count, a quota, an unreadable /proc/stat or
  // another ctrain process: only such a choice may be revised by measuring (--autotune, OpenMPWaitFromSample).
  bool sampled = false;
};

// Others' use at or above this many CPUs makes the run sleep instead of spin.
inline constexpr double kBusyCpusForPassive = 0.5;

// The decision, from the affinity CPU count, the cgroup CPU quota (CgroupCpuLimit, in CPUs) and others'
// use of those CPUs (BusyCpus; nullopt when /proc/stat could not be read):
//   1 CPU                          -> PASSIVE (one thread: nothing to spin for)
//   quota below the affinity CPUs  -> PASSIVE (spinning would spend the quota the working threads need)
//   use unknown                    -> PASSIVE (the safe side)
//   others use >= kBusyCpusForPassive -> PASSIVE
//   otherwise                      -> ACTIVE
OpenMPWaitChoice ChooseOpenMPWait(int32_t affinity_cpus, std::optional<double> cgroup_quota_cpus,
                                  std::optional<double> busy_cpus);

// The lock file by which ctrain processes on one machine see each other (flock(2); see below).
inline constexpr const char* kOpenMPWaitLockPath = "/tmp/ctrain-openmp-wait.lock";

// For the commands whose kernels run OpenMP teams (ours and oneDNN's, on the same libgomp). Call first thing
// in main(), before any thread starts. When neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set:
//  - other ctrain processes: every run holds `lock_path` locked shared for its life (the descriptor survives
//    the exec, then is closed on any later exec). A run that cannot lock it exclusively for its look is not
//    alone (ranks of one job on one host, tests in parallel, two jobs) and sleeps: two spinning runs on the
//    same cores train at 0.4x each (docs/performance.md#4). Runs that start while one is looking touch the
//    file, and the looking one sleeps too. No lock file (unwritable /tmp) also means PASSIVE.
//  - otherwise samples this process's CPUs for `sample_ms` and applies ChooseOpenMPWait;
// then sets OMP_WAIT_POLICY to the policy and CTRAIN_OMP_WAIT to "POLICY: reason" (read by
// OpenMPWaitSummary), and re-executes /proc/self/exe with `argv`. So it returns only without re-executing
// (OK: the user's setting, or the re-executed process itself) or when the exec failed (Unavailable, naming
// /proc/self/exe; the process goes on with libgomp's default spin).
Status ChooseOpenMPWaitAndReexec(char** argv, int32_t sample_ms = 100,
                                 const std::string& lock_path = kOpenMPWaitLockPath);

// True in a process that ChooseOpenMPWaitAndReexec re-executed with a policy it chose from the CPU sample
// (OpenMPWaitChoice::sampled): the user set no policy, no other ctrain process was alive, the CPUs have no
// quota below their count. Only then may `train --autotune` measure the other policy (job/train_job.cc).
bool OpenMPWaitFromSample();

// Re-executes this process (main's argv, as given to ChooseOpenMPWaitAndReexec) with OMP_WAIT_POLICY =
// choice.policy and the run line's reason, keeping the lock on kOpenMPWaitLockPath. Returns only on failure:
// FailedPrecondition when ChooseOpenMPWaitAndReexec never ran (a library caller: nothing to re-execute),
// Unavailable when the exec failed (the process goes on as it was).
Status ReexecWithOpenMPWait(const OpenMPWaitChoice& choice);

// Replaces the reason OpenMPWaitSummary gives for an automatic choice (no-op for the user's own setting).
void SetOpenMPWaitReason(const std::string& reason);

// How this process's OpenMP threads wait, for the run line: "wait=ACTIVE (auto: 2 CPUs idle at start)",
// "wait=passive (OMP_WAIT_POLICY)", "wait=spin 10000 (GOMP_SPINCOUNT)" or "wait=libgomp default".
std::string OpenMPWaitSummary();

}  // namespace ctrain::train
