// `ctrain ps` and `ctrain train --ps` as processes: the listening line,
// loopback, SIGTERM, the token, and (with trainers) losing a worker or a
// parameter server.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "ps/ps_cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

TEST(PsCliTest, ServesOnLoopbackAndExitsZeroOnSigterm) {
  PsCluster c(TestTempDir("ps_cli", "sigterm"));
  const std::string a0 = c.StartPs(0, 2), a1 = c.StartPs(1, 2, {"--partitioner", "mod"});
  ASSERT_EQ(a0.rfind("127.0.0.1:", 0), 0u) << c.Logs();
  ASSERT_EQ(a1.rfind("127.0.0.1:", 0), 0u) << c.Logs();
  RunResult st = RunCtrain("ps status " + a0 + " " + a1);
  ASSERT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("mod"), std::string::npos) << st.out;
  RunResult js = RunCtrain("ps status " + a0 + " --json");
  ASSERT_EQ(js.exit_code, 0) << js.out;
  EXPECT_NE(js.out.find("\"initialized\": false"), std::string::npos) << js.out;
  c.ps(0).Kill(SIGTERM);
  c.ps(1).Kill(SIGTERM);
  EXPECT_EQ(c.ps(0).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.ps(1).Wait(10s), 0) << c.Logs();
}

TEST(PsCliTest, WrongTokenIsRefused) {
  const std::string dir = TestTempDir("ps_cli", "token");
  PsCluster c(dir);
  std::ofstream(dir + "/token") << "right-token\n";
  std::ofstream(dir + "/wrong") << "wrong-token\n";
  const std::string a = c.StartPs(0, 1, {"--token-file", dir + "/token"});
  ASSERT_FALSE(a.empty()) << c.Logs();
  RunResult bad = RunCtrain("ps status " + a + " --token-file " + dir + "/wrong");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("wrong service token"), std::string::npos) << bad.out;
  RunResult none = RunCtrain("ps status " + a);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("missing service token"), std::string::npos) << none.out;
  RunResult ok = RunCtrain("ps status " + a + " --token-file " + dir + "/token");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST(PsCliTest, BadFlagsAreNamed) {
  RunResult r = RunCtrain("ps --shard 2 --num-shards 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--shard 2 not in [0, 2)"), std::string::npos) << r.out;
  r = RunCtrain("ps --shard 0 --num-shards 1 --partitioner div");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--partitioner 'div'"), std::string::npos) << r.out;
}


// A small synthetic job (2,000 rows, F = 8, 400 ids, MLP 16) in `dir`; returns the common train flags.
std::vector<std::string> SmallJob(const std::string& dir, int epochs) {
  RunResult r = RunCtrain("synth --rows 2000 --format libsvm --field-size 8 --feature-size 400 --num-numeric 2 "
                          "--seed 3 --output " + dir + "/tr.libsvm");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return {"train", "--train", dir + "/tr.libsvm", "--input-mode", "memory", "--format", "libsvm",
          "--field-size", "8", "--feature-size", "400", "--embedding-size", "4", "--deep-layers", "16",
          "--batch-size", "50", "--epochs", std::to_string(epochs), "--intra-op-parallelism-threads", "1",
          "--progress", "log"};
}

