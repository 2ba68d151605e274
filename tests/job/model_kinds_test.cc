// Every model kind (model::ModelKinds()) through the job layer: it trains on a
// learnable problem, records its kind in the checkpoint, evaluates and predicts
// from it, refuses a resume as another kind and the options of other kinds by
// name.
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "ctrain/job/infer_job.h"
#include "ctrain/job/train_job.h"
#include "ctrain/model/model.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::job {
namespace {

// LibSVM rows with 2 dense fields (values in (0, 1]) and 3 categorical ones; the label follows
// field 2's id and field 0's value, so every kind (DLRM reading fields 0-1 as dense) can learn it.
std::string WriteRows(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream f(path);
  for (int r = 0; r < rows; ++r) {
    const int click = static_cast<int>(rng() % 2);
    const double v0 = click ? 0.8 + 0.2 * (rng() % 100) / 100.0 : 0.1 + 0.2 * (rng() % 100) / 100.0;
    const double v1 = (rng() % 100) / 100.0 + 0.01;
    f << click << " 0:" << v0 << " 1:" << v1 << " " << (2 + click) << ":1";
    for (int j = 3; j < 5; ++j) f << " " << (4 + j * 10 + rng() % 10) << ":1";
    f << "\n";
  }
  return path;
}

TrainJobOptions SmallJob(const std::string& dir, const std::string& kind) {
  TrainJobOptions o;
  o.model = kind;
  o.train = {WriteRows(dir + "/train.libsvm", 2000, 1)};
  o.valid = {WriteRows(dir + "/valid.libsvm", 500, 2)};
  o.data.format = "libsvm";
  o.data.field_size = 5;
  o.data.feature_size = 64;
  o.learning_rate = 0.01f;
  o.train_options.batch_size = 100;
  o.train_options.epochs = 3;
  o.progress = "none";
  o.parallel.intra_op_threads = 1;
  if (kind != "lr" && kind != "fm") {  // the MLP options are refused where no MLP reads them
    o.dropout = 0;
  }
  if (kind == "lr") o.embedding_size = 32;  // left at the default: lr reads no embeddings
  else o.embedding_size = 4;
  if (kind == "deepfm" || kind == "wide_deep" || kind == "dcn" || kind == "dcn_v2" || kind == "xdeepfm")
    o.deep_layers = "8";
  if (kind == "dlrm") o.num_dense_fields = 2;
  return o;
}

class ModelKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelKindTest, TrainsRecordsItsKindAndServesItsCheckpoint) {
  const std::string kind = GetParam();
  const std::string dir = ctrain::testing::TestTempDir("job_model_kinds", kind);
  TrainJobOptions o = SmallJob(dir, kind);
  o.train_options.model_dir = dir + "/model";
  train::TrainResult r;
  const Status st = RunTrain(o, &r);
  ASSERT_TRUE(st.ok()) << kind << ": " << st.ToString();
  EXPECT_EQ(r.steps, 60);
  ASSERT_TRUE(r.evaluated);
  EXPECT_GT(r.eval.auc, 0.9) << kind;
  EXPECT_LT(r.eval.logloss, 0.6) << kind;

  StatusOr<model::ModelConfig> mc = train::ReadCheckpointModelConfig(o.train_options.model_dir);
  ASSERT_TRUE(mc.ok()) << mc.status().ToString();
  EXPECT_EQ(mc->kind, kind);

  InferJobOptions e;
  e.input = o.valid;
  e.model_dir = o.train_options.model_dir;
  e.parallel.intra_op_threads = 1;
  train::EvalResult er;
  ASSERT_TRUE(RunEval(e, &er).ok());
  EXPECT_EQ(er.examples, 500);
  EXPECT_NEAR(er.auc, r.eval.auc, 1e-9) << kind;

  // Resuming the model dir as another kind is refused, naming both kinds.
  const std::string other = kind == "fm" ? "lr" : "fm";
  TrainJobOptions again = SmallJob(dir, other);
  again.train_options.model_dir = o.train_options.model_dir;
  const Status s = RunTrain(again);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.ToString().find("checkpoint model has kind = \"" + kind + "\" (--model " + kind + ")"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("\"" + other + "\""), std::string::npos) << s.ToString();
}

