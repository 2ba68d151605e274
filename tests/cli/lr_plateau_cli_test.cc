// `ctrain train --lr-schedule plateau` end to end: the spelling of the issue
// (an alias of --lr-decay) and the TOML key, the drop logged, --metrics-json's
// learning_rate and lr_drops (kept by a resumed run), and the refusals by name.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"

namespace ctrain::testing {
namespace {

const std::string kSmall =
    " --deep-layers 16 --embedding-size 4 --batch-size 64 --progress log --intra-op-parallelism-threads 1";

class LrPlateauCliTest : public ScratchDirTest {
 protected:
  LrPlateauCliTest() : ScratchDirTest("ctrain_lr_plateau_cli") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    ASSERT_EQ(RunCtrain("synth --format libsvm --rows 640 --output " + P("tr.libsvm")).exit_code, 0);
    ASSERT_EQ(RunCtrain("synth --format libsvm --rows 256 --row-offset 640 --output " + P("va.libsvm")).exit_code, 0);
  }
  std::string Data() const { return " --train " + P("tr.libsvm") + " --valid " + P("va.libsvm"); }
};

TEST_F(LrPlateauCliTest, TheRateDropsAndTheLogMetricsAndCheckpointSaySo) {
  // 10 steps per epoch, evaluations every 2 steps; min-delta 1: every evaluation after the first is a plateau.
  RunResult r = RunCtrain("train" + Data() + kSmall + " --epochs 1 --learning-rate 0.008 --eval-every-steps 2"
                          " --lr-schedule plateau --lr-plateau-patience 1 --lr-plateau-factor 0.5"
                          " --lr-plateau-min-delta 1 --model-dir " + P("m") + " --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Evaluations at 2 (best), 4 (bad 1), 6 (bad 2: drop), 8 (bad 1), 10 (bad 2: drop).
  EXPECT_NE(r.out.find("lr plateau at step 6: valid logloss has not improved on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("for 2 evaluation(s): learning rate 0.008 -> 0.004"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lr plateau at step 10:"), std::string::npos) << r.out;
  const nlohmann::json m = nlohmann::json::parse(Slurp(P("m.json")));
  ASSERT_EQ(m["lr_drops"].size(), 2u) << m.dump();
  EXPECT_EQ(m["lr_drops"][0]["step"], 6);
  EXPECT_EQ(m["lr_drops"][0]["lr"].get<double>(), static_cast<double>(0.008f) / 2);
  EXPECT_EQ(m["lr_drops"][1]["step"], 10);
  EXPECT_EQ(m["learning_rate"].get<double>(), static_cast<double>(0.008f) / 4);
  RunResult again = RunCtrain("train" + Data() + kSmall + " --epochs 1 --learning-rate 0.008 --eval-every-steps 2"
                              " --lr-decay plateau --lr-plateau-patience 1 --lr-plateau-factor 0.5"
                              " --lr-plateau-min-delta 1 --model-dir " + P("m") + " --metrics-json " + P("m2.json"));
  ASSERT_EQ(again.exit_code, 0) << again.out;  // resumed: nothing left to do, the drops are the checkpoint's
  const nlohmann::json m2 = nlohmann::json::parse(Slurp(P("m2.json")));
  EXPECT_EQ(m2["restored"], true);
  EXPECT_EQ(m2["lr_drops"], m["lr_drops"]);
  EXPECT_EQ(m2["learning_rate"], m["learning_rate"]);
}

TEST_F(LrPlateauCliTest, TheConfigKeyAndTheRefusalsNameTheOption) {
  Write("c.toml", "lr_schedule = \"plateau\"\nlr_plateau_patience = 0\nlr_plateau_min_delta = 1.0\n"
                  "eval_every_steps = 2\nmax_steps = 4\n");
  RunResult r = RunCtrain("train" + Data() + kSmall + " --config " + P("c.toml") + " --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(Slurp(P("m.json")))["lr_drops"].size(), 1u);

  RunResult no_valid = RunCtrain("train --train " + P("tr.libsvm") + kSmall + " --lr-schedule plateau");
  EXPECT_NE(no_valid.exit_code, 0);
  EXPECT_NE(no_valid.out.find("--lr-decay plateau needs --valid"), std::string::npos) << no_valid.out;
  RunResult alone = RunCtrain("train" + Data() + kSmall + " --lr-plateau-factor 0.5");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.out.find("--lr-plateau-factor needs --lr-decay plateau (--lr-schedule plateau)"), std::string::npos)
      << alone.out;
  RunResult hogwild = RunCtrain("train" + Data() + kSmall + " --hogwild 2 --lr-schedule plateau");
  EXPECT_NE(hogwild.exit_code, 0);
  EXPECT_NE(hogwild.out.find("--lr-decay"), std::string::npos) << hogwild.out;
  EXPECT_NE(hogwild.out.find("hogwild"), std::string::npos) << hogwild.out;
  RunResult metric = RunCtrain("train" + Data() + kSmall + " --lr-schedule plateau --lr-plateau-metric loss");
  EXPECT_NE(metric.exit_code, 0);
  EXPECT_NE(metric.out.find("--lr-plateau-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, got 'loss'"),
            std::string::npos)
      << metric.out;
}

}  // namespace
}  // namespace ctrain::testing