std::vector<std::string> Plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Waits (bounded) until `path`'s content contains `text`.
bool WaitForText(const std::string& path, const std::string& text, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ChildProcess::Read(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A chief with --model-dir checkpoints through the servers: a server started without one is refused at the
// start, naming it, instead of at the first save an epoch later.
TEST(PsCliTest, AServerThatCannotSaveIsRefusedBeforeTraining) {
  const std::string dir = TestTempDir("ps_cli", "cannot_save");
  PsCluster c(dir);
  const std::string a0 = c.StartPs(0, 2, {"--model-dir", dir + "/model"}), a1 = c.StartPs(1, 2);
  ASSERT_FALSE(a0.empty() || a1.empty()) << c.Logs();
  const std::vector<std::string> job = SmallJob(dir, 40);
  ChildProcess* w = c.Start(Plus(job, {"--ps", a0 + "," + a1, "--worker-index", "0", "--num-workers", "1",
                                       "--model-dir", dir + "/model"}),
                            "worker0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->Wait(60s), 1) << c.Logs();
  const std::string err = ChildProcess::Read(c.Path("worker0.err"));
  EXPECT_NE(err.find("--model-dir " + dir + "/model: the chief (worker 0) checkpoints through the parameter servers, "
                     "but shard 1 at " + a1 + " was started without --model-dir"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("epoch 1/40"), std::string::npos) << "refused before training\n" << err;
}

TEST(PsCliTest, KillingAWorkerLeavesTheOthersGoing) {
  const std::string dir = TestTempDir("ps_cli", "kill_worker");
  PsCluster c(dir);
  const std::string a0 = c.StartPs(0, 2), a1 = c.StartPs(1, 2);
  ASSERT_FALSE(a0.empty() || a1.empty()) << c.Logs();
  const std::vector<std::string> job = SmallJob(dir, 40);
  const std::vector<std::string> ps = {"--ps", a0 + "," + a1, "--num-workers", "2"};
  ChildProcess* w1 = c.Start(Plus(Plus(job, ps), {"--worker-index", "1"}), "worker1");
  ChildProcess* w0 = c.Start(Plus(Plus(job, ps), {"--worker-index", "0"}), "worker0");
  ASSERT_TRUE(w0 != nullptr && w1 != nullptr);
  ASSERT_TRUE(WaitForText(c.Path("worker1.err"), "epoch 2/40", 60s)) << c.Logs();
  w1->Kill(SIGKILL);
  EXPECT_EQ(w1->Wait(10s), 128 + SIGKILL);
  EXPECT_EQ(w0->Wait(120s), 0) << c.Logs();
  EXPECT_NE(ChildProcess::Read(c.Path("worker0.err")).find("epoch 40/40"), std::string::npos) << c.Logs();
}

TEST(PsCliTest, KillingAServerMakesWorkersWaitAndARestartFromItsCheckpointContinues) {
  const std::string dir = TestTempDir("ps_cli", "kill_ps");
  const std::string model = dir + "/model";
  PsCluster c(dir);
  const std::string a0 = c.StartPs(0, 2, {"--model-dir", model, "--partitioner", "mod"});
  const std::string a1 = c.StartPs(1, 2, {"--model-dir", model, "--partitioner", "mod"});
  ASSERT_FALSE(a0.empty() || a1.empty()) << c.Logs();
  const std::vector<std::string> job = SmallJob(dir, 12);
  ChildProcess* w = c.Start(Plus(job, {"--ps", a0 + "," + a1, "--worker-index", "0", "--num-workers", "1",
                                       "--model-dir", model, "--save-checkpoints-steps", "25"}),
                            "worker0");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(WaitForText(c.Path("worker0.err"), "epoch 2/12", 60s)) << c.Logs();
  ASSERT_TRUE(std::filesystem::exists(model + "/ps_checkpoint.json"));
  c.ps(1).Kill(SIGKILL);
  ASSERT_EQ(c.ps(1).Wait(10s), 128 + SIGKILL);
  ASSERT_TRUE(WaitForText(c.Path("worker0.err"), "parameter server shard 1 at " + a1 + " is unavailable", 30s))
      << c.Logs();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(w->Wait(0ms), -1) << "the worker must wait for the server, not exit\n" << c.Logs();
  const std::string again = c.StartPs(1, 2, {"--model-dir", model, "--partitioner", "mod"}, PortOf(a1));
  ASSERT_EQ(again, a1) << c.Logs();
  EXPECT_EQ(w->Wait(120s), 0) << c.Logs();
  const std::string err = ChildProcess::Read(c.Path("worker0.err"));
  EXPECT_NE(err.find("parameter server shard 1 at " + a1 + " is back"), std::string::npos) << err;
  EXPECT_NE(err.find("epoch 12/12"), std::string::npos) << err;
  EXPECT_NE(c.Logs().find("restored "), std::string::npos) << c.Logs();
  // The updates after shard 1's last checkpoint died with it: said when it came back, and counted.
  // (The kill may fall right after a checkpoint, before the next push: then nothing is lost.)
  const std::regex back("shard 1 at [0-9.:]+ restarted from its checkpoint of update ([0-9]+)( \\(it had applied at "
                        "least ([0-9]+)\\))?: ([0-9]+) of this worker's updates, applied after that, are lost");
  std::smatch mb;
  ASSERT_TRUE(std::regex_search(err, mb, back)) << err;
  const int64_t lost = std::stoll(mb[4]);
  EXPECT_EQ(lost, mb[3].matched ? std::stoll(mb[3]) - std::stoll(mb[1]) : 0)
      << "one worker: every update after the checkpoint is its own";
  EXPECT_NE(err.find("; " + std::to_string(lost) + " of its updates lost to server restarts"), std::string::npos)
      << err;
  // eval loads the sharded checkpoint.
  RunResult ev = RunCtrain("eval --model-dir " + model + " --input " + dir + "/tr.libsvm --format libsvm");
  EXPECT_EQ(ev.exit_code, 0) << ev.out;
  EXPECT_NE(ev.out.find("auc"), std::string::npos) << ev.out;
}

// The flags path end to end: `train --ps ... --sync-replicas` with one worker predicts exactly what
// local `train` predicts (the library test, ps_training_test.cc, compares every tensor).
TEST(PsCliTest, OneSyncWorkerPredictsExactlyWhatLocalTrainingPredicts) {
  const std::string dir = TestTempDir("ps_cli", "sync_equals_local");
  PsCluster c(dir);
  const std::vector<std::string> job = SmallJob(dir, 3);
  std::string local_cmd;
  for (const std::string& a : job) local_cmd += " " + a;
  RunResult local = RunCtrain(local_cmd + " --model-dir " + dir + "/local");
  ASSERT_EQ(local.exit_code, 0) << local.out;
  const std::string a0 = c.StartPs(0, 2, {"--model-dir", dir + "/ps"}), a1 = c.StartPs(1, 2, {"--model-dir", dir + "/ps"});
  ASSERT_FALSE(a0.empty() || a1.empty()) << c.Logs();
  RunResult ps = RunCtrain(local_cmd + " --ps " + a0 + "," + a1 + " --sync-replicas --model-dir " + dir + "/ps");
  ASSERT_EQ(ps.exit_code, 0) << ps.out << c.Logs();
  EXPECT_NE(ps.out.find("worker 0 of 1, sync replicas"), std::string::npos) << ps.out;
  for (const char* m : {"local", "ps"}) {
    RunResult p = RunCtrain(std::string("predict --model-dir ") + dir + "/" + m + " --input " + dir +
                            "/tr.libsvm --format libsvm --output " + dir + "/" + m + ".pred");
    ASSERT_EQ(p.exit_code, 0) << p.out;
  }
  const std::string want = ChildProcess::Read(dir + "/local.pred"), got = ChildProcess::Read(dir + "/ps.pred");
  EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), 2000);
  EXPECT_TRUE(want == got) << "predictions differ";
}

// The service plumbing's TLS: a trainer and `ps status` given the CA get through, plaintext does not.
TEST(PsCliTest, TlsServesTrainersAndRefusesPlaintext) {
  const std::string dir = TestTempDir("ps_cli", "tls");
  if (Shell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl not installed (scripts/install-deps.sh)";
  RunResult gen = Shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/key.pem -out " + dir +
                        "/cert.pem -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost");
  ASSERT_EQ(gen.exit_code, 0) << gen.out;
  PsCluster c(dir);
  const std::string a = c.StartPs(0, 1, {"--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"});
  ASSERT_FALSE(a.empty()) << c.Logs();
  RunResult plain = RunCtrain("ps status " + a + " --timeout-ms 2000");
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  std::string cmd;
  for (const std::string& x : SmallJob(dir, 1)) cmd += " " + x;
  RunResult tr = RunCtrain(cmd + " --ps " + a + " --tls-ca " + dir + "/cert.pem");
  ASSERT_EQ(tr.exit_code, 0) << tr.out << c.Logs();
  RunResult st = RunCtrain("ps status " + a + " --tls-ca " + dir + "/cert.pem --json");
  ASSERT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("\"global_step\": 40"), std::string::npos) << st.out;  // 2000 rows / 50
}

}  // namespace
}  // namespace ctrain::testing
