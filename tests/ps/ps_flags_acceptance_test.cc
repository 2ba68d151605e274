// Case B55 and its class: every `ctrain train` flag either moves a
// parameter-server run (one worker, --sync-replicas: local training bit for
// bit) exactly as it moves local training, or is refused at start naming the
// flag. Real processes: `ctrain ps` on loopback, `ctrain train` local and
// `--ps`, compared through --metrics-json.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "ps/ps_cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

struct TrainRun {
  RunResult result;
  nlohmann::json metrics;  // null when the run failed
};

class PsFlagsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TestTempDir("ps_flags", "data"));
    for (const char* a : {"--rows 1600 --seed 5 -o tr.libsvm", "--rows 400 --row-offset 1600 --seed 5 -o va.libsvm"}) {
      RunResult r = RunCtrain(std::string("synth --format libsvm --field-size 8 --feature-size 500 --num-numeric 2 ") + a,
                              *dir_);
      ASSERT_EQ(r.exit_code, 0) << r.out;
    }
    // A finished run to warm-start from.
    RunResult w = RunCtrain(Common() + " --epochs 1 --model-dir " + *dir_ + "/warm");
    ASSERT_EQ(w.exit_code, 0) << w.out;
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string Common() {
    return "train --train " + *dir_ + "/tr.libsvm --valid " + *dir_ + "/va.libsvm --format libsvm --input-mode memory "
           "--field-size 8 --feature-size 500 --embedding-size 4 --deep-layers 16 --batch-size 64 "
           "--intra-op-parallelism-threads 1 --progress log";
  }

  // Local training with `flags` in <dir>/L_<name>.
  TrainRun Local(const std::string& name, const std::string& flags) {
    const std::string d = *dir_ + "/L_" + name;
    return Finish(RunCtrain(Common() + " --epochs 3 --model-dir " + d + " --metrics-json " + d + ".json " + flags), d + ".json");
  }
  // The same with one parameter server and one sync worker in <dir>/P_<name>.
  TrainRun Ps(const std::string& name, const std::string& flags) {
    const std::string d = *dir_ + "/P_" + name;
    std::filesystem::create_directories(d);
    PsCluster c(*dir_ + "/cluster_" + name);
    std::filesystem::create_directories(*dir_ + "/cluster_" + name);
    const std::string a = c.StartPs(0, 1, {"--model-dir", d});
    EXPECT_FALSE(a.empty()) << c.Logs();
    TrainRun r = Finish(RunCtrain(Common() + " --epochs 3 --ps " + a + " --num-workers 1 --sync-replicas --model-dir " + d +
                             " --metrics-json " + d + ".json " + flags),
                   d + ".json");
    c.ps(0).Kill(SIGTERM);
    EXPECT_EQ(c.ps(0).Wait(10s), 0) << c.Logs();
    return r;
  }
  static TrainRun Finish(RunResult r, const std::string& metrics) {
    TrainRun out{std::move(r), nullptr};
    if (out.result.exit_code == 0) out.metrics = nlohmann::json::parse(Slurp(metrics), nullptr, false);
    return out;
  }

  static std::string* dir_;
};
std::string* PsFlagsTest::dir_ = nullptr;

