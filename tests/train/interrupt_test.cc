// A stop request (SIGINT/SIGTERM, Trainer::set_stop_flag) between steps writes
// a checkpoint at the current step; resuming from it ends bit-identical to an
// uninterrupted run, in memory and stream mode (issue #7 item 13, trial/11).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "ctrain/base/signals.h"
#include "ctrain/io/file.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("ctrain_interrupt_test", name); }

TrainOptions SmallOptions() {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 16};
  o.model.dropout = 0.1f;  // dropout streams must resume too
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.01f;
  o.batch_size = 64;
  o.seed = 7;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  o.eval_every_steps = 10;
  return o;
}

const Dataset& TrainRows() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 1000, 2000));
  return *d;
}
const Dataset& Valid() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 1000, 300, 2000));
  return *d;
}

std::string TrainFile() {
  static const std::string path = [] {
    const std::string p = TempDir("data") + "/train.libsvm";
    const Dataset& rows = TrainRows();
    std::string text;
    char buf[64];
    const int F = rows.field_size();
    for (int64_t r = 0; r < rows.size(); ++r) {
      text += rows.labels()[r] > 0.5f ? "1" : "0";
      for (int f = 0; f < F; ++f) {
        std::snprintf(buf, sizeof buf, " %lld:%.9g", static_cast<long long>(rows.ids()[r * F + f]),
                      rows.values()[r * F + f]);
        text += buf;
      }
      text += '\n';
    }
    EXPECT_TRUE(io::WriteStringToFileAtomic(p, text).ok());
    return p;
  }();
  return path;
}

StreamInput Input() {
  StreamInput in;
  in.files = {TrainFile()};
  in.reader.format = data::RecordFormat::kLibSvm;
  in.reader.field_size = 39;
  in.reader.feature_size = 2000;
  in.pipeline.shuffle_buffer_size = 300;
  in.pipeline.print_warnings = false;
  return in;
}

// One run; `stop_at` > 0 sets the stop flag when the eval line of that step is logged.
Status RunOnce(const TrainOptions& o, bool stream, int64_t stop_at, TrainResult* r) {
  auto t = Trainer::Create(o);
  if (!t.ok()) return t.status();
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR((*t)->Restore(&restored));
  std::atomic<int> flag{0};
  (*t)->set_stop_flag(&flag);
  const std::string trigger = "eval step " + std::to_string(stop_at) + ":";
  (*t)->set_log_sink([&](const std::string& line) {
    if (stop_at > 0 && line.find(trigger) != std::string::npos) flag = SIGTERM;
  });
  return stream ? (*t)->TrainStream(Input(), &Valid(), r) : (*t)->Train(TrainRows(), &Valid(), r);
}

void ExpectSameTensors(const std::string& a_dir, const std::string& b_dir) {
  StatusOr<Checkpoint> a = LoadLatestCheckpoint(a_dir), b = LoadLatestCheckpoint(b_dir);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->step, b->step);
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const NamedTensor& x : a->tensors) {
    const NamedTensor* y = b->Find(x.name);
    ASSERT_NE(y, nullptr) << x.name;
    ASSERT_EQ(x.f32.size(), y->f32.size()) << x.name;
    EXPECT_EQ(0, std::memcmp(x.f32.data(), y->f32.data(), x.f32.size() * sizeof(float))) << x.name;
  }
}

void CheckStopAndExactResume(bool stream) {
  SCOPED_TRACE(stream ? "stream" : "memory");
  const std::string tag = stream ? "stream" : "memory";
  TrainOptions o = SmallOptions();
  o.epochs = 3;  // 16 steps per epoch: 48 steps
  o.model_dir = TempDir(tag + "_straight");
  TrainResult straight;
  ASSERT_TRUE(RunOnce(o, stream, 0, &straight).ok());
  ASSERT_EQ(straight.steps, 48);

  TrainOptions a = o;
  a.model_dir = TempDir(tag + "_interrupted");
  TrainResult first;
  Status st = RunOnce(a, stream, 20, &first);  // mid-epoch 2
  ASSERT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(st.message(), "interrupted by SIGTERM at step 20: checkpoint " + a.model_dir +
                              "/ckpt-20.bin saved; run the same command to resume");
  StatusOr<Checkpoint> ck = LoadLatestCheckpoint(a.model_dir);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ(ck->step, 20);
  EXPECT_EQ(ck->meta.value("epoch", -1), 1);
  EXPECT_EQ(ck->meta.value("batch_in_epoch", -1), 4);

  TrainResult resumed;
  ASSERT_TRUE(RunOnce(a, stream, 0, &resumed).ok());
  EXPECT_TRUE(resumed.restored);
  EXPECT_EQ(resumed.steps, 48);
  EXPECT_EQ(resumed.examples, straight.examples);
  EXPECT_EQ(resumed.eval.auc, straight.eval.auc);
  EXPECT_EQ(resumed.eval.logloss, straight.eval.logloss);
  ExpectSameTensors(o.model_dir, a.model_dir);
}

