// output/failure names the root cause, once (docs/launch.md#outputs): the role that failed
// first, with its host and role ("algo-3 trainer killed by signal 9"; under mpirun the rank:
// "algo-1 mpirun rank 1 killed by signal 9"); the failures that follow from it (the other
// hosts stopped by SIGTERM, the other ranks stopped by mpirun) never replace it; it fits
// SageMaker's 1024-byte FailureReason; a success leaves no failure file.
// Real processes (`ctrain launch --local-cluster` on loopback, tiny `ctrain synth` data); one
// role is killed with SIGKILL while it trains.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/cli_harness.h"
#include "ctrain/launch/launch.h"
#include "testing/process.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

using namespace std::chrono_literals;

// The '\0'-separated entries of a /proc file (cmdline, environ).
std::vector<std::string> Entries(const std::string& path) {
  std::vector<std::string> out;
  const std::string text = Slurp(path);
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\0', a);
    if (b == std::string::npos) b = text.size();
    out.push_back(text.substr(a, b - a));
  }
  return out;
}

// Pids of processes with argv[1] == `arg1`, an argument holding `needle`, and (when `env` is
// not empty) the environment entry `env`.
std::vector<pid_t> Pids(const std::string& arg1, const std::string& needle, const std::string& env = "") {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/") + e->d_name;
    const std::vector<std::string> argv = Entries(base + "/cmdline");
    if (argv.size() < 2 || argv[1] != arg1 ||
        std::none_of(argv.begin(), argv.end(), [&](const std::string& a) { return a.find(needle) != std::string::npos; }))
      continue;
    const std::vector<std::string> environ = Entries(base + "/environ");
    if (!env.empty() && std::find(environ.begin(), environ.end(), env) == environ.end()) continue;
    out.push_back(std::atoi(e->d_name));
  }
  if (d) ::closedir(d);
  return out;
}

class FailureReason : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = TestTempDir("launch_failure_reason", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(RunCtrain("synth --rows 2000 -o " + d_ + "/tr.tfrecord").exit_code, 0);
  }
  void TearDown() override { fs::remove_all(d_); }

  // A spec with `groups` ([[group]] tables) and `hps` (extra [hyperparameters] lines).
  void Spec(const std::string& groups, const std::string& hps) {
    std::ofstream(d_ + "/c.toml") << groups << "[hyperparameters]\nbatch_size = \"64\"\nprogress = \"log\"\n"
                                  << "intra_op_parallelism_threads = \"1\"\n" << hps
                                  << "[channels.train]\nmode = \"File\"\nfiles = [\"" << d_ << "/tr.tfrecord\"]\n";
  }
  void StartCluster() {
    ASSERT_TRUE(run_.Start({kCtrain, "launch", "--local-cluster", d_ + "/c.toml", "--work-dir", d_ + "/run",
                            "--monitor-interval-ms", "200"},
                           d_ + "/out", d_ + "/err"));
  }
  // Waits until `jsonl` shows step 20 (the role is training).
  void WaitTraining(const std::string& jsonl) {
    const auto end = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < end && Slurp(jsonl).find("\"step\":20,") == std::string::npos &&
           run_.Wait(0ms) < 0)
      std::this_thread::sleep_for(50ms);
    ASSERT_NE(Slurp(jsonl).find("\"step\":20,"), std::string::npos) << run_.Err();
  }
  std::string Failure(const std::string& host) const { return Slurp(d_ + "/run/" + host + "/output/failure"); }

  std::string d_;
  ChildProcess run_;
};

TEST_F(FailureReason, TrainerKilledBySigkillIsTheReasonAndTheStoppedHostsDoNotReplaceIt) {
  Spec("[[group]]\nname = \"data\"\ninstance_type = \"ml.c5.xlarge\"\ncount = 2\n"
       "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n",
       "data_group = \"data\"\nepochs = \"500\"\n");
  StartCluster();
  WaitTraining(d_ + "/run/algo-3/output/data/monitor/algo-3/trainer/metrics.jsonl");
  const std::vector<pid_t> trainer = Pids("train", d_ + "/run/algo-3/");
  ASSERT_EQ(trainer.size(), 1u) << run_.Err();
  ASSERT_EQ(::kill(trainer[0], SIGKILL), 0);
  EXPECT_EQ(run_.Wait(120s), 1) << run_.Err();
  const std::string err = run_.Err();
  // The root cause, exactly, written by the trainer host; the data hosts were stopped by the
  // cluster (SIGTERM, as SageMaker stops a job) and say so in their own files.
  EXPECT_EQ(Failure("algo-3"), "algo-3 trainer killed by signal 9\n") << err;
  EXPECT_EQ(Failure("algo-1"), "algo-1: stopped by signal 15\n") << err;
  EXPECT_EQ(Failure("algo-2"), "algo-2: stopped by signal 15\n") << err;
  const size_t root = err.find("ctrain: launch: failed: algo-3 (status 1): algo-3 trainer killed by signal 9\n");
  ASSERT_NE(root, std::string::npos) << err;
  for (const char* h : {"algo-1", "algo-2"}) {
    const size_t at = err.find(std::string("ctrain: launch: stopped after algo-3 failed: ") + h + " (status 143): " + h +
                               ": stopped by signal 15\n");
    EXPECT_NE(at, std::string::npos) << h << "\n" << err;
    EXPECT_GT(at, root) << h;  // the root cause is listed first
  }
  EXPECT_EQ(err.find("ctrain: launch: failed: algo-1"), std::string::npos) << err;
  EXPECT_EQ(err.find("ctrain: launch: failed: algo-2"), std::string::npos) << err;
}

