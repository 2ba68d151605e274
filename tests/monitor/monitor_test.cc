// Monitoring: the hand-encoded tensorflow.Event bytes, the /proc parser and
// sampler, and the files a Monitor writes; TensorBoard's own reader loads them
// (EventAccumulator, when the tensorboard Python package is importable).
#include "ctrain/monitor/monitor.h"

#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/io/tfrecord.h"
#include "ctrain/monitor/event_file.h"
#include "ctrain/monitor/nvml.h"
#include "ctrain/monitor/proc_sampler.h"
#include "ctrain/monitor/train_monitor.h"
#include "testing/temp_dir.h"

namespace ctrain::monitor {
namespace {

std::string Hex(const std::string& s) {
  std::string out;
  char b[4];
  for (unsigned char c : s) std::snprintf(b, sizeof b, "%02x", c), out += b;
  return out;
}

TEST(EventFile, ScalarEventBytesFollowEventProto) {
  // Event{wall_time=1.5 (field 1, fixed64), step=3 (field 2, varint), summary (field 5) {
  //   value (field 1) {tag "a" (field 1), simple_value 2.0f (field 2, fixed32)}}}
  EXPECT_EQ(Hex(EncodeScalarEvent(1.5, 3, {{"a", 2.0}})),
            "09000000000000f83f"  // 1.5 as a little-endian double
            "1003"
            "2a0a"                // summary, 10 bytes
            "0a08"                // value, 8 bytes
            "0a0161"              // tag "a"
            "1500000040");        // 2.0f
  EXPECT_EQ(Hex(EncodeFileVersionEvent(0)), "090000000000000000" "1a0d" + Hex("brain.Event:2"));
}

TEST(EventFile, RecordsReadBackThroughTFRecord) {
  const std::string dir = testing::TestTempDir("monitor", "events");
  StatusOr<std::unique_ptr<EventFileWriter>> w = EventFileWriter::Open(dir + "/run");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Write(10.0, 7, {{"x/y", 0.25}}).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_NE((*w)->path().find("/run/events.out.tfevents."), std::string::npos);
  auto r = io::TFRecordReader::Open((*w)->path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string_view rec;
  ASSERT_TRUE(*(*r)->Next(&rec));
  EXPECT_NE(std::string(rec).find("brain.Event:2"), std::string::npos);
  ASSERT_TRUE(*(*r)->Next(&rec));
  EXPECT_EQ(std::string(rec), EncodeScalarEvent(10.0, 7, {{"x/y", 0.25}}));
  EXPECT_FALSE(*(*r)->Next(&rec));
}

TEST(ProcSampler, ParsesStatLinesWithAwkwardNames) {
  uint64_t ticks = 0;
  int cpu = -1;
  // pid (comm) state ppid ... utime=14 stime=15 ... processor=39
  std::string line = "42 (a (b) c) S 1 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 100 1000 200";
  for (int f = 25; f <= 38; ++f) line += " 0";
  line += " 5 0 0";
  ASSERT_TRUE(ParseProcStat(line, &ticks, &cpu));
  EXPECT_EQ(ticks, 100u);
  EXPECT_EQ(cpu, 5);
  EXPECT_FALSE(ParseProcStat("42 no-parenthesis S 1", &ticks, &cpu));
}

TEST(ProcSampler, CountsTheCpuTimeOfABusyThreadAndTheRss) {
  auto thread_cpu = [] {
    timespec ts;
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  };
  ProcSampler s;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu();
  volatile double x = 0;
  while (thread_cpu() - cpu0 < 0.2) x = x + 1;  // 200 ms of CPU on this thread (the machine may be shared)
  std::vector<Scalar> v = s.Sample();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::map<std::string, double> m(v.begin(), v.end());
  ASSERT_TRUE(m.count("cpu/process_cores"));
  // The sampler's CPU seconds cover this thread's 0.2 s (clock ticks: 10 ms granularity).
  EXPECT_GE(m["cpu/process_cores"] * wall, 0.2 - 0.03) << "wall " << wall;
  EXPECT_NEAR(m["cpu/process_percent"], 100.0 * m["cpu/process_cores"] / s.cores(), 1e-9);
  double per_core = 0;
  for (int k = 0; k < s.cores(); ++k) per_core += m["cpu/core" + std::to_string(k) + "_percent"];
  EXPECT_GE(per_core / 100.0 * wall, 0.2 - 0.03);
  EXPECT_GT(m["memory/rss_mib"], 1.0);
  EXPECT_EQ(s.read_failures(), 0);
}

TEST(Nvml, AbsentDriverMeansNoSamplerAndAReason) {
  std::string why;
  std::unique_ptr<NvmlSampler> n = NvmlSampler::Open(&why);
  if (n) {
    std::vector<Scalar> v = n->Sample();
    EXPECT_FALSE(v.empty());
    EXPECT_EQ(v[0].first, "gpu0/utilization_percent");
  } else {
    EXPECT_FALSE(why.empty());
  }
}

// Runs python3 with tensorboard's EventAccumulator over every event file under
// `dir`; prints "<run>\t<tag>\t<count>\t<last value>" per scalar tag.
std::string TensorBoardScalars(const std::string& dir, int* status) {
  const std::string script =
      "import glob,os,sys\n"
      "sys.modules['tensorflow'] = None  # TensorBoard's own stub reader: no 15 s TensorFlow import\n"
      "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
      "for f in sorted(glob.glob(sys.argv[1] + '/**/events.out.tfevents.*', recursive=True)):\n"
      "  a = EventAccumulator(f); a.Reload()\n"
      "  for t in a.Tags()['scalars']:\n"
      "    s = a.Scalars(t); print(os.path.relpath(os.path.dirname(f), sys.argv[1]), t, len(s), '%.4g' % s[-1].value, sep='\\t')\n";
  const std::string py = testing::TestTempDir("monitor", "py") + "/tb.py";
  std::ofstream(py) << script;
  FILE* p = ::popen(("python3 '" + py + "' '" + dir + "' 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && std::fgets(buf, sizeof buf, p)) out += buf;
  *status = p ? ::pclose(p) : -1;
  return out;
}

bool HaveTensorBoard() {
  return std::system("python3 -c 'import tensorboard.backend.event_processing.event_accumulator' >/dev/null 2>&1") == 0;
}

StatusOr<std::unique_ptr<Monitor>> StartTrainerMonitor(const std::string& dir, int64_t interval_ms) {
  MonitorOptions o;
  o.dir = dir;
  o.role = "trainer";
  o.interval_ms = interval_ms;
  return Monitor::Start(o);
}

TEST(TrainMonitor, LossIsTheMeanOverTheStepsThatHaveOneAndLeftOutWhenNoneHas) {
  // A user's script fed by the data service (python/src/script_monitor.h): ctrain never sees
  // its loss, so its lines carry no train/loss (not a 0 or a NaN that a chart would draw).
  const std::string dir = testing::TestTempDir("monitor", "loss") + "/algo-1/trainer";
  StatusOr<std::unique_ptr<Monitor>> m = StartTrainerMonitor(dir, 1000);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  TrainMonitor tm(m->get(), 2);
  train::StepInfo s{1, 100, 0.020, 0.010, 9.0};
  s.has_loss = false;
  tm.OnStep(s);  // steps 1-2: no loss
  s.global_step = 2;
  tm.OnStep(s);
  tm.OnStep({3, 100, 0.020, 0.0, 0.4});  // steps 3-4: one loss, 0.4
  s.global_step = 4;
  tm.OnStep(s);
  ASSERT_TRUE((*m)->Close().ok());
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<nlohmann::json> train;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] == "train") train.push_back(j);
  }
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0]["step"], 2);
  EXPECT_FALSE(train[0]["values"].contains("train/loss")) << train[0].dump();
  EXPECT_DOUBLE_EQ(train[0]["values"]["train/step_time_ms"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(train[0]["values"]["train/input_wait_percent"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(train[1]["values"]["train/loss"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(train[1]["values"]["train/input_wait_percent"].get<double>(), 25.0);
}

TEST(Monitor, WritesJsonLinesAndEventsThatTensorBoardReads) {
  const std::string dir = testing::TestTempDir("monitor", "mon") + "/algo-1/trainer";
  StatusOr<std::unique_ptr<Monitor>> m = StartTrainerMonitor(dir, 50);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  TrainMonitor tm(m->get(), 1);
  for (int64_t step = 1; step <= 5; ++step) tm.OnStep({step, 256, 0.010, 0.002, 0.5 - 0.01 * step});
  train::EvalResult e;
  e.auc = 0.71;
  e.logloss = 0.5;
  tm.OnEval(5, e);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE((*m)->Close().ok());
  std::ifstream in(dir + "/metrics.jsonl");
  std::string line;
  int system = 0, train = 0, eval = 0;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(nlohmann::json::parse(line)["kind"], "start");
  EXPECT_EQ(nlohmann::json::parse(line)["role"], "trainer");
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] == "system") {
      ++system;
      EXPECT_TRUE(j["values"].contains("cpu/process_percent"));
    }
    if (j["kind"] == "train") {
      ++train;
      EXPECT_DOUBLE_EQ(j["values"]["train/step_time_ms"].get<double>(), 10.0);
      EXPECT_DOUBLE_EQ(j["values"]["train/examples_per_sec"].get<double>(), 25600.0);
      EXPECT_DOUBLE_EQ(j["values"]["train/input_wait_percent"].get<double>(), 20.0);
    }
    if (j["kind"] == "eval") {
      ++eval;
      EXPECT_DOUBLE_EQ(j["values"]["eval/auc"].get<double>(), 0.71);
    }
  }
  EXPECT_GE(system, 2);  // >= 1 interval + the last sample at Close
  EXPECT_EQ(train, 5);
  EXPECT_EQ(eval, 1);

  if (!HaveTensorBoard()) GTEST_SKIP() << "python3 cannot import tensorboard (pip install tensorboard): not read back";
  int status = 0;
  const std::string got = TensorBoardScalars(std::filesystem::path(dir).parent_path().parent_path().string(), &status);
  ASSERT_EQ(status, 0) << got;
  EXPECT_NE(got.find("algo-1/trainer\ttrain/step_time_ms\t5\t10\n"), std::string::npos) << got;
  EXPECT_NE(got.find("algo-1/trainer\ttrain/loss\t5\t0.45\n"), std::string::npos) << got;
  EXPECT_NE(got.find("algo-1/trainer\teval/auc\t1\t0.71\n"), std::string::npos) << got;
  EXPECT_NE(got.find("algo-1/trainer\tcpu/process_percent\t"), std::string::npos) << got;
  EXPECT_NE(got.find("algo-1/trainer\tmemory/rss_mib\t"), std::string::npos) << got;
}

}  // namespace
}  // namespace ctrain::monitor
