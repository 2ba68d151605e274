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

TEST_F(LaunchFailures, ParameterServersWithADataGroupOrSeveralProcessesPerHost) {
  Write("hyperparameters.json", R"({"sagemaker_parameter_server_enabled": "true", "data_group": "data"})");
  EXPECT_NE(Fails().find("distribution parameter_server with data_group \"data\": parameter-server workers read "
                         "their channels themselves"),
            std::string::npos);
  Write("hyperparameters.json",
        R"({"sagemaker_parameter_server_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"})");
  EXPECT_NE(Fails().find("distribution parameter_server with distribution mpi processes_per_host 2: one worker per "
                         "host"),
            std::string::npos);
  Write("hyperparameters.json", R"({"sagemaker_parameter_server_enabled": "true", "worker_index": "1"})");
  EXPECT_NE(Fails().find("hyperparameter \"worker_index\" is set by ctrain launch from distribution parameter_server; "
                         "leave it out"),
            std::string::npos);
}

// --sshd: a host whose sshd cannot run fails naming it; the first host gives up on a peer whose sshd never
// listens after --mpi-host-wait-s, naming the host and the address.
TEST_F(LaunchFailures, SshdThatDoesNotRunOrNeverListens) {
  Write("hyperparameters.json", "{}");
  Write("resourceconfig.json", R"({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]})");
  o_.host_addresses = {{"algo-1", "127.0.0.1"}, {"algo-2", "127.0.0.2"}};
  o_.sshd = "/bin/false";
  EXPECT_NE(Fails().find("algo-2 sshd exited with status 1"), std::string::npos);
  const std::string sleeper = root_ + "/sshd.sh";  // an sshd that runs and never listens
  std::ofstream(sleeper) << "#!/bin/sh\nexec sleep 30\n";
  fs::permissions(sleeper, fs::perms::owner_all);
  Write("resourceconfig.json", R"({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]})");
  o_.sshd = sleeper;
  o_.ssh_port = 1;  // nothing listens there
  o_.mpi_host_wait_s = 1;
  o_.have_mpi = true;
  EXPECT_NE(Fails().find("algo-2: no sshd accepted connections at 127.0.0.2:1 within 1 s (--mpi-host-wait-s)"),
            std::string::npos);
}

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

// B51's other half: the trainer host of a heterogeneous job needs no train channel, but a
// homogeneous host does, and a data host must have the files its workers read.
TEST_F(LaunchFailures, ChannelsByRole) {
  Write("resourceconfig.json", R"({"current_host": "algo-1", "hosts": ["algo-1"]})");
  Write("inputdataconfig.json", "{}");
  EXPECT_EQ(Fails(), "InvalidArgument: inputdataconfig.json: no \"train\" channel (nothing to train on)\n");
  // A data host (algo-1 of group data) without the channel, with it in Pipe mode, with a
  // validation channel given to the data group only.
  std::string data_host = kHetero;
  data_host.replace(data_host.find("\"algo-3\""), 8, "\"algo-1\"");
  data_host.replace(data_host.find("\"current_group_name\": \"train\""), 29, "\"current_group_name\": \"data\"");
  Write("resourceconfig.json", data_host);
  Write("hyperparameters.json", R"({"data_group": "data"})");
  EXPECT_EQ(Fails(), "InvalidArgument: inputdataconfig.json: no \"train\" channel on data host algo-1 (instance group "
                     "data): the data hosts read the training files: give the channel to instance group data "
                     "(InstanceGroupNames)\n");
  Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "Pipe"}})");
  EXPECT_NE(Fails().find("channel \"train\" is in Pipe mode, but with data_group the data hosts read the files"),
            std::string::npos);
  Write("inputdataconfig.json", R"({"train": {"TrainingInputMode": "File", "InstanceGroupNames": ["data"]},
    "validation": {"TrainingInputMode": "File", "InstanceGroupNames": ["data"]}})");
  EXPECT_EQ(Fails(), "InvalidArgument: inputdataconfig.json: channel \"validation\" is given to instance group data "
                     "only (InstanceGroupNames), but the trainer reads the validation set itself: give it to the "
                     "trainer's instance group\n");
  // The trainer host (algo-3): a Pipe validation channel is refused by name.
  Write("resourceconfig.json", kHetero);
  Write("inputdataconfig.json", R"({"validation": {"TrainingInputMode": "Pipe"}})");
  EXPECT_NE(Fails().find("channel \"validation\" is in Pipe mode; the validation set is read into memory"),
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
  // One host with two ranks needs mpirun too.
  Write("resourceconfig.json", R"({"current_host": "algo-1", "hosts": ["algo-1"]})");
  Write("hyperparameters.json", R"({"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"})");
  EXPECT_NE(Fails().find("1 training host(s) x 2 processes per host (distribution mpi processes_per_host) need "
                         "training over MPI (mpirun, docs/distributed.md), but this ctrain was built without MPI"),
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
