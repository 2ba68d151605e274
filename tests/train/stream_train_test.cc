// Trainer in stream mode (TrainStream through data::Pipeline): same results as
// memory mode on the same rows, exact resume, input-wait measurement, and the
// CLI reading stdin.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/io/file.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("ctrain_stream_test", name); }

TrainOptions SmallOptions() {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 16};
  o.model.dropout = 0.0f;
  o.optimizer.learning_rate = 0.01f;
  o.batch_size = 64;
  o.seed = 7;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

// 1000 synthetic rows written as LibSVM (0-based ids, %.9g values: the floats
// read back bit-exact), and the same rows in memory.
struct Data {
  Dataset rows;
  std::string path;
};
const Data& TrainData() {
  static const Data* d = [] {
    auto* out = new Data{*MakeSynthDataset(11, 0, 1000, 2000), TempDir("data") + "/train.libsvm"};
    std::string text;
    char buf[64];
    const int F = out->rows.field_size();
    for (int64_t r = 0; r < out->rows.size(); ++r) {
      text += out->rows.labels()[r] > 0.5f ? "1" : "0";
      for (int f = 0; f < F; ++f) {
        std::snprintf(buf, sizeof buf, " %lld:%.9g", static_cast<long long>(out->rows.ids()[r * F + f]),
                      out->rows.values()[r * F + f]);
        text += buf;
      }
      text += '\n';
    }
    EXPECT_TRUE(io::WriteStringToFileAtomic(out->path, text).ok());
    return out;
  }();
  return *d;
}
const Dataset& Valid() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 1000, 500, 2000));
  return *d;
}

StreamInput Input(int64_t shuffle_buffer) {
  StreamInput in;
  in.files = {TrainData().path};
  in.reader.format = data::RecordFormat::kLibSvm;
  in.reader.field_size = 39;
  in.reader.feature_size = 2000;
  in.pipeline.shuffle_buffer_size = shuffle_buffer;
  in.pipeline.print_warnings = false;
  return in;
}

TrainResult RunStream(const TrainOptions& o, const StreamInput& in, Status* status = nullptr) {
  auto t = Trainer::Create(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  bool restored = false;
  EXPECT_TRUE((*t)->Restore(&restored).ok());
  TrainResult r;
  Status st = (*t)->TrainStream(in, &Valid(), &r);
  if (status != nullptr) *status = st;
  else EXPECT_TRUE(st.ok()) << st.ToString();
  return r;
}

void ExpectSameTensors(const std::string& a_dir, const std::string& b_dir) {
  StatusOr<Checkpoint> a = LoadLatestCheckpoint(a_dir), b = LoadLatestCheckpoint(b_dir);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const NamedTensor& x : a->tensors) {
    const NamedTensor* y = b->Find(x.name);
    ASSERT_NE(y, nullptr) << x.name;
    ASSERT_EQ(x.f32.size(), y->f32.size()) << x.name;
    EXPECT_EQ(0, std::memcmp(x.f32.data(), y->f32.data(), x.f32.size() * sizeof(float))) << x.name;
  }
}

TEST(StreamTrain, UnshuffledStreamEqualsMemoryModeExactly) {
  TrainOptions o = SmallOptions();
  o.shuffle = false;
  o.epochs = 2;
  const std::string mem_dir = TempDir("mem");
  o.model_dir = mem_dir;
  auto tm = Trainer::Create(o);
  ASSERT_TRUE(tm.ok());
  TrainResult mem;
  ASSERT_TRUE((*tm)->Train(TrainData().rows, &Valid(), &mem).ok());
  o.model_dir = TempDir("stream");
  TrainResult st = RunStream(o, Input(0));
  EXPECT_TRUE(st.streamed);
  EXPECT_EQ(st.steps, 32);  // 2 epochs x ceil(1000 / 64)
  EXPECT_EQ(st.steps, mem.steps);
  EXPECT_EQ(st.examples, 2000);
  EXPECT_EQ(st.examples, mem.examples);
  EXPECT_DOUBLE_EQ(st.epochs, 2.0);
  EXPECT_EQ(st.eval.auc, mem.eval.auc);
  EXPECT_EQ(st.eval.logloss, mem.eval.logloss);
  ExpectSameTensors(mem_dir, o.model_dir);
}

