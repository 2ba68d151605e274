// The up-front parameter memory check (train/memory_budget.h) on fake
// /proc/meminfo and cgroup trees: nothing here allocates more than a few KB.
#include "ctrain/train/memory_budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ctrain/train/trainer.h"

namespace ctrain::train {
namespace {

namespace fs = std::filesystem;

class MemoryBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_memory_budget_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  std::string P(const std::string& rel) const { return (dir_ / rel).string(); }
  fs::path dir_;
};

TEST(ParameterBytesTest, TablesAndSlotsAndDenseAndNoOverflow) {
  // 3e9 rows x (4 + 1) floats x 4 bytes x (1 + 2 adam slots) + 100 dense floats x 4 x 3.
  EXPECT_EQ(ParameterBytes(3000000000, 4, 2, 100), int64_t{3000000000} * 5 * 4 * 3 + 100 * 4 * 3);
  EXPECT_EQ(ParameterBytes(10, 4, 0, 0), 200);
  EXPECT_EQ(ParameterBytes(int64_t{1} << 62, 1000, 2, 0), std::numeric_limits<int64_t>::max());
}

TEST_F(MemoryBudgetTest, ReadsMemAvailableAndTheSmallestV2LimitOnThePath) {
  Write("meminfo", "MemTotal:       16000000 kB\nMemFree:  1000 kB\nMemAvailable:    8000000 kB\n");
  Write("self", "0::/a/b\n");
  Write("cg/a/memory.max", "1073741824\n");  // 1 GiB on the parent
  Write("cg/a/memory.current", "304857600\n");
  Write("cg/a/memory.stat", "anon 104857600\nfile 200000000\ninactive_file 200000000\nactive_file 0\n");
  Write("cg/a/b/memory.max", "max\n");
  MemoryAvailable m = ReadMemoryAvailable({P("cg"), P("self")}, P("meminfo"));
  ASSERT_TRUE(m.mem_available.has_value());
  EXPECT_EQ(*m.mem_available, int64_t{8000000} * 1024);
  ASSERT_TRUE(m.cgroup_limit.has_value());
  EXPECT_EQ(*m.cgroup_limit, 1073741824);
  EXPECT_EQ(m.bytes().value(), 1073741824 - 104857600);
}

TEST_F(MemoryBudgetTest, ReadsAV1LimitAndTreatsHugeValuesAsNone) {
  Write("self", "5:memory:/job\n");
  Write("cg/memory/job/memory.limit_in_bytes", "536870912\n");
  Write("cg/memory/job/memory.usage_in_bytes", "0\n");
  Write("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1 "no limit"
  MemoryAvailable m = ReadMemoryAvailable({P("cg"), P("self")}, P("absent_meminfo"));
  EXPECT_FALSE(m.mem_available.has_value());
  EXPECT_EQ(m.cgroup_limit.value_or(-1), 536870912);
  EXPECT_EQ(m.bytes().value_or(-1), 536870912);
  MemoryAvailable none = ReadMemoryAvailable({P("absent"), P("absent_self")}, P("absent_meminfo"));
  EXPECT_FALSE(none.bytes().has_value());
  EXPECT_TRUE(CheckParameterMemory(int64_t{1} << 40, 64, 2, "adam", 0, none).ok());  // unknown: no refusal
}

TEST(CheckParameterMemoryTest, RefusesWithSizesBytesAndAvailableMemory) {
  MemoryAvailable m;
  m.mem_available = int64_t{2} << 30;  // 2 GiB
  m.cgroup_limit = int64_t{1} << 30;   // 1 GiB limit, 0 in use
  m.cgroup_usage = 0;
  Status s = CheckParameterMemory(3000000000, 4, 2, "adam", 100, m);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  const std::string msg(s.message());
  EXPECT_NE(msg.find("the model needs 167.6 GiB (180000001200 bytes) for its parameters and optimizer slots "
                     "(--feature-size 3000000000 x (--embedding-size 4 + 1) x 4 bytes x (1 + 2 adam slot(s)), "
                     "plus 100 dense floats), but only 1.0 GiB (1073741824 bytes) is available (MemAvailable "
                     "2.0 GiB (2147483648 bytes), cgroup memory limit 1.0 GiB (1073741824 bytes) with"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("lower --feature-size"), std::string::npos) << msg;
  EXPECT_TRUE(CheckParameterMemory(1000, 4, 2, "adam", 100, m).ok());
}

TEST(CheckParameterMemoryTest, TrainerCreateRefusesAnImpossibleFeatureSizeBeforeAllocating) {
  // 2^50 rows could never fit: refused up front (this process's real meminfo), not allocated.
  TrainOptions o;
  o.model.field_size = 3;
  o.model.feature_size = int64_t{1} << 50;
  o.model.embedding_size = 4;
  o.model.deep_layers = {8};
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted) << t.status().ToString();
  EXPECT_NE(std::string(t.status().message()).find("--feature-size 1125899906842624 x (--embedding-size 4 + 1)"),
            std::string::npos)
      << t.status().ToString();
}

}  // namespace
}  // namespace ctrain::train
