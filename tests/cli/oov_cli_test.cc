// Issue 20, `--oov error|bucket` on fixed tables: an id at or above --feature-size either stops the run naming
// the record and the way out, or reads its field's out-of-vocabulary row (the table has feature_size + F rows),
// counted, in memory and stream mode, in eval/predict (taken from the checkpoint), and across a warm start whose
// vocabulary grew (the OOV rows move after it).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "dataservice/cluster.h"

namespace ctrain::testing {
namespace {

constexpr int kVocab = 40;  // field f's ids: f * 10 + [0, 10)

// LibSVM rows, F = 4, 0-based ids. With probability `oov` a field's id is one no vocabulary holds (100 and up,
// `oov_base` moves them). The click follows field 1's id. *oov_ids counts the ids at or above kVocab.
std::string Rows(int n, uint32_t seed, double oov, int oov_base, int64_t* oov_ids) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::string s;
  for (int r = 0; r < n; ++r) {
    const int k1 = static_cast<int>(rng() % 10);
    s += u(rng) < 0.15 + 0.07 * k1 ? "1" : "0";
    for (int f = 0; f < 4; ++f) {
      int id = f * 10 + (f == 1 ? k1 : static_cast<int>(rng() % 10));
      if (u(rng) < oov) {
        id = oov_base + f * 10 + static_cast<int>(rng() % 10);
        ++*oov_ids;
      }
      s += " " + std::to_string(id) + ":1";
    }
    s += "\n";
  }
  return s;
}

class OovCliTest : public ScratchDirTest {
 protected:
  OovCliTest() : ScratchDirTest("oov_cli") {}
  static std::string Train(const std::string& extra, const std::string& progress = "none") {
    return "train --format libsvm --field-size 4 --embedding-size 4 --deep-layers 8 --batch-size 50 --epochs 2 "
           "--dropout 0 --intra-op-threads 1 --progress " + progress + " " + extra;
  }
  // The bytes of the model dir's checkpoints (their meta JSON sits in them as text).
  static std::string Checkpoints(const std::string& dir) {
    std::string all;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("ckpt-", 0) == 0) all += Slurp(e.path());
    return all;
  }
};

