// Every option of `ctrain train` x every mode, walked from the option schema
// (job/option_schema.h): where the schema says an option is honoured, setting
// it must show its effect in that mode as it does locally (a number of the run
// changes, stays equal for options that must not change results, an output
// appears, or the run fails naming it); where it is not, the job must refuse
// it at start naming the option and the mode. Options are set as typed values
// through the schema (the path of the Python package and of --config files).
//
// Modes run in process: local memory, local stream, towers, hogwild, the data
// service (an in-process dispatcher and worker) and parameter servers, async
// and sync (in-process servers, fresh for every run). mpirun needs mpirun:
// its refusals are checked here from the schema's text, its runs in
// tests/dist. An option added to the schema without a row in kProbes below
// fails OptionMatrix.EveryOptionHasAProbe.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ctrain/dataservice/dispatcher.h"
#include "ctrain/dataservice/worker.h"
#include "ctrain/job/config_file.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"
#include "ctrain/ps/server.h"
#include "testing/temp_dir.h"

namespace ctrain::job {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

enum class Expect {
  kChanges,  // a figure of the run (steps, loss, validation metrics) differs from the run without it
  kSame,     // the figures are bit-equal (the option must not change results), and the run succeeds
  kRuns,     // the run succeeds (the effect needs more than one process to see: covered where named)
  kOutput,   // `check(dir)` holds after the run and not after the run without it
  kFails,    // the run fails with a message containing `text` (the option was read and applied)
  kBase,     // set by every run of the matrix (the data, its sizes, the mode's own switches)
};

struct Probe {
  json value;
  Expect expect;
  json extra = json::object();  // options both runs set (what the option needs)
  std::function<bool(const std::string& dir)> check = {};
  std::string text = {};
  json with = json::object();  // options only the probed run sets (what must come with it)
};

bool Exists(const std::string& p) { return fs::exists(p); }
// Checkpoints under `dir` (parameter servers: in their shard directories below it; best/ not counted).
int CountCheckpoints(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory() && it->path().filename() == "best") it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".bin") ++n;
  }
  return n;
}

