#include "ctrain/train/openmp_wait.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ctrain/io/file.h"
#include "ctrain/train/threads.h"

namespace ctrain::train {

namespace {

constexpr const char* kMarker = "CTRAIN_OMP_WAIT";
constexpr const char* kLockFdVar = "CTRAIN_OMP_WAIT_LOCK_FD";
// Set (to "1") beside kMarker when the policy came from the CPU sample, not from the lock or the CPU count.
constexpr const char* kSampledVar = "CTRAIN_OMP_WAIT_SAMPLED";

// What ReexecWithOpenMPWait needs after ChooseOpenMPWaitAndReexec returned: main's argv and the lock's
// descriptor (-1: none held).
char** g_argv = nullptr;
int g_lock_fd = -1;

// The whitespace-separated words of one line.
std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) w.push_back(line.substr(b, i - b));
  }
  return w;
}

bool ParseU64(std::string_view s, uint64_t* v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

StatusOr<std::vector<CpuTicks>> SampleProcStat() {
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString("/proc/stat"));
  return ParseProcStatCpus(text, "/proc/stat");
}

// Every train/eval/predict run holds the lock shared while it lives, so the next one sees it. One that holds
// it exclusive now (its 100 ms look) lets go soon: up to 1 s for the shared lock, then on without it.
void HoldShared(int fd) {
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  for (int i = 0; !held && i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    held = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  }
}

std::optional<timespec> ModificationTime(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return st.st_mtim;
}

// Re-executes /proc/self/exe with g_argv, OMP_WAIT_POLICY = c.policy and the marker; `lock` (held shared,
// or -1) survives the exec. Returns only when the exec failed (Unavailable), with the environment and the
// lock's close-on-exec flag as they were.
Status ExecWithWait(int lock, const OpenMPWaitChoice& c) {
  if (lock >= 0) {
    ::fcntl(lock, F_SETFD, 0);
    ::setenv(kLockFdVar, std::to_string(lock).c_str(), 1);
  }
  ::setenv("OMP_WAIT_POLICY", c.policy.c_str(), 1);
  ::setenv(kMarker, (c.policy + ": " + c.reason).c_str(), 1);
  if (c.sampled) ::setenv(kSampledVar, "1", 1);
  else ::unsetenv(kSampledVar);
  ::execv("/proc/self/exe", g_argv);
  const int err = errno;
  ::unsetenv("OMP_WAIT_POLICY");
  ::unsetenv(kMarker);
  ::unsetenv(kLockFdVar);
  ::unsetenv(kSampledVar);
  if (lock >= 0) ::fcntl(lock, F_SETFD, FD_CLOEXEC);  // still held: this process goes on
  return ErrnoError("/proc/self/exe",
                    "could not re-execute with OMP_WAIT_POLICY=" + c.policy +
                        "; OpenMP threads wait with libgomp's default spin (set OMP_WAIT_POLICY yourself)",
                    err);
}

}  // namespace

StatusOr<std::vector<CpuTicks>> ParseProcStatCpus(std::string_view text, std::string_view source) {
  std::vector<CpuTicks> out;
  int64_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
    const std::vector<std::string_view> w = Words(line);
    const auto bad = [&](const std::string& why) {
      return InvalidArgumentError(std::string(source) + ":" + std::to_string(line_no) + ": " + why + " in '" +
                                  std::string(line) + "'");
    };
    uint64_t id = 0;
    if (!ParseU64(w[0].substr(3), &id) || id > 1u << 20) return bad("bad CPU name '" + std::string(w[0]) + "'");
    if (w.size() < 9) return bad("expected 8 or more tick counts after the CPU name, got " + std::to_string(w.size() - 1));
    uint64_t v[8];
    for (int i = 0; i < 8; ++i)
      if (!ParseU64(w[i + 1], &v[i])) return bad("tick count " + std::to_string(i + 1) + " '" + std::string(w[i + 1]) + "' is not a number");
    CpuTicks t;
    t.cpu = static_cast<int32_t>(id);
    for (uint64_t x : v) t.total += x;
    t.idle = v[3] + v[4];
    out.push_back(t);
  }
  return out;
}

double BusyCpus(const std::vector<CpuTicks>& before, const std::vector<CpuTicks>& after,
                const std::vector<int32_t>& cpus) {
  const auto find = [](const std::vector<CpuTicks>& s, int32_t cpu) -> const CpuTicks* {
    for (const CpuTicks& t : s)
      if (t.cpu == cpu) return &t;
    return nullptr;
  };
  double busy = 0;
  for (int32_t c : cpus) {
    const CpuTicks* a = find(before, c);
    const CpuTicks* b = find(after, c);
    if (a == nullptr || b == nullptr || b->total <= a->total || b->idle < a->idle) continue;
    const double total = static_cast<double>(b->total - a->total);
    const double idle = static_cast<double>(b->idle - a->idle);
    busy += idle >= total ? 0.0 : (total - idle) / total;
  }
  return busy;
}