TEST_F(OovCliTest, ErrorStopsNamingTheRecordAndTheWayOut) {
  int64_t n = 0;
  Write("tr.libsvm", Rows(200, 1, 0.05, 100, &n));
  ASSERT_GT(n, 0);
  const RunResult r = RunCtrain(Train("--train " + P("tr.libsvm") + " --feature-size 40"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("tr.libsvm:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("increase --feature-size, or pass --oov bucket"), std::string::npos) << r.out;
  const RunResult bad = RunCtrain(Train("--train " + P("tr.libsvm") + " --feature-size 40 --oov clip"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--oov: expected error or bucket, got 'clip'"), std::string::npos) << bad.out;
}

TEST_F(OovCliTest, BucketReadsEachFieldsOwnRowCountedInMemoryAndStreamAndInPredict) {
  int64_t train_oov = 0, test_oov = 0, test2_oov = 0;
  Write("tr.libsvm", Rows(1000, 1, 0.05, 100, &train_oov));
  Write("te.libsvm", Rows(300, 2, 0.3, 100, &test_oov));
  Write("te2.libsvm", Rows(300, 2, 0.3, 5000, &test2_oov));  // the same rows, other unknown ids
  ASSERT_EQ(test_oov, test2_oov);
  for (const std::string mode : {"memory", "stream"}) {
    SCOPED_TRACE(mode);
    const std::string dir = P("m_" + mode);
    RunResult r = RunCtrain(Train("--train " + P("tr.libsvm") + " --feature-size 40 --oov bucket --input-mode " +
                                  mode + " --model-dir " + dir + " --metrics-json " + dir + ".json"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json m = nlohmann::json::parse(Slurp(dir + ".json"), nullptr, false);
    // One pass of the training data: memory mode's load, stream mode's last epoch (pipeline.oov_ids).
    EXPECT_EQ(m.value("oov_ids", int64_t{-1}), train_oov) << m.dump();
    if (mode == "memory") {
      EXPECT_NE(r.out.find(std::to_string(train_oov) + " ids out of vocabulary (read as their field's OOV row)"),
                std::string::npos) << r.out;
    }
    const std::string ckpt = Checkpoints(dir);  // the vocabulary, then one row per field
    EXPECT_NE(ckpt.find("\"feature_size\":" + std::to_string(kVocab + 4) + ","), std::string::npos);
    EXPECT_NE(ckpt.find("\"oov_buckets\":true"), std::string::npos);

    // predict reads as the model was trained (no flag): unknown ids of a field all read that field's row.
    r = RunCtrain("predict --model-dir " + dir + " --input " + P("te.libsvm") + " -o " + P("p1.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(std::to_string(test_oov) + " ids out of vocabulary"), std::string::npos) << r.out;
    r = RunCtrain("predict --model-dir " + dir + " --input " + P("te2.libsvm") + " -o " + P("p2.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(Slurp(P("p1.txt")), Slurp(P("p2.txt")));
    // ... and not the vocabulary's rows: the same rows with every unknown id replaced by a known one differ.
    std::string known = Slurp(P("te.libsvm"));
    for (int f = 0; f < 4; ++f)
      for (int k = 0; k < 10; ++k) {
        const std::string from = " " + std::to_string(100 + f * 10 + k) + ":", to = " " + std::to_string(f * 10) + ":";
        for (size_t at = known.find(from); at != std::string::npos; at = known.find(from, at + to.size()))
          known.replace(at, from.size(), to);
      }
    Write("te_known.libsvm", known);
    r = RunCtrain("predict --model-dir " + dir + " --input " + P("te_known.libsvm") + " -o " + P("p3.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(Slurp(P("p1.txt")), Slurp(P("p3.txt")));
    // eval too, and --feature-size is the vocabulary there as well.
    r = RunCtrain("eval --model-dir " + dir + " --input " + P("te.libsvm") + " --feature-size 44");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.out.find("--feature-size 44 contradicts the model"), std::string::npos) << r.out;
    r = RunCtrain("eval --model-dir " + dir + " --input " + P("te.libsvm") + " --feature-size 40");
    EXPECT_EQ(r.exit_code, 0) << r.out;
  }
}

// Through the data service: the dataset definition carries oov_buckets to the workers, which read and count;
// the trainer's metrics add up the counts of its splits (the last epoch's, and the run's in data_service).
TEST_F(OovCliTest, BucketThroughTheDataServiceIsCountedByTheWorkers) {
  int64_t train_oov = 0;
  Write("tr.libsvm", Rows(1000, 1, 0.05, 100, &train_oov));
  ASSERT_GT(train_oov, 0);
  fs::create_directories(P("ds"));
  DataServiceCluster c(P("ds"));
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker(), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  const RunResult r = RunCtrainBounded(Train("--train " + P("tr.libsvm") + " --feature-size 40 --oov bucket "
                                             "--data-service " + c.address() + " --data-service-wait-seconds 30 "
                                             "--metrics-json " + P("m.json")));
  ASSERT_EQ(r.exit_code, 0) << r.out << c.Logs();
  const nlohmann::json m = nlohmann::json::parse(Slurp(P("m.json")), nullptr, false);
  EXPECT_EQ(m.value("oov_ids", int64_t{-1}), train_oov) << m.dump();
  EXPECT_EQ(m["data_service"].value("oov_ids", int64_t{-1}), 2 * train_oov) << m.dump();  // both epochs
}

TEST_F(OovCliTest, AWarmStartWithAGrownVocabularyKeepsTheOutOfVocabularyRows) {
  int64_t n = 0;
  Write("day0.libsvm", Rows(1000, 1, 0.05, 100, &n));
  Write("day1.libsvm", Rows(1000, 3, 0.05, 100, &n));
  Write("te.libsvm", Rows(300, 2, 0.3, 100, &n));  // ids < 40 or >= 100: unknown to both vocabularies
  RunResult r = RunCtrain(Train("--train " + P("day0.libsvm") + " --feature-size 40 --oov bucket --model-dir " +
                                P("m0")));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunCtrain("predict --model-dir " + P("m0") + " --input " + P("te.libsvm") + " -o " + P("p0.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Day 1 with 10 more vocabulary ids and a rate that moves nothing: the predictions stay.
  r = RunCtrain(Train("--train " + P("day1.libsvm") + " --feature-size 50 --oov bucket --learning-rate 1e-30 " +
                      "--warm-start-from " + P("m0") + " --model-dir " + P("m1") + " --metrics-json " + P("m1.json"),
                      "log"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json m = nlohmann::json::parse(Slurp(P("m1.json")), nullptr, false);
  EXPECT_EQ(m.value("warm_started", false), true) << m.dump();
  EXPECT_EQ(m.value("restored", true), false) << m.dump();  // a warm start is not a resume
  EXPECT_NE(r.out.find("vocabulary rows [0, 40) and the 4 out-of-vocabulary rows from the checkpoint, rows "
                       "[40, 50) newly initialised"),
            std::string::npos) << r.out;
  r = RunCtrain("predict --model-dir " + P("m1") + " --input " + P("te.libsvm") + " -o " + P("p1.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Slurp(P("p0.txt")), Slurp(P("p1.txt")));
  // A model without OOV rows does not warm-start one with them.
  r = RunCtrain(Train("--train " + P("day1.libsvm") + " --feature-size 50 --warm-start-from " + P("m0") +
                      " --model-dir " + P("m2")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("oov_buckets = true, this run asks for false"), std::string::npos) << r.out;
}

TEST_F(OovCliTest, BucketIsRefusedWhereThereIsNoVocabularyToFallOutOf) {
  int64_t n = 0;
  Write("tr.libsvm", Rows(100, 1, 0.0, 100, &n));
  RunResult r = RunCtrain(Train("--train " + P("tr.libsvm") + " --oov bucket --embedding-table keyed"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--oov bucket: a keyed table"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ctrain::testing
