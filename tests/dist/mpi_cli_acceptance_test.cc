// `mpirun -np 2 ctrain train` on small synthetic data (seconds each): uneven
// shards end together, per-rank pipe channels and the refusal of a shared
// one, rank 0 alone writes, --lr-scaling, a stalled rank named and the job
// shut down, --check-replicas-every, --lr-decay plateau (rank 0's decision on
// every rank), keyed tables (every rank's keys translated alike; rank 0's
// resumed index reaches the others).
// "acceptance" in the file name labels these slow: they start real mpirun
// jobs, which the sanitizer stage skips (LeakSanitizer reports Open MPI's own
// allocations at exit); the trainer's side of the seam is covered there by
// tests/train/gradient_exchange_test.cc.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "dist/mpi_harness.h"

namespace ctrain::testing {
namespace {

// A small model so a step takes milliseconds.
const std::string kSmall = " --deep-layers 16 --embedding-size 4 --progress log --intra-op-parallelism-threads 1 ";

class MpiCliTest : public ScratchDirTest {
 protected:
  MpiCliTest() : ScratchDirTest("ctrain_mpi_cli") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  }
  // Rows [first, first + n) of the seed-7 synthetic data as LibSVM.
  void Synth(const std::string& name, int first, int n) {
    ASSERT_EQ(RunCtrain("synth --format libsvm --seed 7 --rows " + std::to_string(first + n) + " --output " +
                        P("all_" + name))
                  .exit_code,
              0);
    ASSERT_EQ(Shell("tail -n " + std::to_string(n) + " " + P("all_" + name) + " > " + P(name)).exit_code, 0);
  }
};

TEST_F(MpiCliTest, UnevenShardsEndTogetherAndReportTheLeftOver) {
  Synth("tr_0.libsvm", 0, 300);  // rank 0: ceil(300/64) = 5 batches
  Synth("tr_1.libsvm", 0, 200);  // rank 1: ceil(200/64) = 4 batches
  for (const char* mode : {"memory", "stream"}) {
    SCOPED_TRACE(mode);
    RunResult r = Shell(Mpirun(2) + "train --train " + P("tr_{rank}.libsvm") + " --input-mode " + mode +
                        " --batch-size 64 --epochs 2 --shuffle false" + kSmall + " --metrics-json " + P("m.json"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    // Both ranks stop after rank 1's 4th batch of each epoch: 8 steps; rank 0 had 300 - 4*64 = 44 left each epoch.
    EXPECT_NE(r.out.find("epoch 2/2: step 8"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("44 examples of this rank's shard were not used"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rank 0 (host"), std::string::npos) << r.out;
    const nlohmann::json m = nlohmann::json::parse(Slurp(P("m.json")));
    EXPECT_EQ(m["steps"], 8);
    // 4 steps per epoch: rank 0 gives 4 x 64, rank 1 3 x 64 + 8: 2 * (256 + 200) examples.
    EXPECT_EQ(m["examples"], 912);
  }
}

TEST_F(MpiCliTest, RankZeroAloneWritesAndTheLogStatesTheEffectiveBatchAndScaledRate) {
  Synth("tr.libsvm", 0, 512);
  RunResult r = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --batch-size 32 --epochs 1 --lr-scaling sqrt" +
                      " --learning-rate 0.001 --model-dir " + P("model") + " --metrics-json " + P("m.json") + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("2 rank(s) on 1 host(s) x batch 32 = effective batch 64 per step; learning rate 0.00141421 "
                       "(--lr-scaling sqrt from 0.001)"),
            std::string::npos)
      << r.out;
  // Record-level sharding: 256 rows per rank, 8 steps of 64.
  EXPECT_NE(r.out.find("epoch 1/1: step 8,"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(P("model/ckpt-8.bin"))) << r.out;
  EXPECT_EQ(nlohmann::json::parse(Slurp(P("m.json")))["examples"], 512);
  // One progress writer: the epoch line appears once.
  EXPECT_EQ(r.out.find("epoch 1/1"), r.out.rfind("epoch 1/1")) << r.out;

  RunResult bad = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --lr-scaling cubic --epochs 1" + kSmall);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--lr-scaling must be none, linear or sqrt, got 'cubic'"), std::string::npos) << bad.out;
}

TEST_F(MpiCliTest, SharedPipeChannelIsRefusedNamingBothRanks) {
  RunResult r = Shell(Mpirun(2) + "train --train pipe:" + P("train") + " --epochs 1" + kSmall);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("input channel pipe:" + fs::weakly_canonical(P("train")).string() +
                       " would be opened by rank 0 (host"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("and rank 1 (host"), std::string::npos) << r.out;
}

TEST_F(MpiCliTest, OneCacheFileForEveryRankIsRefusedAndRankPatternsAreExpanded) {
  Synth("tr.libsvm", 0, 256);
  RunResult bad = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --cache " + P("c.bin") + " --epochs 2" + kSmall);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--cache " + P("c.bin") + " under mpirun: every rank would write the same file"),
            std::string::npos)
      << bad.out;
  RunResult ok = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --cache " + P("c_{rank}.bin") +
                       " --batch-size 32 --epochs 2" + kSmall);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(P("c_0.bin"))) << ok.out;
  EXPECT_TRUE(fs::exists(P("c_1.bin"))) << ok.out;
  EXPECT_NE(ok.out.find("epoch 2/2: step 8,"), std::string::npos) << ok.out;  // 2 x 128 rows / 32 per rank
}

TEST_F(MpiCliTest, EachLocalRankReadsItsOwnPipeChannel) {
  Synth("a.libsvm", 0, 128);
  Synth("b.libsvm", 128, 128);
  // SageMaker-style channels: pipe:<prefix> reads FIFO <prefix>_<epoch>.
  ASSERT_EQ(Shell("mkfifo " + P("train_0_0") + " " + P("train_1_0")).exit_code, 0);
  RunResult r = Shell("(cat " + P("a.libsvm") + " > " + P("train_0_0") + " &) ; (cat " + P("b.libsvm") + " > " +
                      P("train_1_0") + " &) ; " + Mpirun(2, 60) + "train --train pipe:" + P("train_{local_rank}") +
                      " --pipe-timeout-ms 20000 --batch-size 32 --epochs 1 --metrics-json " + P("m.json") + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Each rank read its whole channel (no sharding on top): 4 steps of 2 x 32.
  EXPECT_EQ(nlohmann::json::parse(Slurp(P("m.json")))["examples"], 256) << r.out;
  EXPECT_NE(r.out.find("epoch 1/1: step 4,"), std::string::npos) << r.out;
}

TEST_F(MpiCliTest, StalledRankIsNamedThenTheJobShutsDown) {
  Synth("tr.libsvm", 0, 2000);
  // Memory mode prints each rank's pid; rank 1 is stopped (SIGSTOP) mid-training.
  const std::string script =
      "( " + Mpirun(2, 60) + "train --train " + P("tr.libsvm") +
      " --input-mode memory --epochs 100000 --batch-size 64 --stall-warning-secs 1 --stall-shutdown-secs 4" + kSmall +
      " > " + P("out.log") + " 2>&1; echo $? > " + P("rc") + " ) & "
      "for i in $(seq 1 300); do grep -q 'rank 1 (host' " + P("out.log") + " 2>/dev/null && break; sleep 0.1; done; "
      "pid=$(sed -n 's/.*rank 1 (host [^,]*, pid \\([0-9]*\\)).*/\\1/p' " + P("out.log") + " | head -1); "
      "sleep 1; kill -STOP $pid; t0=$(date +%s); "
      "for i in $(seq 1 600); do [ -s " + P("rc") + " ] && break; sleep 0.1; done; "
      "echo elapsed $(( $(date +%s) - t0 )); kill -9 $pid 2>/dev/null; wait";
  RunResult r = Shell(script);
  const std::string log = Slurp(P("out.log"));
  const std::string rc = Slurp(P("rc"));
  ASSERT_FALSE(rc.empty()) << r.out << log;
  EXPECT_NE(std::stoi(rc), 0) << log;
  // Rank 0 names rank 1 (stopped before or inside the collective), first as a warning, then when it aborts.
  EXPECT_NE(log.find("ctrain: warning: rank 0 (host"), std::string::npos) << log;
  EXPECT_NE(log.find("has waited 1 s for: rank 1 (host"), std::string::npos) << log;
  EXPECT_NE(log.find("ctrain: error: rank 0 (host"), std::string::npos) << log;
  EXPECT_NE(log.find("waited 4 s for: rank 1 (host"), std::string::npos) << log;
  EXPECT_NE(log.find("shutting down (--stall-shutdown-secs 4)"), std::string::npos) << log;
  const double elapsed = NumberAfter(r.out, "elapsed ");
  EXPECT_LE(elapsed, 20) << r.out;
}

TEST_F(MpiCliTest, SigtermToOneRankStopsEveryRankAtTheSameStepAndRankZeroCheckpoints) {
  Synth("tr.libsvm", 0, 2000);
  const std::string script =
      "( " + Mpirun(2, 60) + "train --train " + P("tr.libsvm") + " --model-dir " + P("model") +
      " --input-mode memory --epochs 100000 --batch-size 64" + kSmall + " > " + P("out.log") + " 2>&1; echo $? > " +
      P("rc") + " ) & "
      "for i in $(seq 1 300); do grep -q 'epoch 2/' " + P("out.log") + " 2>/dev/null && break; sleep 0.1; done; "
      "pid=$(sed -n 's/.*rank 1 (host [^,]*, pid \\([0-9]*\\)).*/\\1/p' " + P("out.log") + " | head -1); "
      "kill -TERM $pid; for i in $(seq 1 300); do [ -s " + P("rc") + " ] && break; sleep 0.1; done; wait";
  Shell(script);
  const std::string log = Slurp(P("out.log"));
  ASSERT_FALSE(Slurp(P("rc")).empty()) << log;
  EXPECT_NE(std::stoi(Slurp(P("rc"))), 0) << log;  // mpirun reports the first rank to end: 143 or 1
  // Rank 0 (not signalled) stops at the step of rank 1's request and saves it.
  const size_t at = log.find("interrupted by SIGTERM at step ");
  ASSERT_NE(at, std::string::npos) << log;
  const long long step = std::atoll(log.c_str() + at + 31);
  EXPECT_NE(log.find("interrupted by SIGTERM at step " + std::to_string(step) + ": every rank stopped at this step"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("interrupted by SIGTERM at step " + std::to_string(step) + ": checkpoint"), std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(P("model/ckpt-" + std::to_string(step) + ".bin"))) << log;
}

TEST_F(MpiCliTest, ReplicasStayIdentical) {
  Synth("tr.libsvm", 0, 512);
  RunResult r = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --batch-size 32 --epochs 2 --check-replicas-every 1" +
                      " --dropout 0.5 --batch-norm true" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("diverged"), std::string::npos) << r.out;
}

// Rank 0 alone validates; its plateau decisions reach every rank (the replicas stay identical only if every
// rank steps at the same rate). Uneven shards: rank 0 is at its last batch but one when rank 1's shard ends the
// epoch at step 8, an evaluation step, so the ranks must meet there whatever each knows of its own end.
TEST_F(MpiCliTest, PlateauDecisionsReachEveryRank) {
  Synth("tr.libsvm", 0, 513);  // rank 0: 257 rows (9 batches of 32), rank 1: 256 (8)
  Synth("va.libsvm", 513, 256);
  // Memory mode: each rank knows its shard's end (a stream learns it at the next read, on every rank alike).
  RunResult r = Shell(Mpirun(2) + "train --train " + P("tr.libsvm") + " --valid " + P("va.libsvm") +
                      " --input-mode memory --batch-size 32 --epochs 2 --eval-every-steps 2 --check-replicas-every 1"
                      " --learning-rate 0.004"
                      " --lr-schedule plateau --lr-plateau-patience 0 --lr-plateau-factor 0.5"
                      " --lr-plateau-min-delta 1 --metrics-json " + P("m.json") + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("diverged"), std::string::npos) << r.out;
  const nlohmann::json m = nlohmann::json::parse(Slurp(P("m.json")));
  ASSERT_EQ(m["steps"], 16) << m.dump();
  // Evaluations at 2, 4, ..., 16: the first sets the best, each later one halves the rate.
  ASSERT_EQ(m["lr_drops"].size(), 7u) << m.dump();
  for (int k = 0; k < 7; ++k) EXPECT_EQ(m["lr_drops"][k]["step"], 4 + 2 * k);
  EXPECT_EQ(m["learning_rate"].get<double>(), static_cast<double>(0.004f) / 128);
  EXPECT_NE(r.out.find("lr plateau at step 8: valid logloss"), std::string::npos) << r.out;
}

// A keyed table under mpirun: each step's keys from both ranks are admitted alike on every rank (the replica
// check compares indexes, rows and slots every step), and a run cut at step 6 and resumed from rank 0's
// checkpoint ends where the uninterrupted one does.
TEST_F(MpiCliTest, KeyedTableTrainsAlikeOnEveryRankAndResumes) {
  Synth("tr.libsvm", 0, 512);
  const std::string keyed = " --embedding-table keyed --min-count 2 --max-rows 400 --steps-to-live 4"
                            " --save-checkpoints-steps 4 --check-replicas-every 1 --batch-size 32 --epochs 2"
                            " --shuffle false --train " + P("tr.libsvm") + kSmall;
  RunResult full = Shell(Mpirun(2) + "train" + keyed + " --model-dir " + P("full") + " --metrics-json " + P("f.json"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  EXPECT_EQ(full.out.find("diverged"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("keyed table after epoch 2: live "), std::string::npos) << full.out;
  RunResult cut = Shell(Mpirun(2) + "train" + keyed + " --model-dir " + P("cut") + " --max-steps 6");
  ASSERT_EQ(cut.exit_code, 0) << cut.out;
  RunResult rest = Shell(Mpirun(2) + "train" + keyed + " --model-dir " + P("cut") + " --metrics-json " + P("c.json"));
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  EXPECT_EQ(rest.out.find("diverged"), std::string::npos) << rest.out;
  const nlohmann::json f = nlohmann::json::parse(Slurp(P("f.json"))), c = nlohmann::json::parse(Slurp(P("c.json")));
  EXPECT_EQ(f["steps"], 16);
  EXPECT_GT(f["keyed_table"]["admitted"].get<int64_t>(), 0) << f.dump();
  EXPECT_GT(f["keyed_table"]["filtered"].get<int64_t>(), 0) << f.dump();
  EXPECT_GT(f["keyed_table"]["evicted_steps"].get<int64_t>() + f["keyed_table"]["evicted_lru"].get<int64_t>(), 0)
      << f.dump();
  EXPECT_EQ(c["keyed_table"], f["keyed_table"]);
  EXPECT_TRUE(c["restored"].get<bool>()) << c.dump();
  for (const char* dir : {"full", "cut"})
    ASSERT_EQ(RunCtrain(std::string("predict --model-dir ") + P(dir) + " --input " + P("tr.libsvm") + " -o " +
                        P(std::string(dir) + ".txt"))
                  .exit_code,
              0);
  EXPECT_EQ(Slurp(P("full.txt")), Slurp(P("cut.txt")));
}

}  // namespace
}  // namespace ctrain::testing
