// GPU utilisation through NVML, loaded at run time (dlopen("libnvidia-ml.so.1")),
// so ctrain has no build or run dependency on the NVIDIA driver: on a machine
// without it, Open() returns null and no GPU scalars are written.
//
// Per device i (NVML's index), each Sample():
//   gpu<i>/utilization_percent  nvmlDeviceGetUtilizationRates().gpu: the share of the last
//                               sample period (1/6 s to 1 s, driver dependent) in which a
//                               kernel ran, 0-100
//   gpu<i>/memory_used_mib      nvmlDeviceGetMemoryInfo().used, MiB
//   gpu<i>/memory_percent       used / total, 0-100
// These are device-wide figures (every process on the GPU), as nvidia-smi shows them.
//
// Thread safety: one thread calls Sample().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ctrain/monitor/event_file.h"

namespace ctrain::monitor {

class NvmlSampler {
 public:
  // Null when libnvidia-ml.so.1 cannot be loaded, lacks a symbol, nvmlInit fails or
  // there is no device; *why (if given) says which.
  static std::unique_ptr<NvmlSampler> Open(std::string* why = nullptr);
  ~NvmlSampler();
  std::vector<Scalar> Sample();
  int devices() const;

  struct Api;

 private:
  explicit NvmlSampler(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace ctrain::monitor
