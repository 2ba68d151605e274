// ctrain launch's failures that happen before any role starts: each writes its
// one-line reason to output/failure and returns non-zero (launch/launch.h).
#include "ctrain/launch/launch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

namespace fs = std::filesystem;

constexpr char kHetero[] = R"({"current_host": "algo-3", "hosts": ["algo-1", "algo-2", "algo-3"],
  "current_group_name": "train", "instance_groups": [
  {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1", "algo-2"]},
  {"instance_group_name": "train", "instance_type": "ml.g5.xlarge", "hosts": ["algo-3"]}]})";

class LaunchFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TestTempDir("launch_failures",
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ + "/input/config");
    fs::create_directories(root_ + "/input/data/train");
    std::ofstream(root_ + "/input/data/train/a.libsvm") << "1 1:1\n";
    Write("resourceconfig.json", kHetero);
    Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "File"}})");
    o_.sm_root = root_;
    o_.exe = "/bin/false";  // nothing may start in these tests
  }
  void Write(const std::string& name, const std::string& text) { std::ofstream(root_ + "/input/config/" + name) << text; }
  // Runs the launch; returns the failure file's content ("" if none).
  std::string Fails() {
    EXPECT_EQ(RunLaunch(o_), 1);
    std::ifstream in(root_ + "/output/failure");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string root_;
  LaunchOptions o_;
};

TEST_F(LaunchFailures, DataGroupNamingNoGroup) {
  Write("hyperparameters.json", R"({"data_group": "cpu"})");
  EXPECT_EQ(Fails(),
            "InvalidArgument: hyperparameter data_group \"cpu\" names no instance group of resourceconfig.json "
            "(groups: data, train)\n");
}

TEST_F(LaunchFailures, PipeChannelWithADataGroup) {
  Write("hyperparameters.json", R"({"data_group": "data"})");
  Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "Pipe"}})");
  EXPECT_NE(Fails().find("channel \"train\" is in Pipe mode, but with data_group the data hosts read the files"),
            std::string::npos);
}

TEST_F(LaunchFailures, UnknownChannelAndEmptyChannel) {
  Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "File"}, "test": {"TrainingInputMode": "File"}})");
  Write("resourceconfig.json", R"({"current_host": "algo-1", "hosts": ["algo-1"]})");
  EXPECT_NE(Fails().find("channel \"test\" has no ctrain input (channels: train, validation)"), std::string::npos);
  Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "File"}})");
  fs::remove(root_ + "/input/data/train/a.libsvm");
  EXPECT_NE(Fails().find("channel \"train\": " + root_ + "/input/data/train holds no file"), std::string::npos);
}

TEST_F(LaunchFailures, SeveralTrainingHostsWithoutMpi) {
  Write("resourceconfig.json", R"({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]})");
  o_.have_mpi = false;
  EXPECT_NE(Fails().find("2 training hosts need multi-host training over MPI (mpirun, docs/distributed.md), but this "
                         "ctrain was built without MPI"),
            std::string::npos);
}

TEST_F(LaunchFailures, HyperparameterThatIsNotAStringAndAMissingContract) {
  Write("hyperparameters.json", R"({"epochs": 3})");
  EXPECT_NE(Fails().find("hyperparameters.json: hyperparameter \"epochs\" must be a JSON string"), std::string::npos);
  fs::remove(root_ + "/input/config/resourceconfig.json");
  EXPECT_NE(Fails().find("resourceconfig.json: missing"), std::string::npos);
}

TEST_F(LaunchFailures, ARelaunchRemovesTheOldFailure) {
  Write("hyperparameters.json", R"({"data_group": "cpu"})");
  ASSERT_NE(Fails(), "");
  // Now a valid job for a host that has nothing to start (the second trainer host of a homogeneous
  // pair, told not to wait for mpirun): success, and the old failure is gone.
  Write("hyperparameters.json", "{}");
  Write("resourceconfig.json", R"({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]})");
  o_.mpi_host_wait_s = 0;
  EXPECT_EQ(RunLaunch(o_), 0);
  EXPECT_FALSE(fs::exists(root_ + "/output/failure"));
}

}  // namespace
}  // namespace ctrain::launch