// The tables' start (issue #22): every kind that embeds the numeric fields takes a start of their own for
// their rows (SmallJob's fields 0 and 1 carry ids 0 and 1), which changes what it trains; the checkpoint
// records both initializers; a numeric field with another id is an error naming the example, field and id.
TEST_P(ModelKindTest, StartsTheNumericFieldsRowsTheirOwnWay) {
  const std::string kind = GetParam();
  const std::string dir = ctrain::testing::TestTempDir("job_model_kinds_init", kind);
  if (kind == "dlrm") {  // its numeric fields feed the bottom MLP: no row of theirs is embedded, so none starts
    TrainJobOptions d = SmallJob(dir, kind);
    d.numeric_embedding_initializer = "normal:0.5";
    const Status s = RunTrain(d);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.ToString().find("--numeric-embedding-initializer applies to --model deepfm|lr|fm|wide_deep|dcn|dcn_v2|"
                                "xdeepfm (this run: --model dlrm)"),
              std::string::npos)
        << s.ToString();
    return;
  }
  TrainJobOptions plain = SmallJob(dir, kind);
  plain.embedding_initializer = "normal:1e-4";
  plain.num_dense_fields = 2;
  train::TrainResult r0, r1;
  ASSERT_TRUE(RunTrain(plain, &r0).ok());
  TrainJobOptions o = plain;
  o.numeric_embedding_initializer = "normal:0.5";
  o.train_options.model_dir = dir + "/model";
  const Status st = RunTrain(o, &r1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r1.steps, 60);
  EXPECT_GT(r1.eval.auc, 0.9) << kind;
  EXPECT_NE(r1.eval.logloss, r0.eval.logloss) << kind << ": the numeric rows' start changed nothing";
  StatusOr<model::ModelConfig> mc = train::ReadCheckpointModelConfig(o.train_options.model_dir);
  ASSERT_TRUE(mc.ok()) << mc.status().ToString();
  EXPECT_EQ(mc->embedding_initializer, "normal:1e-4");
  EXPECT_EQ(mc->numeric_embedding_initializer, "normal:0.5");

  TrainJobOptions wrong = o;  // 3 numeric fields: field 2 carries ids 2 and 3 (the label's), not 2 alone
  wrong.num_dense_fields = 3;
  wrong.train_options.model_dir.clear();
  const Status s = RunTrain(wrong);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find(kind + ": num_dense_fields 3: example "), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find(" has id 3 in numeric field 2; a numeric field i must carry the one id i"),
            std::string::npos)
      << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelKindTest, ::testing::ValuesIn(model::ModelKinds()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(ModelOptions, AnOptionOfAnotherModelIsRefusedByName) {
  const std::string dir = ctrain::testing::TestTempDir("job_model_kinds", "refusals");
  TrainJobOptions o = SmallJob(dir, "deepfm");
  o.cross_layers = 2;
  Status s = RunTrain(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("--cross-layers applies to --model dcn|dcn_v2 (this run: --model deepfm)"),
            std::string::npos)
      << s.ToString();

  TrainJobOptions lr = SmallJob(dir, "lr");
  lr.deep_layers = "16";
  s = RunTrain(lr);
  EXPECT_NE(s.ToString().find("--deep-layers applies to --model deepfm|wide_deep|dcn|dcn_v2|xdeepfm (this run: "
                              "--model lr)"),
            std::string::npos)
      << s.ToString();

  // The MLP options need hidden layers to act on.
  TrainJobOptions flat = SmallJob(dir, "deepfm");
  flat.deep_layers = "";
  flat.dropout = 0.5f;  // the default: not given
  flat.batch_norm = true;
  s = RunTrain(flat);
  EXPECT_NE(s.ToString().find("--batch-norm acts on the hidden layers of --deep-layers, which is empty"),
            std::string::npos)
      << s.ToString();

  TrainJobOptions unknown = SmallJob(dir, "deepfm");
  unknown.model = "deep_cross";
  s = RunTrain(unknown);
  EXPECT_NE(s.ToString().find("--model: unknown model 'deep_cross' (models: deepfm, lr, fm, wide_deep"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace ctrain::job
