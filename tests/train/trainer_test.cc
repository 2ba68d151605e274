// Trainer: small synthetic runs — learning, determinism, exact resume, towers,
// NaN detection, and the CLI train/eval/predict round trip.
#include "ctrain/train/trainer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ctrain/io/file.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer_state.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/ctrain_trainer_test_" + std::to_string(::getpid()) + "_" + name;
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

TrainOptions SmallOptions() {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 16};
  o.model.dropout = 0.0f;
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.01f;
  o.batch_size = 64;
  o.epochs = 1;
  o.seed = 7;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

const Dataset& Train() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 3000, 2000));
  return *d;
}
const Dataset& Valid() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 3000, 1000, 2000));
  return *d;
}

// All tensors of the latest checkpoint in `dir`.
Checkpoint Latest(const std::string& dir) {
  StatusOr<Checkpoint> ck = LoadLatestCheckpoint(dir);
  EXPECT_TRUE(ck.ok()) << ck.status().ToString();
  return ck.ok() ? *ck : Checkpoint();
}

void ExpectSameTensors(const Checkpoint& a, const Checkpoint& b, double tol) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const NamedTensor& x = a.tensors[i];
    const NamedTensor* y = b.Find(x.name);
    ASSERT_NE(y, nullptr) << x.name;
    ASSERT_EQ(x.f32.size(), y->f32.size()) << x.name;
    if (tol == 0) {
      EXPECT_EQ(0, std::memcmp(x.f32.data(), y->f32.data(), x.f32.size() * sizeof(float))) << x.name;
    } else {
      double max_diff = 0;
      for (size_t e = 0; e < x.f32.size(); ++e) max_diff = std::max(max_diff, double(std::fabs(x.f32[e] - y->f32[e])));
      EXPECT_LE(max_diff, tol) << x.name;
    }
  }
}