// The probes; `dir` placeholders "@" are replaced by the run's directory.
const std::map<std::string, Probe>& Probes() {
  static const auto* p = new std::map<std::string, Probe>{
      {"config", {"@/lr.json", Expect::kChanges}},
      {"train", {nullptr, Expect::kBase}},
      {"valid", {nullptr, Expect::kBase}},
      {"format", {"libsvm", Expect::kSame}},
      {"compression", {"none", Expect::kSame}},
      {"field_size", {nullptr, Expect::kBase}},
      {"id_base", {1, Expect::kChanges}},
      {"feature_map", {"@/vocab.txt", Expect::kFails, {}, {}, "vocab.txt"}},
      {"skip_corrupt_records", {true, Expect::kSame}},
      {"max_skipped_records", {5, Expect::kSame}},
      {"pipe_timeout_ms", {1000, Expect::kSame}},
      {"max_line_bytes", {8, Expect::kFails, {}, {}, "max-line-bytes"}},
      {"feature_size", {128, Expect::kChanges}},
      {"feature_spec", {"@/spec.json", Expect::kFails, {}, {}, "spec.json"}},
      {"embedding_size", {8, Expect::kChanges}},
      {"deep_layers", {json::array({16, 8}), Expect::kChanges}},
      {"dropout", {0.4, Expect::kChanges}},
      {"batch_norm", {true, Expect::kChanges}},
      {"l2_reg", {0.01, Expect::kChanges}},
      {"mixed_precision", {"f32", Expect::kSame}},
      {"batch_size", {32, Expect::kChanges}},
      {"epochs", {3, Expect::kChanges}},
      {"max_steps", {5, Expect::kChanges}},
      {"learning_rate", {0.05, Expect::kChanges}},
      {"optimizer", {"adagrad", Expect::kChanges}},
      {"seed", {7, Expect::kChanges}},
      {"dropout_seed", {7, Expect::kChanges}},
      {"shuffle", {false, Expect::kChanges}},
      {"model_dir", {"@/model", Expect::kOutput, {}, [](const std::string& d) { return CountCheckpoints(d + "/model") > 0; }}},
      {"save_checkpoints_steps",
       {3, Expect::kOutput, {{"model_dir", "@/model"}}, [](const std::string& d) { return CountCheckpoints(d + "/model") > 1; }}},
      {"keep_checkpoints",
       {1, Expect::kOutput, {{"model_dir", "@/model"}, {"save_checkpoints_steps", 3}},
        [](const std::string& d) { return CountCheckpoints(d + "/model") == 1; }}},
      {"eval_every_steps",
       {2, Expect::kChanges, {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0}}}},
      {"monitor_dir", {"@/mon", Expect::kOutput, {}, [](const std::string& d) { return Exists(d + "/mon/metrics.jsonl"); }}},
      {"monitor_interval_ms", {50, Expect::kSame, {{"monitor_dir", "@/mon"}}}},
      {"metrics_json", {"@/m.json", Expect::kOutput, {}, [](const std::string& d) { return Exists(d + "/m.json"); }}},
      {"progress", {"log", Expect::kSame}},
      {"input_mode", {nullptr, Expect::kBase}},
      {"num_parallel_reads", {2, Expect::kSame}},
      {"num_parallel_calls", {2, Expect::kSame}},
      {"shuffle_buffer_size", {10, Expect::kChanges}},
      {"reshuffle_each_iteration", {false, Expect::kChanges}},
      {"prefetch_buffer_size", {0, Expect::kSame}},
      {"cache", {"memory", Expect::kSame}},
      {"cache_max_bytes", {1 << 20, Expect::kSame, {{"cache", "memory"}}}},
      {"num_shards", {2, Expect::kChanges}},
      {"shard_index", {1, Expect::kChanges, {{"num_shards", 2}}}},
      {"drop_remainder", {true, Expect::kChanges}},
      {"data_service", {nullptr, Expect::kBase}},
      {"processing_mode", {"parallel_epochs", Expect::kRuns}},  // one worker: the same rows (dataservice tests: more)
      {"job_name", {"named-job", Expect::kRuns}},
      {"num_splits", {2, Expect::kChanges}},
      {"consumer_index", {nullptr, Expect::kBase}},  // one consumer here; tests/dataservice run several
      {"data_service_compression", {"zstd", Expect::kSame}},
      {"data_service_buffer_bytes", {1 << 20, Expect::kSame}},
      {"data_service_max_open_splits", {1, Expect::kSame}},
      {"token_file", {"@/missing-token", Expect::kFails, {}, {}, "missing-token"}},
      {"tls_cert", {"@/missing.pem", Expect::kFails, {}, {}, "--tls-cert"}},  // without --tls-ca: refused by name
      {"tls_key", {"@/missing.key", Expect::kFails, {}, {}, "--tls-key"}},
      {"tls_ca", {"@/missing-ca.pem", Expect::kFails, {}, {}, "missing-ca.pem"}},
      {"ps", {nullptr, Expect::kBase}},
      {"worker_index", {nullptr, Expect::kBase}},  // one worker here; tests/ps run several
      {"num_workers", {nullptr, Expect::kBase}},
      {"sync_replicas", {nullptr, Expect::kBase}},
      {"max_staleness", {1, Expect::kSame}},
      {"ps_wait_seconds", {5.0, Expect::kSame}},
      {"intra_op_parallelism_threads", {2, Expect::kRuns}},  // GEMM sums may reassociate
      {"inter_op_parallelism_threads", {1, Expect::kSame}},
      {"towers", {nullptr, Expect::kBase}},
      {"hogwild", {nullptr, Expect::kBase}},
      {"affinity", {true, Expect::kSame}},
      {"autotune", {true, Expect::kRuns, {{"autotune_steps", 1}}}},
      {"deterministic", {true, Expect::kSame}},
      {"autotune_steps", {2, Expect::kRuns, {{"autotune", true}}}},
      {"lr_scaling", {"sqrt", Expect::kBase}},  // mpirun only: refused in every mode of this test
      {"stall_warning_secs", {5.0, Expect::kBase}},
      {"stall_shutdown_secs", {5.0, Expect::kBase}},
      {"check_replicas_every", {2, Expect::kBase}},
      {"lr_warmup_steps", {5, Expect::kChanges}},
      {"lr_decay", {"exponential", Expect::kChanges, {{"lr_decay_steps", 2}}}},
      {"lr_decay_steps", {5, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 2}}}},
      {"lr_decay_rate", {0.5, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 2}}}},
      {"lr_decay_staircase", {true, Expect::kChanges, {{"lr_decay", "exponential"}, {"lr_decay_steps", 3}}}},
      {"lr_decay_alpha", {0.5, Expect::kChanges, {{"lr_decay", "cosine"}, {"lr_decay_steps", 10}}}},
      {"warm_start_from", {"@/../warm", Expect::kChanges}},
      {"warm_start_optimizer", {true, Expect::kChanges, {{"warm_start_from", "@/../warm"}}}},
      {"early_stopping_metric",
       {"logloss", Expect::kChanges, {{"eval_every_steps", 2}}, {}, {},
        {{"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0}}}},
      {"early_stopping_patience",
       {3, Expect::kChanges,
        {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"early_stopping_min_delta", 1.0},
         {"eval_every_steps", 2}}}},
      {"early_stopping_min_delta",
       {1.0, Expect::kChanges, {{"early_stopping_metric", "logloss"}, {"early_stopping_patience", 1}, {"eval_every_steps", 2}}}},
      {"keep_best", {true, Expect::kOutput, {{"model_dir", "@/model"}}, [](const std::string& d) { return CountCheckpoints(d + "/model/best") > 0; }}},
      {"gauc_field", {1, Expect::kChanges}},
      {"negative_downsampling", {0.5, Expect::kChanges}},
  };
  return *p;
}

// LibSVM rows whose label follows field 0's id (1 or 2); ids start at 1 (so
// that --id-base 1 is valid and moves every id).
void WriteRows(const std::string& path, int rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::ofstream f(path);
  for (int r = 0; r < rows; ++r) {
    const int click = rng() % 4 == 0 ? 1 : 0;
    f << click << " " << (1 + click) << ":1";
    for (int j = 1; j < 4; ++j) f << " " << (3 + j * 10 + rng() % 10) << ":" << (1 + rng() % 3) * 0.5;
    f << "\n";
  }
}

std::string Replace(std::string s, const std::string& dir) {
  for (size_t at = s.find('@'); at != std::string::npos; at = s.find('@', at + dir.size())) s.replace(at, 1, dir);
  return s;
}
json Placed(const json& v, const std::string& dir) {
  if (v.is_string()) return Replace(v.get<std::string>(), dir);
  if (v.is_object()) {
    json o = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) o[it.key()] = Placed(it.value(), dir);
    return o;
  }
  return v;
}

