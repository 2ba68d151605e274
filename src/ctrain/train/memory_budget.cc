#include "ctrain/train/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

namespace ctrain::train {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::optional<std::string> Read(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<int64_t> ParseBytes(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Limit and usage of the cgroup folder MOUNT/PATH, or of the closest ancestor with a limit.
void ReadCgroup(const std::string& mount, std::string path, const char* limit_file, const char* usage_file,
                MemoryAvailable* out) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (!path.empty() && ::access((mount + path).c_str(), F_OK) != 0) path.clear();
  for (;;) {
    std::optional<std::string> l = Read(mount + path + "/" + limit_file);
    std::optional<int64_t> limit = l ? ParseBytes(*l) : std::nullopt;
    if (limit && *limit < (int64_t{1} << 62) && (!out->cgroup_limit || *limit < *out->cgroup_limit)) {
      out->cgroup_limit = limit;
      std::optional<std::string> u = Read(mount + path + "/" + usage_file);
      out->cgroup_usage = u ? ParseBytes(*u) : std::nullopt;
      // Page cache that the kernel reclaims under the limit is not in use: usage - inactive_file.
      if (out->cgroup_usage) {
        std::istringstream stat(Read(mount + path + "/memory.stat").value_or(""));
        for (std::string key, value; stat >> key >> value;)
          if (key == "inactive_file" || key == "total_inactive_file")
            if (std::optional<int64_t> v = ParseBytes(value)) out->cgroup_usage = std::max<int64_t>(0, *out->cgroup_usage - *v);
      }
    }
    if (path.empty()) break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
}

std::string GiB(int64_t b) {
  char buf[48];
  if (b >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return std::string(buf) + " (" + std::to_string(b) + " bytes)";
}

int64_t Mul(int64_t a, int64_t b) {
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}

}  // namespace

std::optional<int64_t> MemoryAvailable::bytes() const {
  std::optional<int64_t> best = mem_available;
  if (cgroup_limit) {
    const int64_t left = std::max<int64_t>(0, *cgroup_limit - cgroup_usage.value_or(0));
    if (!best || left < *best) best = left;
  }
  return best;
}

std::string MemoryAvailable::Describe() const {
  std::string s;
  if (mem_available) s = "MemAvailable " + GiB(*mem_available);
  if (cgroup_limit) {
    s += (s.empty() ? "" : ", ") + std::string("cgroup memory limit ") + GiB(*cgroup_limit);
    if (cgroup_usage) s += " with " + GiB(*cgroup_usage) + " in use";
  }
  return s.empty() ? "unknown" : s;
}

MemoryAvailable ReadMemoryAvailable(const CgroupFiles& files, const std::string& meminfo) {
  MemoryAvailable m;
  if (std::optional<std::string> text = Read(meminfo)) {
    std::istringstream is(*text);
    for (std::string line; std::getline(is, line);) {
      if (line.rfind("MemAvailable:", 0) != 0) continue;
      std::istringstream ls(line.substr(13));
      int64_t kb = -1;
      std::string unit;
      if ((ls >> kb) && kb >= 0) m.mem_available = Mul(kb, 1024);
    }
  }
  std::optional<std::string> self = Read(files.self);
  std::istringstream lines(self.value_or(""));
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? std::string::npos : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      ReadCgroup(files.root, path, "memory.max", "memory.current", &m);
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      ReadCgroup(files.root + "/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes", &m);
    }
  }
  return m;
}

int64_t ParameterBytes(int64_t feature_size, int32_t embedding_size, int32_t slots, int64_t dense_floats) {
  const int64_t copies = 1 + std::max(0, slots);
  const int64_t table = Mul(Mul(Mul(feature_size, int64_t{embedding_size} + 1), 4), copies);
  const int64_t dense = Mul(Mul(dense_floats, 4), copies);
  return table > kMax - dense ? kMax : table + dense;
}

Status CheckParameterMemory(int64_t feature_size, int32_t embedding_size, int32_t slots, const std::string& optimizer,
                            int64_t dense_floats, const MemoryAvailable& mem) {
  const std::optional<int64_t> avail = mem.bytes();
  if (!avail) return Status::OK();
  const int64_t need = ParameterBytes(feature_size, embedding_size, slots, dense_floats);
  if (need <= *avail) return Status::OK();
  return ResourceExhaustedError(
      "the model needs " + GiB(need) + " for its parameters and optimizer slots (--feature-size " +
      std::to_string(feature_size) + " x (--embedding-size " + std::to_string(embedding_size) + " + 1) x 4 bytes x (1 + " +
      std::to_string(slots) + " " + optimizer + " slot(s)), plus " + std::to_string(dense_floats) +
      " dense floats), but only " + GiB(*avail) + " is available (" + mem.Describe() +
      "): lower --feature-size (hash into fewer buckets) or --embedding-size");
}

}  // namespace ctrain::train
