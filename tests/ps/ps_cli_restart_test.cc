// `ctrain ps` processes restarted on a --model-dir with a checkpoint (case B46,
// ../shared/cases/B46/repro.sh and repro-d2.sh): with another shard count the
// servers remap the rows and the worker continues from the saved step with the
// saved model's predictions; a shard directory named by the manifest and
// deleted stops that server with an error naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ps/ps_cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

nlohmann::json Manifest(const std::string& model) {
  std::ifstream in(model + "/ps_checkpoint.json");
  return nlohmann::json::parse(in, nullptr, false);
}

// `ctrain train` on the servers `addresses` (one sync worker, adagrad, 5001 ids: odd).
RunResult Train(const std::string& dir, const std::string& addresses, int epochs, const std::string& lr) {
  return RunCtrain("train --train " + dir + "/tr.libsvm --format libsvm --input-mode memory --feature-size 5001 "
                   "--field-size 8 --embedding-size 8 --deep-layers 32 --batch-size 64 --optimizer adagrad "
                   "--learning-rate " + lr + " --epochs " + std::to_string(epochs) +
                   " --intra-op-parallelism-threads 1 --progress none --ps " + addresses +
                   " --sync-replicas --num-workers 1 --worker-index 0 --model-dir " + dir + "/model");
}

RunResult Predict(const std::string& dir, const std::string& out) {
  return RunCtrain("predict --model-dir " + dir + "/model --input " + dir + "/tr.libsvm --format libsvm --output " +
                   dir + "/" + out);
}

// Starts S servers on dir/model; returns their addresses joined by ',' ("" if one did not start).
std::string StartAll(PsCluster& c, const std::string& dir, int32_t S) {
  std::string all;
  for (int32_t i = 0; i < S; ++i) {
    const std::string a = c.StartPs(i, S, {"--model-dir", dir + "/model"});
    if (a.empty()) return "";
    all += (all.empty() ? "" : ",") + a;
  }
  return all;
}

void StopAll(PsCluster& c, int32_t S) {
  for (int32_t i = 0; i < S; ++i) {
    c.ps(i).Kill(SIGTERM);
    EXPECT_EQ(c.ps(i).Wait(10s), 0);
  }
}

TEST(PsCliRestartTest, TwoShardsRestartedAsThreeRemapTheRowsAndContinueFromTheSavedStep) {
  const std::string dir = TestTempDir("ps_cli_restart", "two_to_three");
  RunResult s = RunCtrain("synth --rows 4000 --format libsvm --field-size 8 --num-numeric 2 --feature-size 5001 --seed 5 --output " +
                          dir + "/tr.libsvm");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  int64_t step = 0;
  {
    PsCluster c(dir + "/s2");
    std::filesystem::create_directories(dir + "/s2");
    const std::string ps = StartAll(c, dir, 2);
    ASSERT_FALSE(ps.empty()) << c.Logs();
    RunResult t = Train(dir, ps, 1, "0.05");
    ASSERT_EQ(t.exit_code, 0) << t.out << c.Logs();
    StopAll(c, 2);
    step = Manifest(dir + "/model").value("step", int64_t{0});
    ASSERT_EQ(step, 63);  // 4000 / 64 batches
  }
  ASSERT_EQ(Predict(dir, "p0.txt").exit_code, 0);
  PsCluster c(dir + "/s3");
  std::filesystem::create_directories(dir + "/s3");
  const std::string ps = StartAll(c, dir, 3);
  ASSERT_FALSE(ps.empty()) << c.Logs();
  EXPECT_NE(c.Logs().find("checkpoint has 2 shards (fixed_size), this job has 3 shards (fixed_size)"),
            std::string::npos) << c.Logs();
  // The same run again (1 epoch, done at step 63): the trainer restores, has no step left, and the servers
  // save the remapped rows in the 3-shard layout; they predict what the 2 shards saved, bit for bit.
  RunResult t = Train(dir, ps, 1, "0.05");
  ASSERT_EQ(t.exit_code, 0) << t.out << c.Logs();
  nlohmann::json m = Manifest(dir + "/model");
  EXPECT_EQ(m.value("num_shards", 0), 3);
  EXPECT_EQ(m.value("step", int64_t{0}), 63);
  ASSERT_EQ(Predict(dir, "p1.txt").exit_code, 0);
  const std::string want = ChildProcess::Read(dir + "/p0.txt"), got = ChildProcess::Read(dir + "/p1.txt");
  EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), 4000);
  EXPECT_TRUE(want == got) << "the remapped model predicts differently from the saved one";
  // A second epoch continues from the saved step.
  t = Train(dir, ps, 2, "0.05");
  ASSERT_EQ(t.exit_code, 0) << t.out << c.Logs();
  StopAll(c, 3);
  m = Manifest(dir + "/model");
  EXPECT_EQ(m.value("num_shards", 0), 3);
  EXPECT_EQ(m.value("step", int64_t{0}), 126);
}

