// Up-front memory check of a model's parameter tables: a --feature-size too
// large for this machine is refused with the sizes and bytes before anything
// is allocated (an allocation that succeeds lazily and is then touched gets
// the process OOM-killed instead of a message).
//
// Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/train/threads.h"

namespace ctrain::train {

// Memory this process may still use, in bytes, and where the figure comes from.
struct MemoryAvailable {
  std::optional<int64_t> mem_available;  // MemAvailable of /proc/meminfo
  std::optional<int64_t> cgroup_limit;   // the smallest memory limit on this process's cgroup path
  std::optional<int64_t> cgroup_usage;   // that cgroup's usage (memory.current / memory.usage_in_bytes)
                                         // less its reclaimable page cache (memory.stat inactive_file)
  // min(mem_available, cgroup_limit - cgroup_usage); nullopt when nothing is known.
  std::optional<int64_t> bytes() const;
  // e.g. "MemAvailable 12.3 GiB, cgroup memory limit 4.0 GiB (1.1 GiB in use)".
  std::string Describe() const;
};

// Reads MemAvailable from `meminfo` and the cgroup memory limit as
// CgroupCpuLimit finds the CPU limit (v2: memory.max / memory.current; v1:
// memory/memory.limit_in_bytes / memory.usage_in_bytes; "max" or a v1 value of
// 2^62 or more = no limit). Unreadable files leave the field empty.
MemoryAvailable ReadMemoryAvailable(const CgroupFiles& files = {}, const std::string& meminfo = "/proc/meminfo");

// Bytes of the DeepFM parameter tables w [feature_size, 1] and V
// [feature_size, embedding_size] with `slots` optimizer slots each (float32),
// plus `dense_floats` dense parameters with the same slots. Saturates at
// INT64_MAX instead of overflowing.
int64_t ParameterBytes(int64_t feature_size, int32_t embedding_size, int32_t slots, int64_t dense_floats);

// ResourceExhausted when `bytes` (ParameterBytes) exceed `mem.bytes()`, e.g.
// "the model needs 180.0 GiB for its parameters and optimizer slots
// (--feature-size 3000000000 x (--embedding-size 4 + 1) x 4 bytes x (1 + 2
// adam slots) + dense ...), but only 12.3 GiB is available (MemAvailable ...):
// lower --feature-size (hash into fewer buckets) or --embedding-size".
// OK when the available memory is unknown.
Status CheckParameterMemory(int64_t feature_size, int32_t embedding_size, int32_t slots, const std::string& optimizer,
                            int64_t dense_floats, const MemoryAvailable& mem);

}  // namespace ctrain::train
