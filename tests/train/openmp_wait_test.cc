// The OpenMP wait choice: /proc/stat parsing (and its errors), others' CPU use between two samples, the
// decision table, and the run line's summary of the environment.
#include "ctrain/train/openmp_wait.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace ctrain::train {
namespace {

// A /proc/stat of a 2-CPU machine (proc(5) layout: 10 counters per cpu line).
constexpr const char* kStat =
    "cpu  300 0 100 1600 0 0 0 0 0 0\n"
    "cpu0 200 0 50 750 0 0 0 0 0 0\n"
    "cpu1 100 0 50 850 0 0 0 0 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 999\n"
    "btime 1700000000\n";

TEST(ProcStatTest, ParsesEveryCpuLineAndSkipsTheRest) {
  StatusOr<std::vector<CpuTicks>> s = ParseProcStatCpus(kStat, "stat");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].cpu, 0);
  EXPECT_EQ((*s)[0].total, 1000u);
  EXPECT_EQ((*s)[0].idle, 750u);
  EXPECT_EQ((*s)[1].cpu, 1);
  EXPECT_EQ((*s)[1].idle, 850u);
}

TEST(ProcStatTest, IowaitIsIdleAndStealIsBusy) {
  // user nice system idle iowait irq softirq steal: 10 + 0 + 0 + 50 + 20 + 0 + 0 + 20 = 100.
  StatusOr<std::vector<CpuTicks>> s = ParseProcStatCpus("cpu3 10 0 0 50 20 0 0 20\n", "stat");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].cpu, 3);
  EXPECT_EQ((*s)[0].total, 100u);
  EXPECT_EQ((*s)[0].idle, 70u);
}

TEST(ProcStatTest, MalformedCpuLinesAreNamedWithTheirLineNumber) {
  StatusOr<std::vector<CpuTicks>> s = ParseProcStatCpus("cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3\n", "/proc/stat");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/proc/stat:2: expected 8 or more tick counts after the CPU name, got 3"),
            std::string::npos)
      << s.status().ToString();
  s = ParseProcStatCpus("cpu0 1 2 3 x 5 6 7 8\n", "/proc/stat");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/proc/stat:1: tick count 4 'x' is not a number"), std::string::npos)
      << s.status().ToString();
  s = ParseProcStatCpus("cpu0x 1 2 3 4 5 6 7 8\n", "/proc/stat");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad CPU name 'cpu0x'"), std::string::npos) << s.status().ToString();
  EXPECT_TRUE(ParseProcStatCpus("", "/proc/stat").ok());
}

TEST(BusyCpusTest, SumsTheBusyShareOfTheGivenCpus) {
  const std::vector<CpuTicks> a = {{0, 1000, 750}, {1, 1000, 850}, {2, 1000, 1000}};
  // cpu0: 100 ticks, 0 idle (a busy loop); cpu1: 100 ticks, 75 idle; cpu2: 100 ticks, all idle.
  const std::vector<CpuTicks> b = {{0, 1100, 750}, {1, 1100, 925}, {2, 1100, 1100}};
  EXPECT_DOUBLE_EQ(BusyCpus(a, b, {0, 1, 2}), 1.25);
  EXPECT_DOUBLE_EQ(BusyCpus(a, b, {1}), 0.25);
  EXPECT_DOUBLE_EQ(BusyCpus(a, b, {2}), 0.0);
  EXPECT_DOUBLE_EQ(BusyCpus(a, b, {7}), 0.0);  // not in either sample
  EXPECT_DOUBLE_EQ(BusyCpus(a, a, {0, 1}), 0.0);  // no ticks passed
}

