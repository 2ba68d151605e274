// Acceptance (slow): `mpirun -np 2 ctrain train` on the real split of
// CTRAIN_SHARED_DATA_DIR/criteo_deepfm_va10k.libsvm (first 8000 lines train,
// last 2040 valid; id_base 1, feature_size 922), with the seed config (the
// train defaults: embedding 32, MLP 400-400-400, dropout 0.5, Adam lr 5e-4).
//   - 2 ranks x batch B == 1 process x batch 2B (same seed): losses,
//     parameters and predictions agree to floating-point tolerance;
//   - 2 ranks reach valid AUC >= 0.72 in 5 epochs;
//   - kill -9 of one rank ends the job with an error naming it;
//   - a checkpoint written by rank 0 resumes under mpirun, bit-exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/train/checkpoint.h"
#include "dist/mpi_harness.h"

namespace ctrain::testing {
namespace {

class MpiAcceptanceTest : public ScratchDirTest {
 protected:
  MpiAcceptanceTest() : ScratchDirTest("ctrain_mpi_acceptance") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
    if (!fs::exists(kData + "/criteo_deepfm_va10k.libsvm"))
      GTEST_SKIP() << "shared data " << kData << "/criteo_deepfm_va10k.libsvm is absent";
    const std::string src = kData + "/criteo_deepfm_va10k.libsvm";
    ASSERT_EQ(Shell("head -n 8000 " + src + " > " + P("tr.libsvm") + " && tail -n 2040 " + src + " > " +
                    P("va.libsvm"))
                  .exit_code,
              0);
  }
  std::string Data() const {
    return " --train " + P("tr.libsvm") + " --valid " + P("va.libsvm") +
           " --id-base 1 --feature-size 922 --progress log --intra-op-parallelism-threads 1 ";
  }
  std::vector<double> Predict(const std::string& model_dir) {
    const std::string out = model_dir + ".pred";
    RunResult r = RunCtrain("predict --model-dir " + model_dir + " --input " + P("va.libsvm") + " --output " + out);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::vector<double> p;
    std::ifstream f(out);
    for (double v; f >> v;) p.push_back(v);
    return p;
  }
  static double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = a.size() == b.size() ? 0 : 1e9;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }
  // Largest |a - b| / (1 + |a|) over every f32 tensor of the two latest checkpoints.
  static double ParamDiff(const std::string& dir_a, const std::string& dir_b, std::string* worst) {
    StatusOr<train::Checkpoint> a = train::LoadLatestCheckpoint(dir_a);
    StatusOr<train::Checkpoint> b = train::LoadLatestCheckpoint(dir_b);
    EXPECT_TRUE(a.ok() && b.ok());
    if (!a.ok() || !b.ok()) return 1e9;
    double m = 0;
    for (const train::NamedTensor& t : a->tensors) {
      const train::NamedTensor* u = b->Find(t.name);
      EXPECT_NE(u, nullptr) << t.name;
      if (u == nullptr || u->f32.size() != t.f32.size()) return 1e9;
      for (size_t i = 0; i < t.f32.size(); ++i) {
        const double d = std::fabs(double{t.f32[i]} - u->f32[i]) / (1 + std::fabs(double{t.f32[i]}));
        if (d > m) m = d, *worst = t.name;
      }
    }
    return m;
  }
  static nlohmann::json Metrics(const std::string& path) { return nlohmann::json::parse(Slurp(path)); }
};

// Same examples per step: rank r of 2 reads rows r, r+2, ... in order
// (--shuffle false), so its batch k holds half of the 1-process batch k.
// Dropout is off: its masks are drawn per rank and could not match.
// Adam turns rounding noise in gradients that are nearly zero into whole
// steps (update ~ lr * sign(g)), so the seed config (Adam) is compared over
// one epoch; plain SGD over all 5.
TEST_F(MpiAcceptanceTest, TwoRanksEqualOneProcessWithTwiceTheBatch) {
  struct Case {
    const char* optimizer;
    int epochs;
    const char* mode;
    int towers;  // per rank (the gradients are merged over towers, then over ranks)
  };
  for (const Case c : {Case{"adam", 1, "memory", 1}, Case{"adam", 1, "stream", 1}, Case{"sgd", 5, "memory", 1},
                       Case{"adam", 1, "memory", 2}}) {
    const std::string tag = std::string(c.optimizer) + "_" + c.mode + "_" + std::to_string(c.towers);
    SCOPED_TRACE(tag);
    const std::string flags = Data() + " --dropout 0 --shuffle false --seed 2017 --optimizer " + c.optimizer +
                              " --epochs " + std::to_string(c.epochs) + " --input-mode " + c.mode;
    RunResult one = RunCtrain("train" + flags + " --batch-size 512 --model-dir " + P("one_" + tag) +
                              " --metrics-json " + P("one_" + tag + ".json"));
    ASSERT_EQ(one.exit_code, 0) << one.out;
    RunResult two = Shell(Mpirun(2) + "train" + flags + " --towers " + std::to_string(c.towers) +
                          " --batch-size 256 --model-dir " + P("two_" + tag) +
                          " --metrics-json " + P("two_" + tag + ".json"));
    ASSERT_EQ(two.exit_code, 0) << two.out;
    const nlohmann::json m1 = Metrics(P("one_" + tag + ".json")), m2 = Metrics(P("two_" + tag + ".json"));
    EXPECT_EQ(m1["steps"], 16 * c.epochs);
    EXPECT_EQ(m2["steps"], m1["steps"]);
    EXPECT_EQ(m2["examples"], m1["examples"]);
    EXPECT_NEAR(m2["train_loss"].get<double>(), m1["train_loss"].get<double>(), 1e-5);
    EXPECT_NEAR(m2["auc"].get<double>(), m1["auc"].get<double>(), 1e-5);
    EXPECT_NEAR(m2["logloss"].get<double>(), m1["logloss"].get<double>(), 1e-5);
    std::string worst;
    EXPECT_LE(ParamDiff(P("one_" + tag), P("two_" + tag), &worst), 1e-4) << worst;
    EXPECT_LE(MaxDiff(Predict(P("one_" + tag)), Predict(P("two_" + tag))), 1e-5);
  }
}

