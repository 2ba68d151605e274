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
#include <vector>

#include "ctrain/io/file.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer_state.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("ctrain_trainer_test", name, /*create=*/false); }

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

// Every epoch end is checkpointed, in memory mode too; the final checkpoint
// is unchanged (ResumeIsExact compares it).
TEST(Trainer, CheckpointsAtEveryEpochEnd) {
  TrainOptions o = SmallOptions();
  o.epochs = 3;
  o.model_dir = TempDir("epoch_ckpt");
  RunTraining(o, nullptr);
  for (int e = 1; e <= 3; ++e) {
    StatusOr<Checkpoint> ck = LoadCheckpoint(o.model_dir + "/ckpt-" + std::to_string(47 * e) + ".bin");
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    EXPECT_EQ(ck->meta["epoch"], e);
    EXPECT_EQ(ck->meta["batch_in_epoch"], 0);
  }
}

// A step that is both an eval_every_steps step and the last one is evaluated once.
TEST(Trainer, EvaluatesAStepOnce) {
  TrainOptions o = SmallOptions();
  o.max_steps = 20;
  o.eval_every_steps = 10;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  std::vector<std::string> lines;
  (*t)->set_log_sink([&](const std::string& l) { lines.push_back(l); });
  TrainResult r;
  ASSERT_TRUE((*t)->Train(Train(), &Valid(), &r).ok());
  int at10 = 0, at20 = 0;
  for (const std::string& l : lines) {
    at10 += l.find("step 10: valid auc") != std::string::npos;
    at20 += l.find("step 20: valid auc") != std::string::npos;
  }
  EXPECT_EQ(at10, 1);
  EXPECT_EQ(at20, 1);
}

// Float config values in the mismatch error are printed with %g.
TEST(Trainer, MismatchErrorPrintsFloatsShort) {
  TrainOptions o = SmallOptions();
  o.model.dropout = 0.5f;
  o.max_steps = 1;
  o.model_dir = TempDir("dropout");
  RunTraining(o, nullptr);
  o.model.dropout = 0.1f;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  bool restored;
  Status st = (*t)->Restore(&restored);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("dropout = 0.5, this run asks for 0.1 ("), std::string::npos) << st.ToString();
}

std::string RunCli(const std::string& cmd, const std::string& dir, int* rc) {
  *rc = std::system((cmd + " 2>" + dir + "/err.txt").c_str());
  StatusOr<std::string> s = io::ReadFileToString(dir + "/err.txt");
  return s.ok() ? *s : std::string();
}

// Writes rows [0, n) of `d` as LibSVM with ids + id_base.
void WriteLibSvm(const Dataset& d, int64_t n, int id_base, const std::string& path) {
  std::string text;
  char buf[64];
  const int F = d.field_size();
  for (int64_t r = 0; r < n; ++r) {
    text += d.labels()[r] > 0.5f ? "1" : "0";
    for (int f = 0; f < F; ++f) {
      std::snprintf(buf, sizeof buf, " %lld:%.9g", static_cast<long long>(d.ids()[r * F + f] + id_base),
                    d.values()[r * F + f]);
      text += buf;
    }
    text += '\n';
  }
  ASSERT_TRUE(io::WriteStringToFileAtomic(path, text).ok());
}

