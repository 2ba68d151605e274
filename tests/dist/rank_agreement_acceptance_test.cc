// Under mpirun, ranks that disagree do not train (issue #21, case shared/cases/B42):
// before step 1 the ranks compare the options every rank must share and refuse to
// start naming each option that differs and each rank's value; no collective runs
// on mismatched buffers, no step runs. (The parameter-shape comparison that follows
// it: tests/train/gradient_exchange_test.cc.)
// "acceptance" in the file name labels these slow (real mpirun jobs).
#include <gtest/gtest.h>

#include <string>

#include "dist/mpi_harness.h"

namespace ctrain::testing {
namespace {

class RankAgreementTest : public ScratchDirTest {
 protected:
  RankAgreementTest() : ScratchDirTest("ctrain_mpi_agree") {}
  void SetUp() override {
    ScratchDirTest::SetUp();
    if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
    ASSERT_EQ(RunCtrain("synth --rows 2000 --feature-size 5000 -o " + P("tr.tfrecord")).exit_code, 0);
  }
  // mpirun -np (n - 1) ranks with `common + others`, then one last rank with `common + last` (MPMD).
  RunResult Run(int n, const std::string& others, const std::string& last) {
    const std::string common = " train --train " + P("tr.tfrecord") +
                               " --embedding-size 4 --batch-size 64 --epochs 1 --progress log "
                               "--intra-op-parallelism-threads 1 ";
    return Shell(Mpirun(n - 1) + common + others + " : -np 1 " + kCtrain + common + last);
  }
  static void ExpectNoStep(const RunResult& r) {
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out.find("step 1"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("done:"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MPI_ERR_TRUNCATE"), std::string::npos) << r.out;
  }
};

TEST_F(RankAgreementTest, AnotherFeatureSizeOnRankThreeIsNamedWithEveryRanksValue) {
  RunResult r = Run(4, "--feature-size 5000 --deep-layers 32", "--feature-size 10000 --deep-layers 32");
  ExpectNoStep(r);
  EXPECT_NE(r.out.find("the training options differ between the ranks, so no step ran"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--feature-size: 5000 (ranks 0, 1, 2), 10000 (rank 3)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--deep-layers:"), std::string::npos) << "only the keys that differ: " << r.out;
}

TEST_F(RankAgreementTest, AnotherLearningRateOnRankThreeIsNamed) {
  RunResult r = Run(4, "--feature-size 5000 --deep-layers 32", "--feature-size 5000 --deep-layers 32 --learning-rate 0.1");
  ExpectNoStep(r);
  EXPECT_NE(r.out.find("--learning-rate: 0.0005 (ranks 0, 1, 2), 0.1 (rank 3)"), std::string::npos) << r.out;
}

TEST_F(RankAgreementTest, OtherDeepLayersOnTheLastRankAreNamedNotATruncatedMessage) {
  for (int n : {2, 3}) {
    SCOPED_TRACE(n);
    RunResult r = Run(n, "--feature-size 5000 --deep-layers 32", "--feature-size 5000 --deep-layers 33");
    ExpectNoStep(r);
    const std::string others = n == 2 ? "[32] (rank 0)" : "[32] (ranks 0, 1)";
    EXPECT_NE(r.out.find("--deep-layers: " + others + ", [33] (rank " + std::to_string(n - 1) + ")"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
}  // namespace ctrain::testing