struct Outcome {
  Status status;
  std::string figures;  // steps, examples, loss, validation metrics
};

class OptionMatrix : public ::testing::TestWithParam<TrainMode> {
 protected:
  static void SetUpTestSuite() {
    root_ = ctrain::testing::TestTempDir("option_matrix", "data");
    WriteRows(root_ + "/train.libsvm", 500, 1);
    WriteRows(root_ + "/valid.libsvm", 200, 2);
    // The model warm starts begin from: trained once, locally.
    TrainJobOptions o;
    ASSERT_TRUE(ApplyTrainOptions(Common(), "warm", &o, &o.given).ok());
    o.train_options.model_dir = root_ + "/warm";
    ASSERT_TRUE(RunTrain(o).ok());
  }

  static json Common() {
    return {{"train", {root_ + "/train.libsvm"}}, {"valid", {root_ + "/valid.libsvm"}}, {"field_size", 4},
            {"feature_size", 64},   {"embedding_size", 4},  {"deep_layers", {8}},
            {"dropout", 0.2},       {"learning_rate", 0.01}, {"batch_size", 64},
            {"epochs", 2},          {"progress", "none"},   {"intra_op_parallelism_threads", 1}};
  }

  void SetUp() override {
    const TrainMode m = GetParam();
    if (m == TrainMode::kDataService) {
      dataservice::DispatcherOptions d;
      d.log = [](const std::string&) {};
      auto disp = dataservice::Dispatcher::Start(d);
      ASSERT_TRUE(disp.ok()) << disp.status().ToString();
      dispatcher_ = std::move(*disp);
      dataservice::WorkerOptions w;
      w.dispatcher = dispatcher_->address();
      w.heartbeat = std::chrono::milliseconds(100);
      w.log = [](const std::string&) {};
      auto work = dataservice::Worker::Start(w);
      ASSERT_TRUE(work.ok()) << work.status().ToString();
      worker_ = std::move(*work);
      threads_.emplace_back([this] { (void)dispatcher_->Run(&stop_); });
      threads_.emplace_back([this] { (void)worker_->Run(&stop_); });
    }
  }
  void TearDown() override {
    stop_ = 1;
    for (std::thread& t : threads_) t.join();
    worker_.reset();
    dispatcher_.reset();
  }

