// Issue #8's acceptance tests with real processes on loopback (labelled slow):
// kill -9 a worker mid-epoch, kill -9 the trainer and resume, kill -9 the
// dispatcher and restart it on its work dir — every example still delivered
// exactly once — and training through the service bit-identical to local
// training.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "ctrain/train/checkpoint.h"
#include "dataservice/cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

class DataServiceAcceptanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir("ctrain_ds_acc", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::map<std::string, int> Reference(const std::string& file) {
    RunResult r = RunCtrainBounded("convert -i '" + file + "' -o '" + dir_ + "/ref.libsvm' --output-format libsvm");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return LineCounts(Slurp(dir_ + "/ref.libsvm"));
  }
  // The real split of the field report: first 8000 lines train, last 2040 valid.
  bool MakeSplit() {
    const std::string src = kData + "/criteo_deepfm_va10k.libsvm";
    if (!std::filesystem::exists(src)) return false;
    std::ifstream in(src);
    std::ofstream tr(dir_ + "/tr.libsvm"), va(dir_ + "/va.libsvm");
    int n = 0;
    for (std::string line; std::getline(in, line); ++n) (n < 8000 ? tr : va) << line << "\n";
    return true;
  }
  static void ExpectSameTensors(const std::string& a_dir, const std::string& b_dir) {
    auto a = train::LoadLatestCheckpoint(a_dir);
    auto b = train::LoadLatestCheckpoint(b_dir);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->step, b->step);
    ASSERT_EQ(a->tensors.size(), b->tensors.size());
    for (size_t i = 0; i < a->tensors.size(); ++i) {
      EXPECT_EQ(a->tensors[i].name, b->tensors[i].name);
      const auto& x = a->tensors[i];
      const auto& y = b->tensors[i];
      const bool same = x.f32.size() == y.f32.size() && x.i64 == y.i64 &&
                        std::memcmp(x.f32.data(), y.f32.data(), x.f32.size() * sizeof(float)) == 0;
      EXPECT_TRUE(same) << "tensor " << x.name << " differs";
    }
  }
  std::string dir_;
};

// Reads `epochs` epochs slowly (pace) in the background, kills -9 worker 0
// after `kill_after`, and checks every example arrived exactly once per epoch.
TEST_F(DataServiceAcceptanceTest, KillNineOfOneOfTwoWorkersMidEpochStillDeliversEveryExampleExactlyOnce) {
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrainBounded("synth --rows 6000 -o '" + file + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--worker-timeout-ms", "1000"}), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  ChildProcess* reader = c.StartClient({"data-service", "read", "--data-service", c.address(), "--train", file,
                                        "--batch-size", "100", "--shuffle-buffer-size", "700", "--epochs", "3",
                                        "--num-splits", "6", "--pace-us", "10000", "--data-service-buffer-bytes",
                                        "200000", "-o", dir_ + "/got.libsvm", "--json"},
                                       "reader");
  ASSERT_NE(reader, nullptr);
  std::this_thread::sleep_for(700ms);  // 180 batches x 10 ms: the first epoch is in progress
  ASSERT_TRUE(reader->running());
  c.worker(0).Kill(SIGKILL);
  ASSERT_EQ(reader->Wait(120s), 0) << reader->Err() << c.Logs();
  const auto ref = Reference(file);
  const auto got = LineCounts(Slurp(dir_ + "/got.libsvm"));
  EXPECT_EQ(got, Times(ref, 3)) << Diff(Times(ref, 3), got);
  EXPECT_NE(reader->Out().find("\"examples\":18000"), std::string::npos) << reader->Out();
  EXPECT_EQ(reader->Out().find("\"failovers\":0"), std::string::npos) << "the kill broke no stream: " << reader->Out();
}

TEST_F(DataServiceAcceptanceTest, TrainingFinishesWhenAWorkerIsKilled) {
  if (!MakeSplit()) GTEST_SKIP() << "../shared/data is absent";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--worker-timeout-ms", "1000"}), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  ChildProcess* t = c.StartClient({"train", "--train", dir_ + "/tr.libsvm", "--valid", dir_ + "/va.libsvm", "--epochs",
                                   "3", "--batch-size", "256", "--data-service", c.address(), "--num-splits", "8",
                                   "--intra-op-parallelism-threads", "1", "--progress", "none", "--metrics-json",
                                   dir_ + "/m.json"},
                                  "trainer");
  ASSERT_NE(t, nullptr);
  std::this_thread::sleep_for(1200ms);
  ASSERT_TRUE(t->running()) << t->Err();
  c.worker(1).Kill(SIGKILL);
  ASSERT_EQ(t->Wait(300s), 0) << t->Err() << c.Logs();
  const nlohmann::json m = nlohmann::json::parse(Slurp(dir_ + "/m.json"));
  EXPECT_EQ(m["examples"], 24000) << m.dump(2);  // 3 epochs x 8000, none lost or repeated
  EXPECT_EQ(m["data_service"]["examples"], 24000) << m.dump(2);
  EXPECT_EQ(m["data_service"]["splits_completed"], 24) << m.dump(2);  // 8 splits x 3 epochs, each acknowledged once
}