TEST(StreamTrain, ShuffledStreamReachesMemoryModeMetrics) {
  TrainOptions o = SmallOptions();
  o.epochs = 3;
  auto tm = Trainer::Create(o);
  ASSERT_TRUE(tm.ok());
  TrainResult mem;
  ASSERT_TRUE((*tm)->Train(TrainData().rows, &Valid(), &mem).ok());
  TrainResult st = RunStream(o, Input(1000));
  EXPECT_EQ(st.steps, mem.steps);
  EXPECT_EQ(st.examples, mem.examples);
  EXPECT_GT(st.eval.auc, 0.6);
  EXPECT_NEAR(st.eval.auc, mem.eval.auc, 0.03);
  EXPECT_NEAR(st.eval.logloss, mem.eval.logloss, 0.03);
  // Measurement: a fraction in [0, 1], stats of the last epoch's pipeline.
  EXPECT_GE(st.input_wait_fraction, 0.0);
  EXPECT_LE(st.input_wait_fraction, 1.0);
  EXPECT_GT(st.compute_seconds, 0.0);
  EXPECT_EQ(st.pipeline.records, 1000u);
  EXPECT_EQ(st.pipeline.batches, 16u);
  EXPECT_FALSE(st.pipeline.queues.empty());
}

// 2 epochs, then 3 more in a second run == 5 straight, bit for bit; the same
// for a stop mid-epoch (max_steps) and with a memory cache.
TEST(StreamTrain, ResumeIsExact) {
  for (const char* cache : {"", "memory"}) {
    SCOPED_TRACE(std::string("cache=") + cache);
    StreamInput in = Input(300);
    in.pipeline.cache = cache;
    TrainOptions o = SmallOptions();
    o.epochs = 5;
    o.model_dir = TempDir(std::string("straight") + cache);
    TrainResult straight = RunStream(o, in);
    EXPECT_EQ(straight.steps, 80);

    TrainOptions a = o;
    a.model_dir = TempDir(std::string("resumed") + cache);
    a.epochs = 2;
    EXPECT_EQ(RunStream(a, in).steps, 32);
    a.max_steps = 41;  // stops mid-epoch 3
    a.epochs = 5;
    EXPECT_EQ(RunStream(a, in).steps, 41);
    a.max_steps = 0;
    TrainResult resumed = RunStream(a, in);
    EXPECT_TRUE(resumed.restored);
    EXPECT_EQ(resumed.steps, 80);
    EXPECT_EQ(resumed.examples, 5000);
    EXPECT_EQ(resumed.eval.auc, straight.eval.auc);
    ExpectSameTensors(o.model_dir, a.model_dir);
  }
}

TEST(StreamTrain, StdinWithSeveralEpochsNeedsACache) {
  StreamInput in = Input(0);
  in.files = {"-"};
  TrainOptions o = SmallOptions();
  o.epochs = 2;
  Status st;
  RunStream(o, in, &st);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("stdin can be read once"), std::string::npos) << st.ToString();
}

void Shell(const std::string& cmd) { EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd; }

nlohmann::json ReadJson(const std::string& path) {
  StatusOr<std::string> s = io::ReadFileToString(path);
  EXPECT_TRUE(s.ok()) << path;
  return s.ok() ? nlohmann::json::parse(*s) : nlohmann::json();
}