  // The options of one run in this test's mode.
  json ModeOptions(const std::string& dir) {
    json o = Common();
    switch (GetParam()) {
      case TrainMode::kLocalMemory: o["input_mode"] = "memory"; break;
      case TrainMode::kLocalStream: o["input_mode"] = "stream"; break;
      case TrainMode::kTowers: o["input_mode"] = "memory", o["towers"] = 2; break;
      case TrainMode::kHogwild: o["input_mode"] = "memory", o["hogwild"] = 1; break;
      case TrainMode::kDataService:
        o["input_mode"] = "stream";
        o["data_service"] = dispatcher_->address();
        o["job_name"] = "run-" + std::to_string(runs_);
        break;
      case TrainMode::kPsAsync:
      case TrainMode::kPsSync: {
        ps::ServerOptions so;
        so.server.port = 0;
        so.shard.shard = 0;
        so.shard.num_shards = 1;
        so.shard.partitioner = "mod";
        so.shard.log = [](const std::string&) {};
        so.shard.model_dir = dir + "/model/ps";  // saved when the chief has a --model-dir
        auto s = ps::ParameterServer::Start(so);
        EXPECT_TRUE(s.ok()) << s.status().ToString();
        if (s.ok()) {
          o["ps"] = {(*s)->address()};
          servers_.push_back(std::move(*s));
        }
        if (GetParam() == TrainMode::kPsSync) o["sync_replicas"] = true;
        break;
      }
      default: break;
    }
    return o;
  }

  Outcome Run(const json& extra, const std::string& name) {
    const std::string dir = root_ + "/" + std::string(ModeSetText(static_cast<ModeSet>(GetParam()))) + "-" +
                            std::to_string(runs_++) + "-" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/lr.json") << R"({"l2_reg": 0.05})";
    std::ofstream(dir + "/vocab.txt") << "a 0\n";
    std::ofstream(dir + "/spec.json") << "{}";
    servers_.clear();  // parameter servers: fresh for every run
    json o = ModeOptions(dir);
    for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = Placed(it.value(), dir);
    Outcome out;
    last_dir_ = dir;
    StatusOr<TrainJobOptions> made = TrainJobOptionsFromValues(o, "matrix");  // Python's path: --config applied
    if (!made.ok()) return out.status = made.status(), out;
    TrainJobOptions& opts = *made;
    train::TrainResult r;
    out.status = RunTrain(opts, &r);
    char buf[256];
    std::snprintf(buf, sizeof(buf), "steps %lld examples %lld loss %.9g auc %.9g logloss %.9g gauc %.9g stopped %d",
                  static_cast<long long>(r.steps), static_cast<long long>(r.examples), r.last_loss, r.eval.auc,
                  r.eval.logloss, r.eval.gauc, r.early_stopped ? 1 : 0);
    out.figures = buf;
    return out;
  }

  static std::string root_;
  std::string last_dir_;
  int runs_ = 0;
  std::atomic<int> stop_{0};
  std::unique_ptr<dataservice::Dispatcher> dispatcher_;
  std::unique_ptr<dataservice::Worker> worker_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<ps::ParameterServer>> servers_;
};
std::string OptionMatrix::root_;

// The modes of this test's runs in `mode` (a run with towers reads in memory, ...).
ModeSet RunModesOf(TrainMode mode) {
  switch (mode) {
    case TrainMode::kTowers:
    case TrainMode::kHogwild:
    case TrainMode::kPsAsync:
    case TrainMode::kPsSync: return TrainMode::kLocalMemory | mode;
    case TrainMode::kDataService: return TrainMode::kLocalStream | mode;
    default: return static_cast<ModeSet>(mode);
  }
}

TEST(OptionMatrixSchema, EveryOptionHasAProbeAndModes) {
  for (const OptionSpec& s : TrainOptionSchema()) {
    EXPECT_NE(s.modes, 0u) << s.name << " declares no mode";
    EXPECT_TRUE(Probes().count(s.name)) << s.name << ": no row in the option matrix (tests/job/option_matrix_acceptance_test.cc)";
    EXPECT_FALSE(s.help.empty()) << s.name;
  }
  for (const auto& [name, probe] : Probes()) EXPECT_NE(FindTrainOption(name), nullptr) << name << ": not in the schema";
}