// Trainer A runs uninterrupted; trainer B is killed -9 after a checkpoint and
// run again: B's final parameters are A's, bit for bit (same examples, same order).
TEST_F(DataServiceAcceptanceTest, KillNineOfTheTrainerThenResumeSeesTheExamplesOfAnUninterruptedRun) {
  if (!MakeSplit()) GTEST_SKIP() << "../shared/data is absent";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  auto train = [&](const std::string& model_dir, const std::string& job) {
    return std::vector<std::string>{"train", "--train", dir_ + "/tr.libsvm", "--epochs", "2", "--batch-size", "128",
                                    "--seed", "11", "--data-service", c.address(), "--job-name", job,
                                    "--num-splits", "4", "--shuffle-buffer-size", "500",
                                    "--intra-op-parallelism-threads", "1", "--progress", "none", "--model-dir",
                                    model_dir, "--save-checkpoints-steps", "7"};
  };
  ChildProcess* a = c.StartClient(train(dir_ + "/a", "job-a"), "a");
  ASSERT_EQ(a->Wait(300s), 0) << a->Err() << c.Logs();
  ChildProcess* b = c.StartClient(train(dir_ + "/b", "job-b"), "b");
  // Kill it once a mid-epoch checkpoint (step 21 of 63 per epoch) exists.
  const auto end = std::chrono::steady_clock::now() + 120s;
  while (!std::filesystem::exists(dir_ + "/b/ckpt-21.bin") && std::chrono::steady_clock::now() < end && b->running())
    std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(b->running()) << "the run ended before it could be killed: " << b->Err();
  b->Kill(SIGKILL);
  b->Wait(10s);
  ChildProcess* b2 = c.StartClient(train(dir_ + "/b", "job-b"), "b2");
  ASSERT_EQ(b2->Wait(300s), 0) << b2->Err() << c.Logs();
  EXPECT_NE(b2->Err().find("resumed from"), std::string::npos) << b2->Err();
  ExpectSameTensors(dir_ + "/a", dir_ + "/b");
}

TEST_F(DataServiceAcceptanceTest, KillNineOfTheDispatcherThenRestartOnItsWorkDirGoesOnExactlyOnce) {
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrainBounded("synth --rows 6000 -o '" + file + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  const std::string work = dir_ + "/work";
  ASSERT_NE(c.StartDispatcher({"--work-dir", work}), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  ChildProcess* reader = c.StartClient({"data-service", "read", "--data-service", c.address(), "--train", file,
                                        "--batch-size", "100", "--epochs", "3", "--num-splits", "12", "--pace-us",
                                        "8000", "--data-service-buffer-bytes", "200000", "-o", dir_ + "/got.libsvm",
                                        "--json"},
                                       "reader");
  std::this_thread::sleep_for(800ms);
  ASSERT_TRUE(reader->running());
  c.dispatcher().Kill(SIGKILL);
  c.dispatcher().Wait(10s);
  std::this_thread::sleep_for(500ms);
  ASSERT_NE(c.StartDispatcher({"--work-dir", work}), "") << c.Logs();  // same port, same journal
  ASSERT_EQ(reader->Wait(120s), 0) << reader->Err() << c.Logs();
  const auto ref = Reference(file);
  const auto got = LineCounts(Slurp(dir_ + "/got.libsvm"));
  EXPECT_EQ(got, Times(ref, 3)) << Diff(Times(ref, 3), got);
  EXPECT_NE(c.Logs().find("resumed from"), std::string::npos) << c.Logs();
}

TEST_F(DataServiceAcceptanceTest, TrainingThroughOneWorkerIsBitIdenticalToLocalTraining) {
  if (!MakeSplit()) GTEST_SKIP() << "../shared/data is absent";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  const std::string common = "train --train '" + dir_ + "/tr.libsvm' --valid '" + dir_ +
                             "/va.libsvm' --epochs 2 --batch-size 256 --seed 5 --shuffle-buffer-size 1000 "
                             "--intra-op-parallelism-threads 1 --progress none ";
  RunResult local = RunCtrainBounded(common + "--model-dir '" + dir_ + "/local'", 300);
  ASSERT_EQ(local.exit_code, 0) << local.out;
  for (const std::string mode : {"--processing-mode parallel_epochs", "--num-splits 1"}) {
    const std::string m = dir_ + "/remote" + std::to_string(mode.size());
    RunResult remote = RunCtrainBounded(common + "--model-dir '" + m + "' --data-service " + c.address() + " " + mode, 300);
    ASSERT_EQ(remote.exit_code, 0) << remote.out << c.Logs();
    ExpectSameTensors(dir_ + "/local", m);
    // Same final metrics line (AUC and logloss to the last printed digit).
    auto auc = [](const std::string& out) { return out.substr(out.find("valid auc"), 40); };
    EXPECT_EQ(auc(local.out), auc(remote.out));
  }
}

}  // namespace
}  // namespace ctrain::testing