TrainResult RunTraining(const TrainOptions& o, const Dataset* valid = &Valid()) {
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  bool restored = false;
  EXPECT_TRUE((*t)->Restore(&restored).ok());
  TrainResult r;
  Status st = (*t)->Train(Train(), valid, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return r;
}

TEST(Trainer, LossDecreasesAndAucBeatsChance) {
  TrainOptions o = SmallOptions();
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  StatusOr<EvalResult> before = (*t)->Evaluate(Valid());
  ASSERT_TRUE(before.ok());
  o.epochs = 3;
  TrainResult r;
  TrainOptions o3 = o;
  auto t3 = Trainer::Create(o3);
  ASSERT_TRUE(t3.ok());
  ASSERT_TRUE((*t3)->Train(Train(), &Valid(), &r).ok());
  EXPECT_EQ(r.steps, 3 * 47);  // ceil(3000 / 64) = 47 steps per epoch, last batch partial
  EXPECT_EQ(r.examples, 9000);
  EXPECT_DOUBLE_EQ(r.epochs, 3.0);
  ASSERT_TRUE(r.evaluated);
  EXPECT_LT(r.eval.logloss, before->logloss);
  EXPECT_GT(r.eval.auc, 0.70) << "before training: " << before->auc;
  EXPECT_EQ(r.eval.examples, 1000);
}

TEST(Trainer, SameSeedGivesIdenticalCheckpoints) {
  TrainOptions o = SmallOptions();
  o.model.dropout = 0.3f;
  o.parallel.intra_op_threads = 2;
  const std::string dir_a = TempDir("det_a"), dir_b = TempDir("det_b");
  o.model_dir = dir_a;
  RunTraining(o);
  o.model_dir = dir_b;
  RunTraining(o);
  StatusOr<std::string> pa = LatestCheckpointPath(dir_a);
  StatusOr<std::string> pb = LatestCheckpointPath(dir_b);
  ASSERT_TRUE(pa.ok() && pb.ok());
  StatusOr<std::string> ba = io::ReadFileToString(*pa), bb = io::ReadFileToString(*pb);
  ASSERT_TRUE(ba.ok() && bb.ok());
  EXPECT_GT(ba->size(), 2000u * 4 * 4);
  EXPECT_TRUE(*ba == *bb) << "checkpoint bytes differ between two identical runs";
}

TEST(Trainer, ResumeIsExact) {
  TrainOptions o = SmallOptions();
  o.model.dropout = 0.2f;
  o.save_checkpoints_steps = 30;  // also mid-epoch checkpoints
  // Straight: 5 epochs.
  o.epochs = 5;
  const std::string straight_dir = TempDir("straight");
  o.model_dir = straight_dir;
  TrainResult straight = RunTraining(o);
  // Interrupted: 2 epochs, then a new process-equivalent Trainer runs to 5.
  o.model_dir = TempDir("resumed");
  o.epochs = 2;
  RunTraining(o);
  o.epochs = 5;
  TrainResult resumed = RunTraining(o);
  EXPECT_TRUE(resumed.restored);
  EXPECT_EQ(resumed.steps, straight.steps);
  EXPECT_EQ(resumed.examples, straight.examples);
  EXPECT_EQ(resumed.steps_this_run, 3 * 47);
  ExpectSameTensors(Latest(straight_dir), Latest(o.model_dir), 0);
  EXPECT_EQ(resumed.eval.auc, straight.eval.auc);
}

TEST(Trainer, ResumeMidEpochWithMaxSteps) {
  TrainOptions o = SmallOptions();
  o.epochs = 2;
  o.model_dir = TempDir("mid_straight");
  RunTraining(o);
  const std::string straight_dir = o.model_dir;
  o.model_dir = TempDir("mid_resumed");
  o.max_steps = 20;  // stops inside epoch 1
  TrainResult first = RunTraining(o);
  EXPECT_EQ(first.steps, 20);
  o.max_steps = 0;
  RunTraining(o);
  ExpectSameTensors(Latest(straight_dir), Latest(o.model_dir), 0);
}

TEST(Trainer, TowersMatchSingleReplicaUpToSummationOrder) {
  TrainOptions o = SmallOptions();
  o.model_dir = TempDir("t1");
  RunTraining(o);
  const std::string one = o.model_dir;
  o.parallel.towers = 2;
  o.model_dir = TempDir("t2");
  RunTraining(o);
  ExpectSameTensors(Latest(one), Latest(o.model_dir), 2e-3);
  // And towers are deterministic themselves.
  const std::string two = o.model_dir;
  o.model_dir = TempDir("t2b");
  RunTraining(o);
  ExpectSameTensors(Latest(two), Latest(o.model_dir), 0);
}

TEST(Trainer, HogwildTrains) {
  TrainOptions o = SmallOptions();
  o.parallel.hogwild = 2;
  o.epochs = 2;
  TrainResult r = RunTraining(o);
  EXPECT_EQ(r.steps, 2 * 47);
  EXPECT_EQ(r.examples, 6000);
  EXPECT_GT(r.eval.auc, 0.65);
}

TEST(Trainer, NonFiniteLossNamesStepAndTerm) {
  TrainOptions o = SmallOptions();
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = 1e30f;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  TrainResult r;
  Status st = (*t)->Train(Train(), nullptr, &r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("step "), std::string::npos) << msg;
  EXPECT_NE(msg.find("loss is not finite (term: logloss"), std::string::npos) << msg;
}

TEST(Trainer, RejectsMismatchedModelOnResume) {
  TrainOptions o = SmallOptions();
  o.max_steps = 3;
  o.model_dir = TempDir("mismatch");
  RunTraining(o, nullptr);
  o.model.embedding_size = 8;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  bool restored;
  Status st = (*t)->Restore(&restored);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(std::string(st.message()).find("embedding_size"), std::string::npos) << st.ToString();
}

TEST(Trainer, CliTrainEvalPredictRoundTrip) {
  const std::string bin = CTRAIN_BINARY;
  if (::access(bin.c_str(), X_OK) != 0) GTEST_SKIP() << "ctrain binary not built at " << bin;
  const std::string dir = TempDir("cli");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string data = dir + "/d.libsvm";
  std::string cmd = bin + " synth --rows 600 --format libsvm --feature-size 500 --seed 3 -o " + data + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  // A TOML config with underscore keys; the command line overrides epochs.
  ASSERT_TRUE(io::WriteStringToFileAtomic(dir + "/c.toml",
                                          "feature_size = 500\nembedding_size = 4\ndeep_layers = [8, 8]\n"
                                          "batch_size = 50\nepochs = 9\nlearning_rate = 0.01\nintra_op_parallelism_threads = 1\n")
                  .ok());
  cmd = bin + " train --config " + dir + "/c.toml --epochs 2 --train " + data + " --valid " + data +
        " --model-dir " + dir + "/m --metrics-json " + dir + "/train.json --progress none 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  StatusOr<std::string> tj = io::ReadFileToString(dir + "/train.json");
  ASSERT_TRUE(tj.ok());
  EXPECT_NE(tj->find("\"steps\": 24"), std::string::npos) << *tj;  // 2 epochs x 12 batches
  EXPECT_NE(tj->find("\"examples\": 1200"), std::string::npos) << *tj;
  cmd = bin + " eval --model-dir " + dir + "/m --input " + data + " --metrics-json " + dir + "/eval.json > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  cmd = bin + " predict --model-dir " + dir + "/m --input " + data + " --output " + dir + "/p.txt 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  StatusOr<std::string> p = io::ReadFileToString(dir + "/p.txt");
  ASSERT_TRUE(p.ok());
  int lines = 0;
  for (char c : *p) lines += c == '\n';
  EXPECT_EQ(lines, 600);
  // eval's auc equals train's final validation auc (same data, same model).
  StatusOr<std::string> ej = io::ReadFileToString(dir + "/eval.json");
  ASSERT_TRUE(ej.ok());
  auto field = [](const std::string& j, const std::string& k) {
    size_t at = j.find("\"" + k + "\": ");
    return at == std::string::npos ? std::string("?") : j.substr(at + k.size() + 4, 12);
  };
  EXPECT_EQ(field(*tj, "auc"), field(*ej, "auc"));
  // An unknown config key is an error naming it.
  ASSERT_TRUE(io::WriteStringToFileAtomic(dir + "/bad.json", "{\"no_such_flag\": 1}").ok());
  cmd = bin + " train --config " + dir + "/bad.json --max-steps 1 2>" + dir + "/err.txt";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  StatusOr<std::string> err = io::ReadFileToString(dir + "/err.txt");
  ASSERT_TRUE(err.ok());
  EXPECT_NE(err->find("no_such_flag"), std::string::npos) << *err;
}

}  // namespace
}  // namespace ctrain::train
