// `ctrain train --embedding-table keyed` from the command line, where the
// trainer's own tests (tests/train/keyed_table_test.cc) cannot reach: a stream
// learns of its epoch's end one read after the last batch, so an
// --eval-every-steps evaluation can fall on that step before the epoch end's
// eviction. The reported metrics must still describe the model the checkpoint
// holds (what `ctrain eval` on the model dir measures).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace ctrain::testing {
namespace {

class KeyedCliTest : public ScratchDirTest {
 protected:
  KeyedCliTest() : ScratchDirTest("keyed_cli") {}
};

TEST_F(KeyedCliTest, MetricsOfAnEvaluationAtTheEpochsLastStepDescribeTheCheckpoint) {
  ASSERT_EQ(RunCtrain("synth --format libsvm --seed 7 --rows 1024 --output " + P("tr.libsvm")).exit_code, 0);
  ASSERT_EQ(RunCtrain("synth --format libsvm --seed 8 --rows 300 --output " + P("va.libsvm")).exit_code, 0);
  // 8 steps of 128: the evaluation at step 8 runs before the stream knows the epoch ended; the epoch end's
  // L2 eviction then removes rows.
  RunResult r = RunCtrain("train --embedding-table keyed --l2-weight-threshold 0.02 --train " + P("tr.libsvm") +
                          " --valid " + P("va.libsvm") + " --input-mode stream --batch-size 128 --eval-every-steps 8"
                          " --deep-layers 16 --embedding-size 4 --intra-op-parallelism-threads 1 --progress log"
                          " --model-dir " + P("m") + " --metrics-json " + P("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_NE(r.out.find("eval step 8: valid auc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("epoch end step 8, after evicting "), std::string::npos) << r.out;
  RunResult e = RunCtrain("eval --model-dir " + P("m") + " --input " + P("va.libsvm") + " --metrics-json " +
                          P("e.json"));
  ASSERT_EQ(e.exit_code, 0) << e.out;
  const nlohmann::json m = nlohmann::json::parse(Slurp(P("m.json"))), v = nlohmann::json::parse(Slurp(P("e.json")));
  EXPECT_NEAR(m["auc"].get<double>(), v["auc"].get<double>(), 1e-9) << m.dump() << "\n" << v.dump();
  EXPECT_NEAR(m["logloss"].get<double>(), v["logloss"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace ctrain::testing