TEST_F(FailureReason, RankKilledUnderMpirunIsTheReasonNotTheOtherRanksStop) {
  if (Shell("command -v mpirun >/dev/null").exit_code != 0) GTEST_SKIP() << "mpirun is not installed";
  Spec("[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 2\n", "epochs = \"500\"\n");
  StartCluster();
  const std::string mon = d_ + "/run/algo-1/output/data/monitor/algo-1/trainer/";
  WaitTraining(mon + "rank0/metrics.jsonl");
  if (Slurp(d_ + "/err").find("built without MPI") != std::string::npos) GTEST_SKIP() << "this ctrain has no MPI";
  const std::vector<pid_t> rank1 = Pids("train", d_ + "/run/algo-1/", "OMPI_COMM_WORLD_RANK=1");
  ASSERT_EQ(rank1.size(), 1u) << run_.Err();
  ASSERT_EQ(::kill(rank1[0], SIGKILL), 0);
  EXPECT_EQ(run_.Wait(120s), 1) << run_.Err();
  // mpirun stops rank 0 (its "interrupted by SIGTERM" line comes later): rank 1's death stays the reason.
  EXPECT_EQ(Failure("algo-1"), "algo-1 mpirun rank 1 killed by signal 9\n") << run_.Err();
  EXPECT_NE(run_.Err().find("ctrain: launch: failed: algo-1 (status 1): algo-1 mpirun rank 1 killed by signal 9\n"),
            std::string::npos)
      << run_.Err();
}

TEST_F(FailureReason, ASuccessLeavesNoFailureFile) {
  Spec("[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n", "epochs = \"1\"\n");
  // A failure of an earlier launch of the same tree is gone after a successful one.
  fs::create_directories(d_ + "/root/input/config");
  fs::create_directories(d_ + "/root/input/data/train");
  fs::copy_file(d_ + "/tr.tfrecord", d_ + "/root/input/data/train/tr.tfrecord");
  std::ofstream(d_ + "/root/input/config/resourceconfig.json") << R"({"current_host": "algo-1", "hosts": ["algo-1"]})";
  std::ofstream(d_ + "/root/input/config/inputdataconfig.json") << R"({"train": {"TrainingInputMode": "File"}})";
  std::ofstream(d_ + "/root/input/config/hyperparameters.json") << R"({"epochs": "1", "batch_size": "256"})";
  fs::create_directories(d_ + "/root/output");
  std::ofstream(d_ + "/root/output/failure") << "algo-1 trainer killed by signal 9\n";
  RunResult r = RunCtrain("launch --sm-root " + d_ + "/root");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(d_ + "/root/output/failure")) << Slurp(d_ + "/root/output/failure");
  EXPECT_TRUE(fs::exists(d_ + "/root/model/checkpoint")) << r.out;
}

TEST(FailureLine, WrittenOnceAndFitsSageMakersLimit) {
  const std::string d = TestTempDir("launch_failure_reason", "failure_line");
  const std::string path = d + "/output/failure";
  ASSERT_TRUE(launch::WriteFailure(path, "algo-2 trainer killed by signal 9").ok());
  const Status second = launch::WriteFailure(path, "algo-2: stopped by signal 15");
  EXPECT_EQ(second.code(), StatusCode::kAlreadyExists) << second.ToString();
  EXPECT_EQ(Slurp(path), "algo-2 trainer killed by signal 9\n");
  // Newlines folded; a long reason cut to 1024 bytes in all, with the marker, at a UTF-8 boundary.
  EXPECT_EQ(launch::FailureLine("a\nb"), "a b\n");
  std::string long_reason = "xx";
  while (long_reason.size() < 2000) long_reason += "\xc3\xa9";  // "é", two bytes each
  const std::string line = launch::FailureLine(long_reason);
  // 1024 - 1 (newline) - 28 (marker) = 995 bytes would cut an "é" in two: 994 are kept.
  EXPECT_EQ(line.size(), launch::kFailureReasonMaxBytes - 1);
  const std::string marker = " ... [truncated: 2000 bytes]\n";
  ASSERT_GE(line.size(), marker.size());
  EXPECT_EQ(line.substr(line.size() - marker.size()), marker);
  EXPECT_EQ(line.substr(0, line.size() - marker.size()), long_reason.substr(0, line.size() - marker.size()));
  const std::string exact(launch::kFailureReasonMaxBytes - 1, 'y');
  EXPECT_EQ(launch::FailureLine(exact), exact + "\n");  // 1024 bytes with its newline: kept whole
  fs::remove_all(d);
}

}  // namespace
}  // namespace ctrain::testing