// Each flag changes local training (so the comparison can fail), and the PS
// run equals the local one to the bit: the same step count, loss and metrics.
TEST_F(PsFlagsTest, EveryScheduleAndEvaluationFlagMovesThePsRunAsItMovesTheLocalOne) {
  const TrainRun base = Local("baseline", "");
  ASSERT_EQ(base.result.exit_code, 0) << base.result.out;
  const TrainRun pbase = Ps("baseline", "");
  ASSERT_EQ(pbase.result.exit_code, 0) << pbase.result.out;
  EXPECT_EQ(pbase.metrics["logloss"], base.metrics["logloss"]);
  struct Case {
    const char* name;
    const char* flags;
  };
  for (const Case& c : {Case{"lr_decay", "--lr-decay exponential --lr-decay-steps 5 --lr-decay-rate 0.5"},
                        Case{"cosine", "--lr-decay cosine --lr-decay-steps 20"},
                        Case{"warmup", "--lr-warmup-steps 40"},
                        Case{"early_stop", "--early-stopping-metric logloss --early-stopping-patience 1 "
                                           "--early-stopping-min-delta 0.5"},
                        Case{"neg_downsampling", "--negative-downsampling 0.5"},
                        Case{"max_steps", "--max-steps 30"},
                        // Stops at the second intermediate evaluation (step 20), not at an epoch end.
                        Case{"eval_every", "--eval-every-steps 10 --early-stopping-metric logloss "
                                           "--early-stopping-patience 1 --early-stopping-min-delta 0.5"}}) {
    SCOPED_TRACE(c.name);
    const TrainRun l = Local(c.name, c.flags);
    ASSERT_EQ(l.result.exit_code, 0) << l.result.out;
    const bool moved = l.metrics["logloss"] != base.metrics["logloss"] || l.metrics["steps"] != base.metrics["steps"];
    EXPECT_TRUE(moved) << c.flags << " does not change local training: the comparison would prove nothing";
    const TrainRun p = Ps(c.name, c.flags);
    ASSERT_EQ(p.result.exit_code, 0) << p.result.out;
    EXPECT_EQ(p.metrics["steps"], l.metrics["steps"]);
    EXPECT_EQ(p.metrics["logloss"], l.metrics["logloss"]);
    EXPECT_EQ(p.metrics["auc"], l.metrics["auc"]);
    EXPECT_EQ(p.metrics["train_loss"], l.metrics["train_loss"]);
    EXPECT_EQ(p.metrics.value("early_stopped", false), l.metrics.value("early_stopped", false));
  }
}

// --monitor-dir: the worker writes its TensorBoard event file and step scalars, as a local trainer does.
TEST_F(PsFlagsTest, MonitorDirWritesTheWorkersEventFile) {
  const std::string mon = *dir_ + "/monitor";
  const TrainRun p = Ps("monitor", "--monitor-dir " + mon + " --monitor-interval-ms 50");
  ASSERT_EQ(p.result.exit_code, 0) << p.result.out;
  int events = 0;
  bool steps = false;
  for (const auto& e : std::filesystem::recursive_directory_iterator(mon)) {
    const std::string n = e.path().filename().string();
    if (n.find("tfevents") != std::string::npos) ++events;
    if (n == "metrics.jsonl" && Slurp(e.path()).find("examples_per_sec") != std::string::npos) steps = true;
  }
  EXPECT_EQ(events, 1);
  EXPECT_TRUE(steps) << "no step scalars in the worker's metrics.jsonl";
}

// What a worker cannot honour is refused before training, naming the flag.
TEST_F(PsFlagsTest, FlagsAWorkerCannotHonourAreRefusedByName) {
  struct Case {
    const char* flags;
    const char* message;
  };
  const Case cases[] = {
      Case{"--keep-best", "--keep-best is not supported with parameter servers (sync)"},
      Case{"--warm-start-from WARM", "--warm-start-from is not supported with parameter servers (sync)"},
      Case{"--towers 2", "--towers is not supported with parameter servers (sync)"},
      Case{"--hogwild 2", "--hogwild is not supported with parameter servers (sync)"},
      Case{"--autotune", "--autotune is not supported with parameter servers (sync)"},
      Case{"--keep-checkpoints 2", "--keep-checkpoints is not supported with parameter servers (sync): each parameter "
                                   "server keeps its own shard checkpoints"},
      Case{"--input-mode stream", "--ps is not supported with local stream: a parameter-server worker reads its data in "
                                  "memory"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    std::string flags = c.flags;
    if (const size_t w = flags.find("WARM"); w != std::string::npos) flags.replace(w, 4, *dir_ + "/warm");
    // "--input-mode stream" overrides the common memory mode (a flag given twice is refused: use the config-free form).
    std::string common = Common();
    if (flags.rfind("--input-mode", 0) == 0) common.replace(common.find("--input-mode memory"), 19, flags), flags = "";
    const std::string d = *dir_ + "/refused_" + std::to_string(&c - &cases[0]);
    std::filesystem::create_directories(d);
    PsCluster cl(d);
    const std::string a = cl.StartPs(0, 1);
    ASSERT_FALSE(a.empty()) << cl.Logs();
    RunResult r = RunCtrain(common + " --ps " + a + " --sync-replicas --model-dir " + d + "/model " + flags);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << r.out;
    RunResult st = RunCtrain("ps status " + a + " --json");
    EXPECT_NE(st.out.find("\"pushes\": 0,"), std::string::npos) << "a refused worker must not train\n" << st.out;
  }
}

}  // namespace
}  // namespace ctrain::testing
