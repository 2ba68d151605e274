#include "ctrain/monitor/nvml.h"

#include <dlfcn.h>

namespace ctrain::monitor {
namespace {

// The few NVML types used, as declared in nvml.h (ABI-stable since NVML 2).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;

}  // namespace

struct NvmlSampler::Api {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  std::vector<nvmlDevice_t> devices;
  ~Api() {
    if (shutdown != nullptr) shutdown();
    if (lib != nullptr) ::dlclose(lib);
  }
};

std::unique_ptr<NvmlSampler> NvmlSampler::Open(std::string* why) {
  auto fail = [&](const std::string& w) -> std::unique_ptr<NvmlSampler> {
    if (why != nullptr) *why = w;
    return nullptr;
  };
  auto api = std::make_unique<Api>();
  api->lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) return fail("libnvidia-ml.so.1 not loadable (no NVIDIA driver): no GPU metrics");
  auto sym = [&](const char* name, auto* fn) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(::dlsym(api->lib, name));
    return *fn != nullptr;
  };
  if (!sym("nvmlInit_v2", &api->init) || !sym("nvmlShutdown", &api->shutdown) ||
      !sym("nvmlDeviceGetCount_v2", &api->count) || !sym("nvmlDeviceGetHandleByIndex_v2", &api->handle) ||
      !sym("nvmlDeviceGetUtilizationRates", &api->util) || !sym("nvmlDeviceGetMemoryInfo", &api->memory)) {
    api->shutdown = nullptr;
    return fail("libnvidia-ml.so.1 lacks an NVML symbol: no GPU metrics");
  }
  if (api->init() != NVML_SUCCESS) {
    api->shutdown = nullptr;
    return fail("nvmlInit failed: no GPU metrics");
  }
  unsigned int n = 0;
  if (api->count(&n) != NVML_SUCCESS || n == 0) return fail("NVML reports no GPU");
  for (unsigned int i = 0; i < n; ++i) {
    nvmlDevice_t d = nullptr;
    if (api->handle(i, &d) == NVML_SUCCESS) api->devices.push_back(d);
  }
  if (api->devices.empty()) return fail("NVML gave no device handle");
  return std::unique_ptr<NvmlSampler>(new NvmlSampler(std::move(api)));
}

NvmlSampler::NvmlSampler(std::unique_ptr<Api> api) : api_(std::move(api)) {}
NvmlSampler::~NvmlSampler() = default;

int NvmlSampler::devices() const { return static_cast<int>(api_->devices.size()); }

std::vector<Scalar> NvmlSampler::Sample() {
  std::vector<Scalar> out;
  for (size_t i = 0; i < api_->devices.size(); ++i) {
    const std::string p = "gpu" + std::to_string(i) + "/";
    nvmlUtilization_t u{};
    if (api_->util(api_->devices[i], &u) == NVML_SUCCESS) out.emplace_back(p + "utilization_percent", u.gpu);
    nvmlMemory_t m{};
    if (api_->memory(api_->devices[i], &m) == NVML_SUCCESS) {
      out.emplace_back(p + "memory_used_mib", static_cast<double>(m.used) / (1024.0 * 1024.0));
      if (m.total > 0) out.emplace_back(p + "memory_percent", 100.0 * static_cast<double>(m.used) / m.total);
    }
  }
  return out;
}

}  // namespace ctrain::monitor
