// The training job's identity on every data-service call (issue #21, case
// shared/cases/B54: two jobs on one host, job B's trainer silently trained
// through job A's data service), with real processes on loopback: a trainer,
// a reader or a worker of job B is refused by job A's dispatcher, naming both
// jobs; the same calls of job A go through.
#include <gtest/gtest.h>

#include "cli/cli_harness.h"
#include "dataservice/cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

class TrainingJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir("ctrain_ds_job", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    file_ = dir_ + "/b.tfrecord";
    ASSERT_EQ(RunCtrain("synth --rows 500 --feature-size 1000 -o '" + file_ + "'").exit_code, 0);
  }
  std::string Train(const std::string& address, const std::string& job) {
    return "train --train '" + file_ + "' --feature-size 1000 --embedding-size 4 --deep-layers 8 --epochs 1 "
           "--batch-size 100 --progress none --intra-op-parallelism-threads 1 --data-service " + address +
           " --data-service-wait-seconds 30 --training-job-name " + job + " --model-dir '" + dir_ + "/m-" + job + "'";
  }
  std::string dir_, file_;
};

TEST_F(TrainingJobTest, AnotherJobsTrainerReaderAndWorkerAreRefusedByName) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--training-job-name", "job-A"}), "");
  ASSERT_NE(c.StartWorker({"--training-job-name", "job-A"}), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  const std::string refused = "this data-service dispatcher serves training job \"job-A\"; the caller is of training "
                              "job \"job-B\" (--training-job-name)";
  // B54: job B's trainer dials job A's dispatcher: refused at once, nothing trained.
  RunResult b = RunCtrainBounded(Train(c.address(), "job-B"), 60);
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_NE(b.out.find(refused), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("done:"), std::string::npos) << b.out;
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --discard --training-job-name job-B --data-service-wait-seconds 30");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(refused), std::string::npos) << r.out;
  // Job B's worker registering at job A's dispatcher exits 1 naming both jobs.
  ChildProcess* w = c.StartClient({"data-service", "worker", "--dispatcher", c.address(), "--port", "0",
                                   "--training-job-name", "job-B"},
                                  "worker-b");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->Wait(60s), 1) << w->Err();
  EXPECT_NE(w->Err().find(refused), std::string::npos) << w->Err();
  // Job A's own trainer goes through; so does an operator's status call without a name.
  RunResult a = RunCtrainBounded(Train(c.address(), "job-A"), 120);  // 8 splits of 500 rows: 8 partial batches
  ASSERT_EQ(a.exit_code, 0) << a.out << c.Logs();
  EXPECT_NE(a.out.find("done: 8 steps, 500 examples"), std::string::npos) << a.out;
  EXPECT_EQ(RunCtrainBounded("data-service status " + c.address(), 30).exit_code, 0);
}

}  // namespace
}  // namespace ctrain::testing