TEST(PsCliRestartTest, AShardDirectoryNamedByTheManifestAndDeletedStopsThatServer) {
  const std::string dir = TestTempDir("ps_cli_restart", "missing_dir");
  RunResult s = RunCtrain("synth --rows 1000 --format libsvm --field-size 8 --num-numeric 2 --feature-size 5001 --seed 5 --output " +
                          dir + "/tr.libsvm");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  {
    PsCluster c(dir);
    const std::string ps = StartAll(c, dir, 3);
    ASSERT_FALSE(ps.empty()) << c.Logs();
    RunResult t = Train(dir, ps, 1, "0.05");
    ASSERT_EQ(t.exit_code, 0) << t.out << c.Logs();
    StopAll(c, 3);
  }
  std::filesystem::remove_all(dir + "/model/ps-shard-00002-of-00003");
  PsCluster c(dir);
  ChildProcess* p = c.Start({"ps", "--shard", "2", "--num-shards", "3", "--port", "0", "--model-dir", dir + "/model"},
                            "ps2_missing");
  ASSERT_NE(p, nullptr);
  const int rc = p->Wait(30s);  // it stops at start, before it listens
  EXPECT_TRUE(rc > 0 && rc < 128) << rc << "\n" << c.Logs();
  const std::string err = ChildProcess::Read(c.Path("ps2_missing.err"));
  EXPECT_NE(err.find("ps-shard-00002-of-00003/ckpt-16.bin (shard 2 of 3, named by " + dir +
                     "/model/ps_checkpoint.json) does not exist, nor does its directory"),
            std::string::npos) << err;
  EXPECT_EQ(ChildProcess::Read(c.Path("ps2_missing.out")).find("listening"), std::string::npos);
  EXPECT_NE(err.find("pass --force to every server"), std::string::npos) << err;

  // `ctrain ps --force` on every server: each starts fresh and says so; the job trains from step 0 and its
  // checkpoint replaces the old one.
  PsCluster f(dir + "/forced");
  std::filesystem::create_directories(dir + "/forced");
  std::string all;
  for (int32_t i = 0; i < 3; ++i) {
    const std::string a = f.StartPs(i, 3, {"--model-dir", dir + "/model", "--force"});
    ASSERT_FALSE(a.empty()) << f.Logs();
    all += (all.empty() ? "" : ",") + a;
  }
  RunResult t = Train(dir, all, 1, "0.05");
  ASSERT_EQ(t.exit_code, 0) << t.out << f.Logs();
  StopAll(f, 3);
  const std::string logs = f.Logs();
  EXPECT_NE(logs.find("--force: starting fresh; not restoring the checkpoint it would refuse"), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("--force: starting fresh; not restoring " + dir + "/model/ps-shard-00000-of-00003/ckpt-16.bin "
                      "(global step 16)"),
            std::string::npos) << logs;
  const nlohmann::json m = Manifest(dir + "/model");
  EXPECT_EQ(m.value("step", int64_t{0}), 16);  // 1000 / 64 batches, from a fresh start
  EXPECT_TRUE(std::filesystem::exists(dir + "/model/ps-shard-00002-of-00003/ckpt-16.bin"));
}

}  // namespace
}  // namespace ctrain::testing