TEST_P(OptionMatrix, EveryOptionIsHonouredOrRefusedByName) {
  const TrainMode mode = GetParam();
  Outcome base = Run(json::object(), "base");
  ASSERT_TRUE(base.status.ok()) << base.status.ToString();
  std::map<std::string, Outcome> bases;  // by the extra options' text
  bases[json::object().dump()] = base;
  int honoured = 0, refused = 0, in_base = 0;
  for (const OptionSpec& s : TrainOptionSchema()) {
    const Probe& p = Probes().at(s.name);
    const bool supported = (s.modes & RunModesOf(mode)) == RunModesOf(mode) && (s.needs == 0 || (s.needs & RunModesOf(mode)) != 0);
    if (p.expect == Expect::kBase && supported) {
      ++in_base;
      continue;
    }
    SCOPED_TRACE(s.name + " in " + std::string(TrainModeName(mode)));
    json probe = p.extra;
    for (auto it = p.with.begin(); it != p.with.end(); ++it) probe[it.key()] = it.value();
    probe[s.name] = p.value.is_null() ? s.default_value() : p.value;
    if (!supported) {
      if (p.value.is_null()) {  // a mode switch or a base option: refused where it does not belong
        ++in_base;
        continue;
      }
      Outcome o = Run({{s.name, probe[s.name]}}, s.name);  // alone: the refusal must name it
      ASSERT_FALSE(o.status.ok()) << s.flag() << " ran in " << TrainModeName(mode) << " (" << o.figures << ")";
      const std::string msg(o.status.message());
      EXPECT_NE(msg.find(s.flag()), std::string::npos) << msg;
      bool names_mode = msg.find("applies to") != std::string::npos;
      for (TrainMode m : AllTrainModes())
        if (Has(RunModesOf(mode), m) && msg.find(std::string(TrainModeName(m))) != std::string::npos) names_mode = true;
      EXPECT_TRUE(names_mode) << msg;
      ++refused;
      continue;
    }
    std::string key = p.extra.dump();
    if (!bases.count(key)) bases[key] = Run(p.extra, s.name + "-base");
    const Outcome& b = bases[key];
    const std::string base_dir = last_dir_;
    ASSERT_TRUE(b.status.ok()) << b.status.ToString();
    Outcome o = Run(probe, s.name);
    switch (p.expect) {
      case Expect::kChanges:
        ASSERT_TRUE(o.status.ok()) << o.status.ToString();
        EXPECT_NE(o.figures, b.figures) << s.flag() << " changed nothing";
        break;
      case Expect::kSame:
        ASSERT_TRUE(o.status.ok()) << o.status.ToString();
        if (mode != TrainMode::kHogwild) EXPECT_EQ(o.figures, b.figures);
        break;
      case Expect::kRuns:
        EXPECT_TRUE(o.status.ok()) << o.status.ToString();
        break;
      case Expect::kOutput:
        ASSERT_TRUE(o.status.ok()) << o.status.ToString();
        EXPECT_TRUE(p.check(last_dir_)) << s.flag() << ": its output is not there";
        if (!p.extra.contains("model_dir")) EXPECT_FALSE(p.check(base_dir));
        break;
      case Expect::kFails:
        ASSERT_FALSE(o.status.ok()) << s.flag() << " had no effect (" << o.figures << ")";
        EXPECT_NE(std::string(o.status.message()).find(p.text), std::string::npos) << o.status.ToString();
        break;
      case Expect::kBase:
        break;
    }
    ++honoured;
  }
  std::printf("option matrix: %s: %d honoured, %d refused, %d set by every run or the mode itself\n",
              std::string(TrainModeName(mode)).c_str(), honoured, refused, in_base);
}

INSTANTIATE_TEST_SUITE_P(Modes, OptionMatrix,
                         ::testing::Values(TrainMode::kLocalMemory, TrainMode::kLocalStream, TrainMode::kTowers,
                                           TrainMode::kHogwild, TrainMode::kDataService, TrainMode::kPsAsync,
                                           TrainMode::kPsSync),
                         [](const auto& info) { return ModeSetText(static_cast<ModeSet>(info.param)); });

}  // namespace
}  // namespace ctrain::job
