// End-to-end tests of the data service with real processes on loopback:
// exactly-once per epoch (distributed_epoch), a copy per worker
// (parallel_epochs), authentication, the default bind, clean exits.
// The failure tests (kill -9) are in data_service_acceptance_test.cc.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_harness.h"
#include "dataservice/cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

class DataServiceCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir("ctrain_ds_cli", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // The local reader's view of `file` as LibSVM lines (ids as the model sees them).
  std::map<std::string, int> Reference(const std::string& file, const std::string& flags = "") {
    RunResult r = RunCtrain("convert -i '" + file + "' -o '" + dir_ + "/ref.libsvm' --output-format libsvm " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return LineCounts(Slurp(dir_ + "/ref.libsvm"));
  }
  std::string dir_;
};

bool HaveData() { return std::filesystem::exists(kData + "/criteo_deepfm_va10k.libsvm"); }

TEST_F(DataServiceCliTest, DistributedEpochDeliversEveryExampleOncePerEpochAcrossTwoWorkers) {
  if (!HaveData()) GTEST_SKIP() << "../shared/data is absent";
  const std::string file = kData + "/criteo_deepfm_va10k.libsvm";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker({"--exit-when-idle"}), "");
  ASSERT_NE(c.StartWorker({"--exit-when-idle"}), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file +
                          "' --batch-size 500 --shuffle-buffer-size 1000 --epochs 2 --num-splits 6 -o '" + dir_ +
                          "/got.libsvm' --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  const std::map<std::string, int> ref = Reference(file);
  int64_t n = 0;
  for (const auto& [line, k] : ref) n += k;
  EXPECT_EQ(n, 10040);  // every line of the file is one example
  const std::map<std::string, int> got = LineCounts(Slurp(dir_ + "/got.libsvm"));
  EXPECT_EQ(got, Times(ref, 2)) << Diff(Times(ref, 2), got);
  EXPECT_NE(r.out.find("\"examples\":" + std::to_string(2 * n)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"splits_completed\":12"), std::string::npos) << r.out;
  // Both workers served, and exit 0 once the job is finished (--exit-when-idle).
  EXPECT_EQ(c.worker(0).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.worker(1).Wait(10s), 0) << c.Logs();
}

TEST_F(DataServiceCliTest, CriteoTsvIsParsedAndHashedOnTheWorkers) {
  if (!HaveData()) GTEST_SKIP() << "../shared/data is absent";
  const std::string file = kData + "/criteo_raw_paddlerec_part-0.tsv";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file +
                          "' --format criteo-tsv --feature-size 1000 --batch-size 64 --num-splits 3 -o '" + dir_ +
                          "/got.libsvm'");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  EXPECT_EQ(LineCounts(Slurp(dir_ + "/got.libsvm")), Reference(file, "--format criteo-tsv --feature-size 1000"));
}

TEST_F(DataServiceCliTest, ParallelEpochsGivesOneCopyPerWorker) {
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrain("synth --rows 3000 -o '" + file + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file +
                          "' --processing-mode parallel_epochs --batch-size 256 --shuffle-buffer-size 500 -o '" + dir_ +
                          "/got.libsvm'");
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  EXPECT_EQ(LineCounts(Slurp(dir_ + "/got.libsvm")), Times(Reference(file), 2));
}

TEST_F(DataServiceCliTest, TokenIsRequiredOnEveryProcessAndWrongOnesAreRefused) {
  std::ofstream(dir_ + "/token") << "s3cret-token\n";
  std::ofstream(dir_ + "/wrong") << "other-token\n";
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrain("synth --rows 500 -o '" + file + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher({"--token-file", dir_ + "/token"}), "");
  // A worker with the wrong token is refused and says so.
  ASSERT_NE(c.StartWorker({"--token-file", dir_ + "/wrong"}), "");
  EXPECT_EQ(c.worker(0).Wait(10s), 1);
  EXPECT_NE(c.worker(0).Err().find("wrong service token"), std::string::npos) << c.worker(0).Err();
  // No token, a wrong one: UNAUTHENTICATED; the right one (file or environment) works.
  RunResult none = RunCtrainBounded("data-service status " + c.address());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("Unauthenticated"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("missing service token"), std::string::npos) << none.out;
  RunResult wrong = RunCtrainBounded("data-service status " + c.address() + " --token-file '" + dir_ + "/wrong'");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.out.find("wrong service token"), std::string::npos) << wrong.out;
  RunResult read_none = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file + "' --discard");
  EXPECT_EQ(read_none.exit_code, 1);
  EXPECT_NE(read_none.out.find("Unauthenticated"), std::string::npos) << read_none.out;
  EXPECT_EQ(RunCtrainBounded("data-service status " + c.address() + " --token-file '" + dir_ + "/token'").exit_code, 0);
  ASSERT_NE(c.StartWorker({"--token-file", dir_ + "/token"}), "");
  RunResult ok = Shell("CTRAIN_SERVICE_TOKEN=s3cret-token " + kCtrain + " data-service read --data-service " +
                       c.address() + " --train '" + file + "' --discard --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << c.Logs();
  EXPECT_NE(ok.out.find("\"examples\":500"), std::string::npos) << ok.out;
}

// The listening sockets of `pid`'s ports in /proc/net/tcp{,6}: "ADDR" per port.
std::string ListenAddress(int port) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(ChildProcess::Read(table));
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string sl, local, remote, st;
      f >> sl >> local >> remote >> st;
      if (st == "0A" && local.size() > 5 && local.substr(local.size() - 4) == hex) return local.substr(0, local.find(':'));
    }
  }
  return "";
}

