// Every wait of the data service has a deadline, and an --exit-when-idle
// worker on a long-lived dispatcher serves the next job (issue #21, case
// shared/cases/trial3/01_exit_when_idle_hang.sh), with real processes on
// loopback: a dead dispatcher makes a trainer, a reader and a worker fail
// within their deadline naming the flag; a worker that exits or a worker
// that is gone when a dispatcher is restored from its journal gets no split.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "dataservice/cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

class DataServiceDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir("ctrain_ds_deadline", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    file_ = dir_ + "/s.tfrecord";
    ASSERT_EQ(RunCtrain("synth --rows 3000 --feature-size 1000 -o '" + file_ + "'").exit_code, 0);
  }
  // `ctrain train` through the service: a tiny model, one epoch.
  std::string Train(const std::string& address, const std::string& model_dir, const std::string& extra = "") {
    return "train --train '" + file_ + "' --feature-size 1000 --embedding-size 4 --deep-layers 8 --epochs 1 "
           "--batch-size 256 --progress none --intra-op-parallelism-threads 1 --data-service " + address +
           " --model-dir '" + model_dir + "' " + extra;
  }
  // The workers the dispatcher's status lists, address -> alive.
  static std::map<std::string, bool> Workers(const std::string& address) {
    RunResult r = RunCtrainBounded("data-service status " + address + " --json", 20);
    std::map<std::string, bool> m;
    if (r.exit_code != 0) return m;
    const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
    if (doc.is_discarded()) return m;
    for (const auto& w : doc["workers"]) m[w["address"].get<std::string>()] = w["alive"].get<bool>();
    return m;
  }
  std::string dir_, file_;
};

TEST_F(DataServiceDeadlineTest, TrainerAndWorkerFailWithinTheirDeadlineWhenTheDispatcherIsDead) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  c.dispatcher().Kill(SIGKILL);  // its port is now closed: nothing answers there
  ASSERT_NE(c.dispatcher().Wait(10s), 0);
  RunResult t = RunCtrainBounded(Train(c.address(), dir_ + "/m", "--data-service-wait-seconds 2"), 60);
  EXPECT_NE(t.exit_code, 0) << t.out;
  EXPECT_NE(t.exit_code, 124) << "the trainer waited past its deadline: " << t.out;
  EXPECT_NE(t.out.find("gave up waiting for the dispatcher " + c.address()), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("after 2 s (--data-service-wait-seconds)"), std::string::npos) << t.out;
  ChildProcess* w = c.StartClient({"data-service", "worker", "--dispatcher", c.address(), "--port", "0",
                                   "--heartbeat-ms", "200", "--dispatcher-wait-seconds", "2"},
                                  "worker");
  ASSERT_NE(w, nullptr);
  const int rc = w->Wait(60s);
  EXPECT_EQ(rc, 1) << w->Err();
  EXPECT_NE(w->Err().find("gave up waiting for the dispatcher " + c.address() + " after 2 s (--dispatcher-wait-seconds)"),
            std::string::npos)
      << w->Err();
}

