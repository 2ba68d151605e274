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

#include <nlohmann/json.hpp>

#include "ctrain/io/file.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/ctrain_stream_test_" + std::to_string(::getpid()) + "_" + name;
  EXPECT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  return dir;
}

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

}  // namespace
}  // namespace ctrain::train