OpenMPWaitChoice ChooseOpenMPWait(int32_t affinity_cpus, std::optional<double> cgroup_quota_cpus,
                                  std::optional<double> busy_cpus) {
  char buf[160];
  if (affinity_cpus <= 1) return {"PASSIVE", "1 CPU"};
  if (cgroup_quota_cpus && *cgroup_quota_cpus < affinity_cpus - 1e-9) {
    std::snprintf(buf, sizeof buf, "cgroup CPU quota %.2f of %d CPUs", *cgroup_quota_cpus, affinity_cpus);
    return {"PASSIVE", buf};
  }
  if (!busy_cpus) return {"PASSIVE", "CPU use unknown (/proc/stat unreadable)"};
  if (*busy_cpus >= kBusyCpusForPassive) {
    std::snprintf(buf, sizeof buf, "other processes used %.2f of our %d CPUs at start", *busy_cpus, affinity_cpus);
    return {"PASSIVE", buf, true};
  }
  std::snprintf(buf, sizeof buf, "%d CPUs idle at start (others %.2f)", affinity_cpus, *busy_cpus);
  return {"ACTIVE", buf, true};
}

Status ChooseOpenMPWaitAndReexec(char** argv, int32_t sample_ms, const std::string& lock_path) {
  g_argv = argv;
  if (const char* fd = ::getenv(kLockFdVar)) {  // the re-executed process: keep the lock, not its children
    int v = -1;
    std::from_chars(fd, fd + std::strlen(fd), v);
    if (v >= 0) ::fcntl(v, F_SETFD, FD_CLOEXEC);
    g_lock_fd = v;
    ::unsetenv(kLockFdVar);
    return Status::OK();
  }
  // Not O_CLOEXEC: the lock lives as long as the re-executed process. Writable where it can be (a run that
  // finds another one looking touches the file, see below); read-only is enough for the lock itself.
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
  if (lock < 0) lock = ::open(lock_path.c_str(), O_RDONLY);
  if (::getenv("OMP_WAIT_POLICY") != nullptr || ::getenv("GOMP_SPINCOUNT") != nullptr) {
    if (lock >= 0) {  // the user's choice, no exec; still seen by the next ctrain run
      HoldShared(lock);
      ::fcntl(lock, F_SETFD, FD_CLOEXEC);
    }
    return Status::OK();
  }
  const std::vector<int32_t> cpus = AffinityCpuIds();
  const int32_t n = static_cast<int32_t>(cpus.size());
  std::optional<bool> alone;
  if (lock >= 0) alone = ::flock(lock, LOCK_EX | LOCK_NB) == 0;
  // Runs started together (the ranks of one job on a host): the one that won the exclusive lock is looking;
  // the others touch the file, and it sees the new modification time when its look ends.
  if (alone.has_value() && !*alone) ::futimens(lock, nullptr);
  std::optional<double> busy;
  bool joined = false;
  if (n > 1 && alone.value_or(false)) {  // one CPU, or another ctrain running: no sample needed
    const std::optional<timespec> m0 = ModificationTime(lock);
    StatusOr<std::vector<CpuTicks>> a = SampleProcStat();
    std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms));
    StatusOr<std::vector<CpuTicks>> b = SampleProcStat();
    if (a.ok() && b.ok()) busy = BusyCpus(*a, *b, cpus);
    const std::optional<timespec> m1 = ModificationTime(lock);
    joined = m0 && m1 && (m0->tv_sec != m1->tv_sec || m0->tv_nsec != m1->tv_nsec);
  }
  OpenMPWaitChoice c = ChooseOpenMPWait(n, CgroupCpuLimit(), busy);
  if (n > 1 && !alone.value_or(false))
    c = {"PASSIVE", alone.has_value() ? "another ctrain process holds " + lock_path
                                      : "could not open " + lock_path + " to see other ctrain processes"};
  else if (n > 1 && joined)
    c = {"PASSIVE", "another ctrain process started at the same time (" + lock_path + ")"};
  if (lock >= 0) HoldShared(lock);
  return ExecWithWait(lock, c);
}

bool OpenMPWaitFromSample() {
  const char* policy = ::getenv("OMP_WAIT_POLICY");
  const char* marker = ::getenv(kMarker);
  const char* sampled = ::getenv(kSampledVar);
  return g_argv != nullptr && policy != nullptr && marker != nullptr && sampled != nullptr &&
         std::string_view(sampled) == "1" && std::string_view(marker).starts_with(std::string(policy) + ": ");
}

Status ReexecWithOpenMPWait(const OpenMPWaitChoice& choice) {
  if (g_argv == nullptr)
    return FailedPreconditionError("cannot re-execute with OMP_WAIT_POLICY=" + choice.policy +
                                   ": ChooseOpenMPWaitAndReexec did not run in this process");
  return ExecWithWait(g_lock_fd, choice);
}

void SetOpenMPWaitReason(const std::string& reason) {
  if (const char* policy = ::getenv("OMP_WAIT_POLICY"); policy != nullptr && ::getenv(kMarker) != nullptr)
    ::setenv(kMarker, (std::string(policy) + ": " + reason).c_str(), 1);
}

std::string OpenMPWaitSummary() {
  const char* policy = ::getenv("OMP_WAIT_POLICY");
  const char* marker = ::getenv(kMarker);
  if (policy != nullptr && marker != nullptr) {
    const std::string_view m(marker), p(policy);
    if (m.size() > p.size() + 2 && m.substr(0, p.size()) == p && m.substr(p.size(), 2) == ": ")
      return "wait=" + std::string(p) + " (auto: " + std::string(m.substr(p.size() + 2)) + ")";
  }
  if (policy != nullptr) return "wait=" + std::string(policy) + " (OMP_WAIT_POLICY)";
  if (const char* spin = ::getenv("GOMP_SPINCOUNT")) return "wait=spin " + std::string(spin) + " (GOMP_SPINCOUNT)";
  return "wait=libgomp default";
}

}  // namespace ctrain::train