TEST(Interrupt, MemoryModeStopsBetweenStepsAndResumesExactly) { CheckStopAndExactResume(false); }
TEST(Interrupt, StreamModeStopsBetweenStepsAndResumesExactly) { CheckStopAndExactResume(true); }

// Hogwild runs free between sync points; a stop mid-segment must record
// exactly the batches applied (not the whole segment) so a resume skips them.
TEST(Interrupt, HogwildStopsMidSegmentWithAConsistentPosition) {
  TrainOptions o = SmallOptions();
  o.eval_every_steps = 0;  // one segment per epoch
  o.epochs = 4000;         // far longer than the stop delay
  o.parallel.hogwild = 2;
  o.model_dir = TempDir("hogwild");
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  std::atomic<int> flag{0};
  (*t)->set_stop_flag(&flag);
  std::thread stopper([&] {
    // Long enough for steps to run on a loaded machine (a stop before the
    // first step saves nothing, by design: the case above).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    flag = SIGINT;
  });
  TrainResult r;
  Status st = (*t)->Train(TrainRows(), nullptr, &r);
  stopper.join();
  ASSERT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(st.message().rfind("interrupted by SIGINT at step ", 0), 0u) << st.ToString();
  StatusOr<Checkpoint> ck = LoadLatestCheckpoint(o.model_dir);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString() << "; the stop: " << st.ToString();
  const int64_t epoch = ck->meta.value("epoch", int64_t{-1}), batch = ck->meta.value("batch_in_epoch", int64_t{-1});
  ASSERT_GE(epoch, 0);
  ASSERT_GE(batch, 0);
  ASSERT_LT(batch, 16);
  EXPECT_EQ(ck->step, epoch * 16 + batch);
  // 1000 rows in 64-row batches: 15 full ones and one of 40.
  EXPECT_EQ(ck->meta.value("examples", int64_t{-1}), epoch * 1000 + batch * 64);
  EXPECT_NE(st.message().find("at step " + std::to_string(ck->step) + ": checkpoint"), std::string::npos)
      << st.ToString();
}

TEST(Interrupt, WithoutModelDirNothingIsSaved) {
  TrainOptions o = SmallOptions();
  o.epochs = 3;
  TrainResult r;
  Status st = RunOnce(o, false, 10, &r);
  ASSERT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_EQ(st.message(), "interrupted by SIGTERM at step 10: no --model-dir, nothing was saved");
}

// A stream waiting for a writer that never comes: the interrupt (deferred by
// the CLI while training) ends the wait at once; no step ran, nothing changes.
TEST(Interrupt, StreamWaitingForAWriterStopsPromptly) {
  const std::string dir = TempDir("fifo");
  const std::string fifo = dir + "/train.libsvm";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  InstallInterruptHandlers();
  InterruptDeferral defer;
  TrainOptions o = SmallOptions();
  o.model_dir = dir + "/model";
  StreamInput in = Input();
  in.files = {fifo};
  in.pipeline.pipe_timeout_ms = 0;  // no limit: only the interrupt ends the wait
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok());
  (*t)->set_stop_flag(PendingInterruptFlag());
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGTERM);
  });
  const auto t0 = std::chrono::steady_clock::now();
  TrainResult r;
  Status st = (*t)->TrainStream(in, nullptr, &r);
  signaller.join();
  ClearPendingInterrupt();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  ASSERT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(st.message(), "interrupted by SIGTERM at step 0: no step ran in this run, the checkpoint in " +
                              o.model_dir + " is unchanged");
  struct stat sb;
  EXPECT_NE(::stat((o.model_dir + "/checkpoint").c_str(), &sb), 0);
}

}  // namespace
}  // namespace ctrain::train