TEST_F(DataServiceCliTest, ServersBindLoopbackByDefaultAndExitCleanlyOnSigterm) {
  DataServiceCluster c(dir_);
  const std::string d = c.StartDispatcher({"--work-dir", dir_ + "/work"});
  ASSERT_EQ(d.rfind("127.0.0.1:", 0), 0u) << d;
  const std::string w = c.StartWorker();
  ASSERT_EQ(w.rfind("127.0.0.1:", 0), 0u) << w;
  // 127.0.0.1 (or its IPv4-mapped IPv6 form, as gRPC binds it), never 0.0.0.0 / ::.
  for (const std::string& a : {ListenAddress(c.port()), ListenAddress(std::stoi(w.substr(w.rfind(':') + 1)))})
    EXPECT_TRUE(a == "0100007F" || a == "0000000000000000FFFF00000100007F") << a;
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  c.worker(0).Kill(SIGTERM);
  c.dispatcher().Kill(SIGTERM);
  EXPECT_EQ(c.worker(0).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.dispatcher().Wait(10s), 0) << c.Logs();
  // The journal was closed cleanly: a new dispatcher takes the work dir over.
  ASSERT_NE(c.StartDispatcher({"--work-dir", dir_ + "/work"}), "") << c.Logs();
}

TEST_F(DataServiceCliTest, ShutdownStopsTheWorkersAndTheDispatcher) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(2)) << c.Logs();
  RunResult r = RunCtrainBounded("data-service shutdown " + c.address());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(c.worker(0).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.worker(1).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.dispatcher().Wait(15s), 0) << c.Logs();
}

TEST_F(DataServiceCliTest, TwoLiveTrainersCannotShareAConsumerIndex) {
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrainBounded("synth --rows 4000 -o '" + file + "'").exit_code, 0);
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  const std::vector<std::string> read = {"data-service", "read", "--data-service", c.address(), "--train", file,
                                         "--batch-size", "100", "--job-name", "shared", "--pace-us", "20000",
                                         "--discard"};
  ChildProcess* first = c.StartClient(read, "first");
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(first->running()) << first->Err();
  RunResult second = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file +
                                      "' --batch-size 100 --job-name shared --discard");
  EXPECT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(first->Wait(60s), 1) << first->Err();
  EXPECT_NE(first->Err().find("taken over by a newer trainer"), std::string::npos) << first->Err();
}

TEST_F(DataServiceCliTest, ReadRefusesToOverwriteItsInput) {
  const std::string file = dir_ + "/s.libsvm";
  ASSERT_EQ(RunCtrainBounded("synth --rows 100 --format libsvm -o '" + file + "'").exit_code, 0);
  const std::string before = Slurp(file);
  RunResult r = RunCtrainBounded("data-service read --data-service 127.0.0.1:1 --train '" + file + "' -o '" + file + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--output"), std::string::npos) << r.out;
  EXPECT_EQ(Slurp(file), before);
}

TEST_F(DataServiceCliTest, TlsAndMutualTlsCarryTheWholeJob) {
  if (Shell("command -v openssl").exit_code != 0) GTEST_SKIP() << "openssl is not installed";
  // A self-signed certificate for the loopback address: its own CA.
  RunResult cert = Shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout '" + dir_ + "/key.pem' -out '" + dir_ +
                         "/cert.pem' -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 -days 1");
  ASSERT_EQ(cert.exit_code, 0) << cert.out;
  const std::string file = dir_ + "/s.tfrecord";
  ASSERT_EQ(RunCtrainBounded("synth --rows 1000 -o '" + file + "'").exit_code, 0);
  const std::string pem = dir_ + "/cert.pem", key = dir_ + "/key.pem";
  DataServiceCluster c(dir_);
  // The dispatcher requires client certificates; the worker presents its own.
  ASSERT_NE(c.StartDispatcher({"--tls-cert", pem, "--tls-key", key, "--tls-client-ca", pem}), "");
  ASSERT_NE(c.StartWorker({"--tls-cert", pem, "--tls-key", key, "--tls-ca", pem}), "");
  const std::string tls = " --tls-ca '" + pem + "' --tls-cert '" + pem + "' --tls-key '" + key + "'";
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + file +
                                 "' --discard --json" + tls);
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  EXPECT_NE(r.out.find("\"examples\":1000"), std::string::npos) << r.out;
  // Without a client certificate the dispatcher refuses the handshake (the client keeps retrying: bounded here).
  RunResult no_cert = RunCtrainBounded("data-service status " + c.address() + " --tls-ca '" + pem + "'", 20);
  EXPECT_EQ(no_cert.exit_code, 1) << no_cert.out;
  EXPECT_EQ(RunCtrainBounded("data-service status " + c.address() + tls, 20).exit_code, 0);
}

TEST_F(DataServiceCliTest, ReadErrorsNameTheFileAndLine) {
  std::ofstream(dir_ + "/bad.libsvm") << "1 0:1 1:1\n0 0:1 x:1\n";
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  RunResult r = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + dir_ +
                          "/bad.libsvm' --field-size 2 --num-splits 1 --discard");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("bad.libsvm:2"), std::string::npos) << r.out;
  // A file missing on the dispatcher's host is named.
  RunResult m = RunCtrainBounded("data-service read --data-service " + c.address() + " --train '" + dir_ +
                          "/missing.libsvm' --discard");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.out.find("missing.libsvm"), std::string::npos) << m.out;
}

}  // namespace
}  // namespace ctrain::testing
