// The training job's name ctrain launch gives every role (launch/training_job_name.h):
// SageMaker's TRAINING_JOB_NAME when set; else the same fingerprint on every host of one
// job and different ones for two jobs that differ only in their data (shared/cases/B54).
#include "ctrain/launch/training_job_name.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

// A host of a simulated cluster: its tree at <job_dir>/<host>.
Contract JobContract(const std::string& job_dir, const std::string& current_host) {
  Contract c;
  c.root = job_dir + "/" + current_host;
  c.resources.current_host = current_host;
  c.resources.hosts = {"algo-1", "algo-2"};
  c.resources.groups = {{"data", "ml.c5.xlarge", {"algo-1"}}, {"train", "ml.m5.xlarge", {"algo-2"}}};
  c.hyperparameters = {{"data_group", "data"}, {"epochs", "3"}};
  if (current_host == "algo-1") c.channels = {{"train", InputMode::kFile, job_dir + "/data", {}}};  // B51: the data group's
  return c;
}

TEST(TrainingJobName, SameOnEveryHostOfAJobDifferentForAnotherJob) {
  const std::string dir = testing::TestTempDir("ctrain_launch_job", "names");
  const std::string a1 = TrainingJobName(JobContract(dir + "/a", "algo-1"), nullptr);
  const std::string a2 = TrainingJobName(JobContract(dir + "/a", "algo-2"), nullptr);
  const std::string b1 = TrainingJobName(JobContract(dir + "/b", "algo-1"), nullptr);
  EXPECT_EQ(a1.rfind("launch-", 0), 0u) << a1;
  EXPECT_EQ(a1.size(), 7u + 16u) << a1;
  EXPECT_EQ(a1, a2);  // the current host and its channels are not part of it (B51: algo-2 has none)
  EXPECT_NE(a1, b1);  // B54: two jobs on one machine, the same configuration
  Contract other = JobContract(dir + "/a", "algo-1");
  other.hyperparameters.push_back({"learning_rate", "0.01"});
  EXPECT_NE(TrainingJobName(other, nullptr), a1);
  // SageMaker's own name wins.
  EnvLookup env = [](const char* k) -> const char* {
    return std::string(k) == "TRAINING_JOB_NAME" ? "ctr-2026-12-02-07-00" : nullptr;
  };
  EXPECT_EQ(TrainingJobName(JobContract(dir + "/a", "algo-1"), env), "ctr-2026-12-02-07-00");
}

}  // namespace
}  // namespace ctrain::launch