TEST(StreamTrain, CliStdinMatchesFileAndReportsInputWait) {
  const std::string bin = CTRAIN_BINARY;
  if (::access(bin.c_str(), X_OK) != 0) GTEST_SKIP() << "ctrain binary not built at " << bin;
  const std::string dir = TempDir("cli");
  const std::string data = dir + "/d.libsvm";
  Shell(bin + " synth --rows 700 --format libsvm --feature-size 500 --seed 3 -o " + data + " 2>/dev/null");
  const std::string flags = " --format libsvm --feature-size 500 --embedding-size 4 --deep-layers 8,8 "
                            "--batch-size 64 --intra-op-parallelism-threads 1 --progress none";
  Shell(bin + " train --train " + data + flags + " --metrics-json " + dir + "/file.json 2>/dev/null");
  Shell("cat " + data + " | " + bin + " train --train -" + flags + " --metrics-json " + dir + "/stdin.json 2>/dev/null");
  const nlohmann::json f = ReadJson(dir + "/file.json"), s = ReadJson(dir + "/stdin.json");
  EXPECT_EQ(f["input_mode"], "stream");
  EXPECT_EQ(f["steps"], 11);  // ceil(700 / 64)
  EXPECT_EQ(f["examples"], 700);
  EXPECT_EQ(s["steps"], f["steps"]);
  EXPECT_EQ(s["examples"], f["examples"]);
  for (const nlohmann::json* j : {&f, &s}) {
    const double w = (*j)["input_wait_fraction"].get<double>();
    EXPECT_GE(w, 0.0);
    EXPECT_LE(w, 1.0);
    ASSERT_TRUE((*j)["pipeline"].is_object()) << j->dump();
    EXPECT_EQ((*j)["pipeline"]["records"], 700);
    EXPECT_TRUE((*j)["pipeline"]["queues"].is_array());
    EXPECT_GT((*j)["pipeline_records_per_sec"].get<double>(), 0.0);
  }
  // Memory mode over the same file: same counts, no pipeline block.
  Shell(bin + " train --input-mode memory --train " + data + flags + " --metrics-json " + dir + "/mem.json 2>/dev/null");
  const nlohmann::json m = ReadJson(dir + "/mem.json");
  EXPECT_EQ(m["input_mode"], "memory");
  EXPECT_EQ(m["steps"], f["steps"]);
  EXPECT_EQ(m["input_wait_fraction"], 0.0);
  EXPECT_FALSE(m.contains("pipeline"));
}

// A resume must read the same training inputs as the checkpoint (memory mode
// checks the row count): a different file, an added file or a file whose size
// changed is refused with FailedPrecondition naming what changed.
TEST(StreamTrain, ResumeRefusesDifferentInputs) {
  const std::string dir = TempDir("inputs");
  TrainOptions o = SmallOptions();
  o.epochs = 1;
  o.model_dir = dir + "/m";
  RunStream(o, Input(0));
  // The checkpoint records the expanded inputs with their sizes.
  StatusOr<Checkpoint> ck = LoadLatestCheckpoint(o.model_dir);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  ASSERT_TRUE(ck->meta.contains("train_inputs")) << ck->meta.dump();
  const nlohmann::json& files = ck->meta["train_inputs"]["files"];
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0]["bytes"].get<int64_t>(), static_cast<int64_t>(io::ReadFileToString(TrainData().path)->size()));

  o.epochs = 2;
  // A different file (the first 500 rows).
  const std::string text = *io::ReadFileToString(TrainData().path);
  size_t cut = 0;
  for (int i = 0; i < 500; ++i) cut = text.find('\n', cut) + 1;
  const std::string half = dir + "/half.libsvm";
  ASSERT_TRUE(io::WriteStringToFileAtomic(half, text.substr(0, cut)).ok());
  StreamInput other = Input(0);
  other.files = {half};
  Status st;
  RunStream(o, other, &st);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("training inputs differ"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("half.libsvm"), std::string::npos) << st.ToString();
  // An added file.
  StreamInput more = Input(0);
  more.files.push_back(half);
  RunStream(o, more, &st);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("adds input 2"), std::string::npos) << st.ToString();
  // The same name with other contents (another size).
  const std::string copy = dir + "/copy.libsvm";
  ASSERT_TRUE(io::WriteStringToFileAtomic(copy, text).ok());
  TrainOptions c = o;
  c.model_dir = dir + "/c";
  c.epochs = 1;
  StreamInput cin = Input(0);
  cin.files = {copy};
  RunStream(c, cin);
  ASSERT_TRUE(io::WriteStringToFileAtomic(copy, text.substr(0, cut)).ok());
  c.epochs = 2;
  RunStream(c, cin, &st);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("is " + std::to_string(cut) + " bytes, it was " + std::to_string(text.size()) + " bytes"),
            std::string::npos)
      << st.ToString();
  // The same inputs resume.
  RunStream(o, Input(0), &st);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

