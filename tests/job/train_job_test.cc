// The job layer without the CLI: what the Python package and the launcher call.
#include "ctrain/job/train_job.h"

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "ctrain/job/finished_run.h"
#include "ctrain/job/infer_job.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/explicit_options.h"
#include "testing/temp_dir.h"

namespace ctrain::job {
namespace {

// LibSVM rows whose label follows feature 0's value: a model must learn it.
std::string WriteSeparable(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream f(path);
  for (int r = 0; r < rows; ++r) {
    const int click = rng() % 2;
    f << click << " " << click << ":1";  // field 0: id 0 or 1, the label's
    for (int j = 1; j < 4; ++j) f << " " << (2 + j * 10 + rng() % 10) << ":1";
    f << "\n";
  }
  return path;
}

TrainJobOptions SmallJob(const std::string& dir) {
  TrainJobOptions o;
  o.train = {WriteSeparable(dir + "/train.libsvm", 2000, 1)};
  o.valid = {WriteSeparable(dir + "/valid.libsvm", 500, 2)};
  o.data.format = "libsvm";
  o.data.field_size = 4;
  o.data.feature_size = 64;
  o.embedding_size = 4;
  o.deep_layers = "8";
  o.dropout = 0;
  o.learning_rate = 0.01f;
  o.train_options.batch_size = 100;
  o.train_options.epochs = 3;
  o.progress = "none";
  o.parallel.intra_op_threads = 1;
  return o;
}

TEST(TrainJob, TrainsResumesAndEvaluatesLikeTheCli) {
  const std::string dir = ctrain::testing::TestTempDir("job", "train");
  TrainJobOptions o = SmallJob(dir);
  o.train_options.model_dir = dir + "/model";
  o.metrics_json = dir + "/metrics.json";
  train::TrainResult r;
  ASSERT_TRUE(RunTrain(o, &r).ok());
  EXPECT_EQ(r.steps, 60);  // 3 epochs x 2000 / 100
  ASSERT_TRUE(r.evaluated);
  EXPECT_GT(r.eval.auc, 0.99);
  std::ifstream mj(o.metrics_json);
  EXPECT_TRUE(mj.good());

  // A second run on the same model dir resumes: nothing left to do.
  TrainJobOptions again = SmallJob(dir);
  again.train_options.model_dir = o.train_options.model_dir;
  train::TrainResult r2;
  ASSERT_TRUE(RunTrain(again, &r2).ok());
  EXPECT_TRUE(r2.restored);
  EXPECT_EQ(r2.steps_this_run, 0);

  // eval on the validation file gives the trainer's final validation AUC.
  InferJobOptions e;
  e.input = o.valid;
  e.model_dir = o.train_options.model_dir;
  e.parallel.intra_op_threads = 1;
  train::EvalResult er;
  ASSERT_TRUE(RunEval(e, &er).ok());
  EXPECT_EQ(er.examples, 500);
  EXPECT_NEAR(er.auc, r.eval.auc, 1e-9);

  // predict writes one probability per record.
  e.output = dir + "/pred.txt";
  ASSERT_TRUE(RunPredict(e).ok());
  std::ifstream pf(e.output);
  int lines = 0;
  for (std::string line; std::getline(pf, line);) ++lines;
  EXPECT_EQ(lines, 500);
}

TEST(TrainJob, OptionErrorsNameTheFlag) {
  const std::string dir = ctrain::testing::TestTempDir("job", "errors");
  TrainJobOptions o = SmallJob(dir);
  o.mixed_precision = "f16";
  Status s = RunTrain(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("--mixed-precision"), std::string::npos) << s.ToString();

  TrainJobOptions f = SmallJob(dir);
  f.data.field_size = 0;
  s = RunTrain(f);
  EXPECT_NE(s.ToString().find("--field-size must be in [1,"), std::string::npos) << s.ToString();
}

TEST(InferJob, AnExplicitFieldSizeMustAgreeWithTheModel) {
  const std::string dir = ctrain::testing::TestTempDir("job", "infer");
  TrainJobOptions o = SmallJob(dir);
  o.train_options.model_dir = dir + "/model";
  o.train_options.epochs = 1;
  ASSERT_TRUE(RunTrain(o).ok());
  InferJobOptions e;
  e.input = o.valid;
  e.model_dir = o.train_options.model_dir;
  e.data.field_size = 5;  // not given: the model's 4 is used
  EXPECT_TRUE(RunEval(e).ok());
  EXPECT_EQ(e.data.field_size, 4);  // the options now say what was used
  e.data.field_size = 5;
  e.given.Add("field_size");  // given: a contradiction, named
  Status s = RunEval(e);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("--field-size 5 contradicts the model"), std::string::npos) << s.ToString();
}

TEST(ExplicitOptions, FlagNames) {
  EXPECT_EQ(FlagName("intra_op_parallelism_threads"), "--intra-op-parallelism-threads");
  ExplicitOptions g;
  g.Add("num_shards");
  EXPECT_TRUE(g.Has("num_shards"));
  EXPECT_FALSE(g.Has("shard_index"));
}

}  // namespace
// The options every mpirun rank must agree on (docs/distributed.md#failure-behaviour): all 49
// names of the list in train_option_schema.cc are options of the table (a misspelt one would
// silently not be compared), and no per-rank option is among them.
TEST(TrainOptionSchema, TheOptionsEveryRankMustAgreeOnAreInTheTable) {
  int n = 0;
  for (const OptionSpec& s : TrainOptionSchema()) n += s.same_on_every_rank ? 1 : 0;
  EXPECT_EQ(n, 49);
  for (const char* per_rank : {"train", "valid", "model_dir", "metrics_json", "monitor_dir", "shard_index",
                               "num_shards", "consumer_index", "seed", "intra_op_parallelism_threads", "cache"})
    EXPECT_FALSE(FindTrainOption(per_rank)->same_on_every_rank) << per_rank;
  EXPECT_TRUE(FindTrainOption("feature_size")->same_on_every_rank);
  EXPECT_TRUE(FindTrainOption("learning_rate")->same_on_every_rank);
  EXPECT_TRUE(FindTrainOption("model")->same_on_every_rank);
  EXPECT_TRUE(FindTrainOption("min_count")->same_on_every_rank);  // each rank's keyed index admits alike
}

