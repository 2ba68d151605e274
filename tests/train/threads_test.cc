// CPU budget of the process: the cgroup quota parsing on fixture trees
// (cgroup v1 and v2 layouts), and the thread default derived from it.
#include "ctrain/train/threads.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ctrain::train {
namespace {

namespace fs = std::filesystem;

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_threads_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "root");
    files_.root = (dir_ / "root").string();
    files_.self = (dir_ / "self_cgroup").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes `text` to root/<rel> (creating folders).
  void Root(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / "root" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Self(const std::string& text) { std::ofstream(files_.self) << text; }

  fs::path dir_;
  CgroupFiles files_;
};

TEST_F(CgroupTest, V2QuotaOfTwoCpus) {
  Self("0::/\n");
  Root("cpu.max", "200000 100000\n");
  ASSERT_TRUE(CgroupCpuLimit(files_).has_value());
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 2.0);
  EXPECT_EQ(AvailableCpus(files_), std::min(2, AffinityCpus()));
}

TEST_F(CgroupTest, V2MaxIsNoLimit) {
  Self("0::/\n");
  Root("cpu.max", "max 100000\n");
  EXPECT_FALSE(CgroupCpuLimit(files_).has_value());
  EXPECT_EQ(AvailableCpus(files_), AffinityCpus());
}

TEST_F(CgroupTest, V2FractionalQuotaRoundsUp) {
  Self("0::/\n");
  Root("cpu.max", "150000 100000");
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 1.5);
  EXPECT_EQ(AvailableCpus(files_), std::min(2, AffinityCpus()));
  Root("cpu.max", "50000 100000");  // half a CPU still runs one thread
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 0.5);
  EXPECT_EQ(AvailableCpus(files_), 1);
}

TEST_F(CgroupTest, V2SmallestLimitOnThePathWins) {
  Self("0::/kubepods/pod1/ctr\n");
  Root("kubepods/pod1/ctr/cpu.max", "max 100000\n");
  Root("kubepods/pod1/cpu.max", "100000 100000\n");  // 1 CPU for the pod
  Root("kubepods/cpu.max", "800000 100000\n");
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 1.0);
  EXPECT_EQ(AvailableCpus(files_), 1);
}

TEST_F(CgroupTest, V2PathOutsideTheMountReadsTheMountRoot) {
  // A container with its own cgroup namespace sees its cgroup at the mount root
  // while /proc/self/cgroup may still name the host path.
  Self("0::/system.slice/docker-abc.scope\n");
  Root("cpu.max", "300000 100000\n");
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 3.0);
}

TEST_F(CgroupTest, V1CfsQuotaUnderCpuCpuacctMount) {
  Self("12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  Root("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
  Root("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  Root("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  Root("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 2.0);
  EXPECT_EQ(AvailableCpus(files_), std::min(2, AffinityCpus()));
}

TEST_F(CgroupTest, V1MinusOneIsNoLimit) {
  Self("3:cpu:/\n");
  Root("cpu/cpu.cfs_quota_us", "-1\n");
  Root("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(CgroupCpuLimit(files_).has_value());
}

TEST_F(CgroupTest, V1QuotaWithoutPeriodIsNoLimit) {
  Self("3:cpu:/\n");
  Root("cpu/cpu.cfs_quota_us", "100000\n");
  EXPECT_FALSE(CgroupCpuLimit(files_).has_value());
}

TEST_F(CgroupTest, UnparsableFilesAreNoLimit) {
  Self("0::/\n");
  for (const char* text : {"", "200000", "abc 100000", "200000 0", "0 100000", "-5 100000", "2e5 100000"}) {
    Root("cpu.max", text);
    EXPECT_FALSE(CgroupCpuLimit(files_).has_value()) << "cpu.max '" << text << "'";
  }
}

TEST_F(CgroupTest, NoMembershipFileReadsTheRoot) {
  Root("cpu.max", "100000 100000\n");  // no self file at all
  EXPECT_DOUBLE_EQ(*CgroupCpuLimit(files_), 1.0);
}

TEST_F(CgroupTest, NothingToReadIsNoLimit) {
  CgroupFiles none{(dir_ / "absent").string(), (dir_ / "absent_self").string()};
  EXPECT_FALSE(CgroupCpuLimit(none).has_value());
  EXPECT_EQ(AvailableCpus(none), AffinityCpus());
}

TEST(ThreadsTest, ThisProcessUsesAtLeastOneAndAtMostItsAffinityCpus) {
  EXPECT_GE(AffinityCpus(), 1);
  EXPECT_GE(AvailableCpus(), 1);
  EXPECT_LE(AvailableCpus(), AffinityCpus());
}

// The affinity mask's CPU ids, ascending and distinct, and their count is AffinityCpus().
TEST(AffinityTest, CpuIdsMatchTheMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const std::vector<int32_t> ids = AffinityCpuIds();
  ASSERT_EQ(static_cast<int>(ids.size()), CPU_COUNT(&set));
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(CPU_ISSET(ids[i], &set)) << ids[i];
    if (i > 0) {
      EXPECT_LT(ids[i - 1], ids[i]);
    }
  }
  EXPECT_EQ(AffinityCpus(), static_cast<int32_t>(ids.size()));
}

}  // namespace
}  // namespace ctrain::train