// Every epoch end is checkpointed (keep-last-N), not only the end of training.
TEST(StreamTrain, CheckpointsAtEveryEpochEnd) {
  TrainOptions o = SmallOptions();
  o.epochs = 3;
  o.model_dir = TempDir("epoch_ckpt");
  RunStream(o, Input(300));
  for (int e = 1; e <= 3; ++e) {
    StatusOr<Checkpoint> ck = LoadCheckpoint(o.model_dir + "/ckpt-" + std::to_string(16 * e) + ".bin");
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    EXPECT_EQ(ck->meta["epoch"], e);
    EXPECT_EQ(ck->meta["batch_in_epoch"], 0);
  }
}

// With eval_every_steps dividing max_steps, the last step is evaluated once.
TEST(StreamTrain, EvaluatesAStepOnce) {
  TrainOptions o = SmallOptions();
  o.max_steps = 8;
  o.eval_every_steps = 4;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  std::vector<std::string> lines;
  (*t)->set_log_sink([&](const std::string& l) { lines.push_back(l); });
  TrainResult r;
  ASSERT_TRUE((*t)->TrainStream(Input(0), &Valid(), &r).ok());
  int at4 = 0, at8 = 0;
  for (const std::string& l : lines) {
    at4 += l.find("step 4: valid auc") != std::string::npos;
    at8 += l.find("step 8: valid auc") != std::string::npos;
  }
  EXPECT_EQ(at4, 1);
  EXPECT_EQ(at8, 1);
  EXPECT_FALSE(r.epoch_size_known);  // stopped inside the first epoch
}

std::string RunCli(const std::string& cmd, int* rc) {
  const std::string err = TempDir("stderr") + "/err.txt";
  *rc = std::system((cmd + " 2>" + err).c_str());
  StatusOr<std::string> s = io::ReadFileToString(err);
  return s.ok() ? *s : std::string();
}

// An id >= --feature-size is the reader's error naming file and line, in both
// input modes (one rule, one message).
TEST(StreamTrain, CliIdOutOfRangeNamesTheLocation) {
  const std::string bin = CTRAIN_BINARY;
  if (::access(bin.c_str(), X_OK) != 0) GTEST_SKIP() << "ctrain binary not built at " << bin;
  const std::string dir = TempDir("idrange");
  // 5 rows of 39 fields, 1-based ids 1..39 (+ row); line 3, field 16 has id 118.
  std::string text;
  for (int r = 0; r < 5; ++r) {
    text += r % 2 ? "1" : "0";
    for (int f = 1; f <= 39; ++f) text += " " + std::to_string(r == 2 && f == 16 ? 118 : f + r) + ":1";
    text += "\n";
  }
  const std::string data = dir + "/bad.libsvm";
  ASSERT_TRUE(io::WriteStringToFileAtomic(data, text).ok());
  for (const char* mode : {"stream", "memory"}) {
    SCOPED_TRACE(mode);
    int rc = 0;
    const std::string err = RunCli(bin + " train --input-mode " + std::string(mode) + " --train " + data +
                                       " --format libsvm --id-base 1 --feature-size 100 --embedding-size 4 "
                                       "--deep-layers 8 --batch-size 2 --intra-op-parallelism-threads 1 --progress none",
                                   &rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(err.find("InvalidArgument: " + data +
                       ":3: field 16 of 39: feature id 118 (as written, id_base 1) is outside [1, 101): "
                       "increase --feature-size"),
              std::string::npos)
        << err;
  }
}

}  // namespace
}  // namespace ctrain::train