TEST(ChooseOpenMPWaitTest, SpinsOnlyOnIdleUnlimitedCpus) {
  OpenMPWaitChoice c = ChooseOpenMPWait(2, std::nullopt, 0.1);
  EXPECT_EQ(c.policy, "ACTIVE");
  EXPECT_EQ(c.reason, "2 CPUs idle at start (others 0.10)");
  c = ChooseOpenMPWait(2, std::nullopt, 1.0);
  EXPECT_EQ(c.policy, "PASSIVE");
  EXPECT_EQ(c.reason, "other processes used 1.00 of our 2 CPUs at start");
  c = ChooseOpenMPWait(2, std::nullopt, kBusyCpusForPassive);
  EXPECT_EQ(c.policy, "PASSIVE");
  c = ChooseOpenMPWait(2, std::nullopt, kBusyCpusForPassive - 0.01);
  EXPECT_EQ(c.policy, "ACTIVE");
  c = ChooseOpenMPWait(8, 1.5, 0.0);
  EXPECT_EQ(c.policy, "PASSIVE");
  EXPECT_EQ(c.reason, "cgroup CPU quota 1.50 of 8 CPUs");
  c = ChooseOpenMPWait(2, 2.0, 0.0);  // a quota of every CPU spends nothing extra
  EXPECT_EQ(c.policy, "ACTIVE");
  c = ChooseOpenMPWait(1, std::nullopt, 0.0);
  EXPECT_EQ(c.policy, "PASSIVE");
  EXPECT_EQ(c.reason, "1 CPU");
  c = ChooseOpenMPWait(4, std::nullopt, std::nullopt);
  EXPECT_EQ(c.policy, "PASSIVE");
  EXPECT_EQ(c.reason, "CPU use unknown (/proc/stat unreadable)");
}

// Only a choice the sample made may be revised by measuring (--autotune): not the CPU count's, a quota's or
// an unreadable /proc/stat's.
TEST(ChooseOpenMPWaitTest, MarksTheChoicesTheSampleMade) {
  EXPECT_TRUE(ChooseOpenMPWait(2, std::nullopt, 0.1).sampled);
  EXPECT_TRUE(ChooseOpenMPWait(2, std::nullopt, 1.5).sampled);
  EXPECT_TRUE(ChooseOpenMPWait(2, 2.0, 0.0).sampled);
  EXPECT_FALSE(ChooseOpenMPWait(1, std::nullopt, 0.0).sampled);
  EXPECT_FALSE(ChooseOpenMPWait(8, 1.5, 0.0).sampled);
  EXPECT_FALSE(ChooseOpenMPWait(4, std::nullopt, std::nullopt).sampled);
}

// Sets (or, with nullptr, unsets) one variable for the scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(OpenMPWaitSummaryTest, SaysWhoChoseThePolicy) {
  {
    ScopedEnv p("OMP_WAIT_POLICY", "ACTIVE"), m("CTRAIN_OMP_WAIT", "ACTIVE: 2 CPUs idle at start (others 0.00)"),
        s("GOMP_SPINCOUNT", nullptr);
    EXPECT_EQ(OpenMPWaitSummary(), "wait=ACTIVE (auto: 2 CPUs idle at start (others 0.00))");
  }
  {  // the marker of another policy (a parent's choice, then the user's own setting) is not ours
    ScopedEnv p("OMP_WAIT_POLICY", "passive"), m("CTRAIN_OMP_WAIT", "ACTIVE: 2 CPUs idle at start"),
        s("GOMP_SPINCOUNT", nullptr);
    EXPECT_EQ(OpenMPWaitSummary(), "wait=passive (OMP_WAIT_POLICY)");
  }
  {
    ScopedEnv p("OMP_WAIT_POLICY", nullptr), m("CTRAIN_OMP_WAIT", nullptr), s("GOMP_SPINCOUNT", "1234");
    EXPECT_EQ(OpenMPWaitSummary(), "wait=spin 1234 (GOMP_SPINCOUNT)");
  }
  {
    ScopedEnv p("OMP_WAIT_POLICY", nullptr), m("CTRAIN_OMP_WAIT", nullptr), s("GOMP_SPINCOUNT", nullptr);
    EXPECT_EQ(OpenMPWaitSummary(), "wait=libgomp default");
  }
}

// With the user's own policy there is no exec, but the run still holds the lock shared, so the next ctrain
// run on the machine sees it: an exclusive lock fails, a shared one does not.
TEST(OpenMPWaitTest, TheUsersSettingMeansNoReexecButTheLockIsHeld) {
  const std::string lock = ::testing::TempDir() + "openmp_wait_lock_" + std::to_string(::getpid());
  ScopedEnv p("OMP_WAIT_POLICY", "passive"), f("CTRAIN_OMP_WAIT_LOCK_FD", nullptr);
  char arg0[] = "/nonexistent/ctrain";
  char* argv[] = {arg0, nullptr};
  ASSERT_TRUE(ChooseOpenMPWaitAndReexec(argv, 1, lock).ok());  // returned: no exec happened
  const int other = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(other, 0);
  EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(::flock(other, LOCK_SH | LOCK_NB), 0);
  ::close(other);
  ::unlink(lock.c_str());
}

}  // namespace
}  // namespace ctrain::train