// A finished run records the settings that decide its model (job/finished_run.h): every option every rank
// agrees on, and the per-rank ones that still change the result; never paths of outputs or thread counts.
TEST(TrainOptionSchema, TheSettingsARunRecordsDecideItsModel) {
  for (const OptionSpec& s : TrainOptionSchema()) {
    if (s.same_on_every_rank) {
      EXPECT_TRUE(s.defines_result) << s.name;
    }
  }
  for (const char* result : {"seed", "shuffle", "warm_start_from", "early_stopping_metric", "learning_rate"})
    EXPECT_TRUE(FindTrainOption(result)->defines_result) << result;
  for (const char* not_result : {"train", "model_dir", "metrics_json", "intra_op_parallelism_threads", "force",
                                 "progress", "monitor_dir"})
    EXPECT_FALSE(FindTrainOption(not_result)->defines_result) << not_result;
  TrainJobOptions a, b;
  b.learning_rate = 0.01f;
  EXPECT_NE(ResultTrainOptions(a), ResultTrainOptions(b));
  b = a;
  b.train_options.seed = 7;
  EXPECT_NE(ResultTrainOptions(a), ResultTrainOptions(b));
  EXPECT_EQ(AgreedTrainOptions(a), AgreedTrainOptions(b));  // the seed is per rank
  b = a;
  b.progress = "none";
  b.train_options.model_dir = "elsewhere";
  EXPECT_EQ(ResultTrainOptions(a), ResultTrainOptions(b));
  EXPECT_EQ(ResultTrainOptions(a)["learning_rate"], 0.0005);
}

// With --data-service, --train names the data hosts' files (case B51: a heterogeneous job's trainer
// group has no train channel): the trainer neither fingerprints nor needs them.
TEST(RunRecord, DataServiceInputsAreTheDataHostsNotFingerprintedHere) {
  TrainJobOptions job;
  job.train = {"/nonexistent/opt/ml/input/data/train"};
  EXPECT_EQ(RunRecord(job).status().code(), StatusCode::kNotFound);  // a local input must exist
  job.data_service.address = "127.0.0.1:5050";
  StatusOr<nlohmann::json> r = RunRecord(job);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->is_null());  // such a run always trains
}

}  // namespace ctrain::job