// eval/predict default to the training run's data options (checkpoint meta
// "data"); a contradicting --field-size is an error; the training-only thread
// flags are refused; outputs are checked before any work.
TEST(Trainer, CliInferUsesCheckpointDataOptions) {
  const std::string bin = CTRAIN_BINARY;
  if (::access(bin.c_str(), X_OK) != 0) GTEST_SKIP() << "ctrain binary not built at " << bin;
  const std::string dir = TempDir("cli_data");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string data = dir + "/one_based.libsvm";
  WriteLibSvm(Train(), 600, 1, data);
  int rc = 0;
  std::string err = RunCli(bin + " train --train " + data + " --format libsvm --id-base 1 --feature-size 2000 " +
                               "--embedding-size 4 --deep-layers 8,8 --batch-size 50 --epochs 2 --learning-rate 0.01 "
                               "--intra-op-parallelism-threads 1 --progress none --model-dir " + dir + "/m",
                           dir, &rc);
  ASSERT_EQ(rc, 0) << err;
  StatusOr<Checkpoint> ck = LoadLatestCheckpoint(dir + "/m");
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck->meta["data"]["id_base"], 1) << ck->meta.dump();
  EXPECT_EQ(ck->meta["data"]["format"], "libsvm");
  EXPECT_EQ(ck->meta["data"]["field_size"], 39);
  // Epoch ends are checkpointed: 12 and 24.
  EXPECT_EQ(::access((dir + "/m/ckpt-12.bin").c_str(), F_OK), 0);
  // Without --id-base: the recorded id base, the same metrics as with it.
  const std::string eval = bin + " eval --model-dir " + dir + "/m --input " + data;
  err = RunCli(eval + " --metrics-json " + dir + "/implicit.json > /dev/null", dir, &rc);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(err.find("--id-base 1"), std::string::npos) << err;
  err = RunCli(eval + " --id-base 1 --format libsvm --metrics-json " + dir + "/explicit.json > /dev/null", dir, &rc);
  ASSERT_EQ(rc, 0) << err;
  const std::string implicit = *io::ReadFileToString(dir + "/implicit.json");
  EXPECT_EQ(implicit, *io::ReadFileToString(dir + "/explicit.json"));
  EXPECT_NE(implicit.find("\"examples\": 600"), std::string::npos) << implicit;
  // The model's field_size is fixed.
  err = RunCli(eval + " --field-size 38 > /dev/null", dir, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("--field-size 38 contradicts the model"), std::string::npos) << err;
  // Training-only flags are refused, not ignored.
  for (const char* flag : {"--towers 2", "--hogwild 2", "--affinity true", "--autotune"}) {
    err = RunCli(bin + " predict --model-dir " + dir + "/m --input " + data + " -o " + dir + "/p.txt " + flag, dir, &rc);
    EXPECT_NE(rc, 0) << flag;
    EXPECT_NE(err.find(std::string(flag).substr(0, std::string(flag).find(' ')) + " is a training flag"),
              std::string::npos)
        << err;
  }
  // Unwritable outputs fail before any work, naming the path the user gave.
  const std::string bad = dir + "/no_such_dir/out";
  err = RunCli(bin + " predict --model-dir " + dir + "/m --input " + data + " -o " + bad, dir, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find(bad + ": --output"), std::string::npos) << err;
  EXPECT_EQ(err.find(".tmp."), std::string::npos) << err;
  EXPECT_EQ(err.find("ctrain: input:"), std::string::npos) << "input was read before the check: " << err;
  err = RunCli(bin + " train --train " + data + " --format libsvm --id-base 1 --feature-size 2000 --embedding-size 4 "
                     "--deep-layers 8 --progress none --model-dir " + dir + "/m2 --metrics-json " + bad,
               dir, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find(bad + ": --metrics-json"), std::string::npos) << err;
  EXPECT_EQ(err.find(".tmp."), std::string::npos) << err;
  EXPECT_NE(::access((dir + "/m2/checkpoint").c_str(), F_OK), 0) << "trained before failing: " << err;
  // A finished job run again says so.
  err = RunCli(bin + " train --train " + data + " --format libsvm --id-base 1 --feature-size 2000 " +
                   "--embedding-size 4 --deep-layers 8,8 --batch-size 50 --epochs 2 --learning-rate 0.01 "
                   "--intra-op-parallelism-threads 1 --progress none --model-dir " + dir + "/m",
               dir, &rc);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_NE(err.find("nothing to do: already at step 24"), std::string::npos) << err;
  // Stopped inside the first stream epoch: no made-up fraction.
  err = RunCli(bin + " train --train " + data + " --format libsvm --id-base 1 --feature-size 2000 " +
                   "--embedding-size 4 --deep-layers 8 --batch-size 50 --max-steps 3 --progress none",
               dir, &rc);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_NE(err.find("150 examples (0 epochs completed; epoch size unknown until the first epoch ends)"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace ctrain::train
