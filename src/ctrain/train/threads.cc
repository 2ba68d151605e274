#include "ctrain/train/threads.h"

#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace ctrain::train {

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t* v) {
  s = Trim(s);
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The limit in CPUs from one cgroup folder; nullopt when none or unreadable.
std::optional<double> V2Limit(const std::string& dir) {
  std::string text;
  if (!ReadFile(dir + "/cpu.max", &text)) return std::nullopt;
  std::string_view t = Trim(text);
  const size_t sp = t.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  int64_t quota = 0, period = 0;
  if (t.substr(0, sp) == "max" || !ParseInt(t.substr(0, sp), &quota) || !ParseInt(t.substr(sp + 1), &period))
    return std::nullopt;
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

std::optional<double> V1Limit(const std::string& dir) {
  std::string q, p;
  int64_t quota = 0, period = 0;
  if (!ReadFile(dir + "/cpu.cfs_quota_us", &q) || !ReadFile(dir + "/cpu.cfs_period_us", &p)) return std::nullopt;
  if (!ParseInt(q, &quota) || !ParseInt(p, &period) || quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

// The smallest limit from MOUNT/PATH up to MOUNT (PATH not under MOUNT: MOUNT only).
std::optional<double> SmallestOnPath(const std::string& mount, std::string path,
                                     std::optional<double> (*limit)(const std::string&)) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (!path.empty() && !Exists(mount + path)) path.clear();
  std::optional<double> best;
  for (;;) {
    std::optional<double> l = limit(mount + path);
    if (l && (!best || *l < *best)) best = l;
    if (path.empty()) break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
  return best;
}

bool HasController(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<double> CgroupCpuLimit(const CgroupFiles& files) {
  std::string self;
  if (!ReadFile(files.self, &self)) self.clear();
  std::optional<double> best;
  auto take = [&](std::optional<double> l) {
    if (l && (!best || *l < *best)) best = l;
  };
  bool any_line = false;
  std::istringstream lines(self);
  for (std::string line; std::getline(lines, line);) {
    // "id:controllers:path"; the path may itself contain ':'.
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? std::string::npos : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {  // v2
      any_line = true;
      take(SmallestOnPath(files.root, path, V2Limit));
    } else if (HasController(controllers, "cpu")) {  // v1
      any_line = true;
      for (const char* mount : {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"})
        if (Exists(files.root + mount)) {
          take(SmallestOnPath(files.root + mount, path, V1Limit));
          break;
        }
    }
  }
  if (!any_line) {  // no membership file: the mount root itself, either version
    take(V2Limit(files.root));
    take(V1Limit(files.root + "/cpu"));
  }
  return best;
}

std::vector<int32_t> AffinityCpuIds() {
  std::vector<int32_t> ids;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return ids;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) ids.push_back(c);
  return ids;
}

int32_t AffinityCpus() {
  const size_t n = AffinityCpuIds().size();
  return n > 0 ? static_cast<int32_t>(n) : 1;
}

int32_t AvailableCpus(const CgroupFiles& files) {
  int32_t n = AffinityCpus();
  if (std::optional<double> limit = CgroupCpuLimit(files)) {
    const double c = std::ceil(*limit - 1e-9);
    if (c < n) n = static_cast<int32_t>(c);
  }
  return n < 1 ? 1 : n;
}

}  // namespace ctrain::train
