// Acceptance (slow): two asynchronous workers and two parameter servers
// (processes on loopback) train the seed config on the real split, first
// 8000 lines of criteo_deepfm_va10k for training, the last 2040 for
// validation, 5 epochs: the chief's valid AUC >= 0.71 (local training reaches
// 0.72-0.73, tests/train/acceptance_test.cc). The sharded checkpoint then
// evaluates with `ctrain eval`.
//
// Seed config: field_size 39, feature_size 921 with id_base 1, embedding 32,
// MLP 400-400-400, dropout 0.5, Adam lr 5e-4, batch 256.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "ps/ps_cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

double LastAuc(const std::string& text) {
  std::regex re("valid auc ([0-9.]+)");
  double auc = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    auc = std::stod((*it)[1]);
  return auc;
}

TEST(PsAcceptance, TwoAsyncWorkersReachAuc071OnCriteoVa10k) {
  const std::string src = kData + "/criteo_deepfm_va10k.libsvm";
  struct stat st;
  if (::stat(kData.c_str(), &st) != 0) GTEST_SKIP() << "shared data directory " << kData << " is absent";
  const std::string dir = TestTempDir("ps_acceptance", "va10k");
  ASSERT_EQ(Shell("head -n 8000 " + src + " > " + dir + "/tr.libsvm && tail -n 2040 " + src + " > " + dir +
                  "/va.libsvm").exit_code, 0);
  PsCluster c(dir);
  const std::string model = dir + "/model";
  const std::string a0 = c.StartPs(0, 2, {"--model-dir", model}), a1 = c.StartPs(1, 2, {"--model-dir", model});
  ASSERT_FALSE(a0.empty() || a1.empty()) << c.Logs();
  const std::vector<std::string> job = {
      "train", "--train", dir + "/tr.libsvm", "--input-mode", "memory", "--format", "libsvm", "--id-base", "1",
      "--field-size", "39", "--feature-size", "921", "--embedding-size", "32", "--deep-layers", "400,400,400",
      "--dropout", "0.5", "--optimizer", "adam", "--learning-rate", "0.0005", "--batch-size", "256", "--epochs", "5",
      "--intra-op-parallelism-threads", "1", "--progress", "log", "--ps", a0 + "," + a1, "--num-workers", "2"};
  std::vector<std::string> w1 = job, w0 = job;
  w1.insert(w1.end(), {"--worker-index", "1"});
  w0.insert(w0.end(), {"--worker-index", "0", "--valid", dir + "/va.libsvm", "--model-dir", model,
                       "--metrics-json", dir + "/metrics.json"});
  ChildProcess* p1 = c.Start(w1, "worker1");
  ChildProcess* p0 = c.Start(w0, "worker0");
  ASSERT_TRUE(p0 != nullptr && p1 != nullptr);
  EXPECT_EQ(p1->Wait(600s), 0) << c.Logs();
  ASSERT_EQ(p0->Wait(600s), 0) << c.Logs();
  const std::string err = ChildProcess::Read(c.Path("worker0.err"));
  const double auc = LastAuc(err);
  std::printf("ps acceptance: 2 async workers, 2 servers: valid auc %.5f\n%s", auc, err.c_str());
  EXPECT_GE(auc, 0.71) << c.Logs();
  RunResult status = RunCtrain("ps status " + a0 + " " + a1);
  EXPECT_EQ(status.exit_code, 0) << status.out;
  std::printf("%s", status.out.c_str());
  RunResult ev = RunCtrain("eval --model-dir " + model + " --input " + dir + "/va.libsvm --format libsvm --id-base 1");
  ASSERT_EQ(ev.exit_code, 0) << ev.out;
  std::printf("ctrain eval on the sharded checkpoint: %s", ev.out.c_str());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ev.out, m, std::regex("(^|\\n)auc ([0-9.]+)"))) << ev.out;
  EXPECT_GE(std::stod(m[2]), 0.71) << "the final sharded checkpoint, evaluated by ctrain eval";
}

}  // namespace
}  // namespace ctrain::testing