TEST_F(MpiAcceptanceTest, TwoRanksReachAuc072In5Epochs) {
  // Per-rank batch 128: the effective batch is the seed config's 256.
  RunResult r = Shell(Mpirun(2, 600) + "train" + Data() + " --batch-size 128 --epochs 5 --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json m = Metrics(P("m.json"));
  EXPECT_EQ(m["steps"], 5 * 32);
  EXPECT_GE(m["auc"].get<double>(), 0.72) << r.out;
  std::printf("mpi acceptance: 2 ranks valid auc %.5f logloss %.5f, %.0f examples/s\n", m["auc"].get<double>(),
              m["logloss"].get<double>(), m["examples_per_sec"].get<double>());
}

TEST_F(MpiAcceptanceTest, KillNineOfOneRankEndsTheJobNamingIt) {
  // Memory mode prints each rank's pid; rank 1 is killed mid-training.
  const std::string script =
      "( " + Mpirun(2, 120) + "train" + Data() + " --input-mode memory --epochs 1000 --stall-warning-secs 2" +
      " --stall-shutdown-secs 10 > " + P("out.log") + " 2>&1; echo $? > " + P("rc") + " ) & "
      "for i in $(seq 1 600); do grep -q 'epoch 1/1000' " + P("out.log") + " 2>/dev/null && break; sleep 0.1; done; "
      "pid=$(sed -n 's/.*rank 1 (host [^,]*, pid \\([0-9]*\\)).*/\\1/p' " + P("out.log") + " | head -1); "
      "echo killed $pid; kill -9 $pid; t0=$(date +%s); "
      "for i in $(seq 1 1200); do [ -s " + P("rc") + " ] && break; sleep 0.1; done; "
      "echo elapsed $(( $(date +%s) - t0 )); wait";
  RunResult r = Shell(script);
  const std::string log = Slurp(P("out.log"));
  const std::string rc = Slurp(P("rc"));
  ASSERT_FALSE(rc.empty()) << r.out << log;
  EXPECT_NE(std::stoi(rc), 0) << log;
  // mpirun's own report (it notices the death first and ends the job; Open MPI 4.1 prints the pid as 0 for a
  // killed rank), or our stall detector's.
  const bool named = (log.find("process rank 1 with PID") != std::string::npos &&
                      log.find("exited on signal 9 (Killed)") != std::string::npos) ||
                     log.find("for: rank 1 (host") != std::string::npos;
  EXPECT_TRUE(named) << log;
  EXPECT_LE(NumberAfter(r.out, "elapsed "), 10) << r.out << log;
}

TEST_F(MpiAcceptanceTest, CheckpointOfRankZeroResumesUnderMpirun) {
  const std::string flags = Data() + " --input-mode memory --batch-size 256";
  RunResult full = Shell(Mpirun(2) + "train" + flags + " --epochs 3 --model-dir " + P("full"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  RunResult first = Shell(Mpirun(2) + "train" + flags + " --epochs 2 --model-dir " + P("resumed"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_TRUE(fs::exists(P("resumed/ckpt-32.bin")));
  RunResult second = Shell(Mpirun(2) + "train" + flags + " --epochs 3 --model-dir " + P("resumed") +
                           " --metrics-json " + P("m.json"));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("resumed from " + P("resumed") + " at step 32"), std::string::npos) << second.out;
  const nlohmann::json m = Metrics(P("m.json"));
  EXPECT_EQ(m["steps"], 48);
  EXPECT_EQ(m["restored"], true);
  // Rank 1 took rank 0's restored state (broadcast): the result is the uninterrupted run's, bit for bit.
  std::string worst;
  EXPECT_EQ(ParamDiff(P("full"), P("resumed"), &worst), 0.0) << worst;
  EXPECT_EQ(MaxDiff(Predict(P("full")), Predict(P("resumed"))), 0.0);
}

TEST_F(MpiAcceptanceTest, StreamCheckpointMidEpochResumesUnderMpirun) {
  // Stream mode, stopped mid-epoch (--max-steps 7 of 16): each rank replays its shard's epoch and skips 7 batches.
  const std::string flags = Data() + " --input-mode stream --batch-size 256";
  RunResult full = Shell(Mpirun(2) + "train" + flags + " --epochs 2 --model-dir " + P("full"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  RunResult first = Shell(Mpirun(2) + "train" + flags + " --epochs 2 --max-steps 7 --model-dir " + P("resumed"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  RunResult second = Shell(Mpirun(2) + "train" + flags + " --epochs 2 --model-dir " + P("resumed"));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("resumed from " + P("resumed") + " at step 7"), std::string::npos) << second.out;
  std::string worst;
  EXPECT_EQ(ParamDiff(P("full"), P("resumed"), &worst), 0.0) << worst;
  EXPECT_EQ(MaxDiff(Predict(P("full")), Predict(P("resumed"))), 0.0);
}

}  // namespace
}  // namespace ctrain::testing