TEST_F(DataServiceDeadlineTest, ReaderAndWorkerFailWithinTheirDeadlineWhenTheDispatcherDiesMidRun) {
  const std::string big = dir_ + "/big.tfrecord";
  ASSERT_EQ(RunCtrain("synth --rows 20000 --feature-size 1000 -o '" + big + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker({"--dispatcher-wait-seconds", "3"}), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  // 8 splits of ~40 batches, 20 ms per batch: the first split outlives the kill below.
  ChildProcess* reader = c.StartClient({"data-service", "read", "--data-service", c.address(), "--train", big,
                                        "--batch-size", "64", "--num-splits", "8", "--data-service-max-open-splits",
                                        "1", "--pace-us", "20000", "--discard", "--data-service-wait-seconds", "2"},
                                       "reader");
  ASSERT_NE(reader, nullptr);
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (ChildProcess::Read(c.Path("dispatcher0.err")).find("trainer 0 joined job") == std::string::npos &&
         std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(20ms);
  c.dispatcher().Kill(SIGKILL);
  c.dispatcher().Wait(10s);
  const int rc = reader->Wait(120s);
  EXPECT_EQ(rc, 1) << reader->Err();
  EXPECT_NE(reader->Err().find("after 2 s (--data-service-wait-seconds)"), std::string::npos) << reader->Err();
  EXPECT_EQ(c.worker(0).Wait(60s), 1) << c.Logs();
  EXPECT_NE(c.Logs().find("after 3 s (--dispatcher-wait-seconds)"), std::string::npos) << c.Logs();
}

TEST_F(DataServiceDeadlineTest, ATrainerWithNoLiveWorkerFailsWithinItsDeadline) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  RunResult t = RunCtrainBounded(Train(c.address(), dir_ + "/m", "--data-service-wait-seconds 2"), 60);
  EXPECT_EQ(t.exit_code, 1) << t.out;
  EXPECT_NE(t.out.find("gave up waiting for a live worker of the data service " + c.address()), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("after 2 s (--data-service-wait-seconds)"), std::string::npos) << t.out;
}

// shared/cases/trial3/01: a long-lived dispatcher (with a journal) holds one
// finished job; a new --exit-when-idle worker stays for the next job, serves
// it, and exits when it is finished.
TEST_F(DataServiceDeadlineTest, ExitWhenIdleWorkerOnALongLivedDispatcherServesTheNextJob) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--work-dir", dir_ + "/ds"}), "");
  ASSERT_NE(c.StartWorker({"--exit-when-idle"}), "");
  RunResult a = RunCtrainBounded(Train(c.address(), dir_ + "/day_a", "--data-service-wait-seconds 60"), 120);
  ASSERT_EQ(a.exit_code, 0) << a.out << c.Logs();
  ASSERT_EQ(c.worker(0).Wait(30s), 0) << c.Logs();
  EXPECT_NE(c.Logs().find("every job has finished (--exit-when-idle)"), std::string::npos) << c.Logs();
  // The dispatcher now holds only a finished job. A new worker registers and stays.
  const std::string w1 = c.StartWorker({"--exit-when-idle"});
  ASSERT_NE(w1, "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  EXPECT_TRUE(c.worker(1).running()) << "the worker exited with no work done: " << c.Logs();
  RunResult b = RunCtrainBounded(Train(c.address(), dir_ + "/day_b", "--job-name day_b --data-service-wait-seconds 60"),
                                 120);
  ASSERT_EQ(b.exit_code, 0) << b.out << c.Logs();
  EXPECT_NE(b.out.find("done:"), std::string::npos) << b.out;
  EXPECT_EQ(c.worker(1).Wait(30s), 0) << c.Logs();
  // It told the dispatcher it left: off the live list at once, not after --worker-timeout-ms.
  EXPECT_EQ(Workers(c.address())[w1], false) << c.Logs();
  // A worker that sees no work within its grace period exits 0 and says why.
  ASSERT_NE(c.StartWorker({"--exit-when-idle", "--idle-grace-seconds", "1"}), "");
  EXPECT_EQ(c.worker(2).Wait(30s), 0) << c.Logs();
  EXPECT_NE(c.Logs().find("no work arrived within 1 s of registering (--exit-when-idle, --idle-grace-seconds)"),
            std::string::npos)
      << c.Logs();
}

TEST_F(DataServiceDeadlineTest, AWorkerThatExitsGetsNoSplitBeforeItsLeaseRunsOut) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--worker-timeout-ms", "600000"}), "");  // a lease far longer than the test
  const std::string w0 = c.StartWorker({"--exit-when-idle"});
  ASSERT_NE(w0, "");
  RunResult a = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --num-splits 2 --discard --data-service-wait-seconds 60");
  ASSERT_EQ(a.exit_code, 0) << a.out << c.Logs();
  ASSERT_EQ(c.worker(0).Wait(30s), 0) << c.Logs();
  EXPECT_EQ(Workers(c.address())[w0], false) << c.Logs();
  // With no live worker, the next read is not sent to the gone one: it waits, then fails by name.
  RunResult b = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --num-splits 2 --job-name next --discard --data-service-wait-seconds 2");
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_NE(b.out.find("gave up waiting for a live worker"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("broke"), std::string::npos) << "a split went to the gone worker: " << b.out;
}

TEST_F(DataServiceDeadlineTest, AJournalRestoredDispatcherRoutesNothingToAWorkerThatIsGone) {
  DataServiceCluster c(dir_);
  const std::string work = dir_ + "/ds";
  ASSERT_NE(c.StartDispatcher({"--work-dir", work, "--worker-timeout-ms", "600000"}), "");
  const std::string gone = c.StartWorker();
  ASSERT_NE(gone, "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  // A job read through it; then the worker and the dispatcher die (kill -9: no goodbye).
  RunResult a = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --num-splits 4 --job-name j --discard");
  ASSERT_EQ(a.exit_code, 0) << a.out << c.Logs();
  c.worker(0).Kill(SIGKILL);
  c.worker(0).Wait(10s);
  c.dispatcher().Kill(SIGKILL);
  c.dispatcher().Wait(10s);
  ASSERT_NE(c.StartDispatcher({"--work-dir", work, "--worker-timeout-ms", "600000"}), "") << c.Logs();
  EXPECT_NE(c.Logs().find("resumed from"), std::string::npos) << c.Logs();
  EXPECT_EQ(Workers(c.address()).count(gone), 0u) << "a restored dispatcher lists a worker it has not heard from";
  RunResult b = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --num-splits 4 --job-name k --discard --data-service-wait-seconds 2");
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_NE(b.out.find("gave up waiting for a live worker"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find(gone), std::string::npos) << "a split went to the gone worker: " << b.out;
  // A worker that heartbeats is live again: the same read goes through.
  ASSERT_NE(c.StartWorker(), "");
  RunResult d = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file_ +
                                 "' --num-splits 4 --job-name k --discard --json --data-service-wait-seconds 60");
  ASSERT_EQ(d.exit_code, 0) << d.out << c.Logs();
  EXPECT_NE(d.out.find("\"examples\":3000"), std::string::npos) << d.out;
}

}  // namespace
}  // namespace ctrain::testing
