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
#include "ctrain/model/model.h"
#include "ctrain/ps/server.h"
#include "ctrain/train/trainer.h"
#include "job/option_probes.h"
#include "testing/temp_dir.h"

namespace ctrain::job {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using namespace matrix;  // option_probes.h

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
    KeepOptionsTheModelReads(&o, extra);
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
        if (mode != TrainMode::kHogwild) {
          EXPECT_EQ(o.figures, b.figures);
        }
        break;
      case Expect::kRuns:
        EXPECT_TRUE(o.status.ok()) << o.status.ToString();
        break;
      case Expect::kOutput:
        ASSERT_TRUE(o.status.ok()) << o.status.ToString();
        EXPECT_TRUE(p.check(last_dir_)) << s.flag() << ": its output is not there";
        if (!p.extra.contains("model_dir")) {
          EXPECT_FALSE(p.check(base_dir));
        }
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

// The model x mode matrix (issue #22): every kind of model::ModelKinds() trains in this mode, computes its own
// figures (not DeepFM's) and writes its checkpoint, which records its kind.
TEST_P(OptionMatrix, EveryModelTrainsInThisMode) {
  const TrainMode mode = GetParam();
  Outcome deepfm = Run(json::object(), "deepfm");
  ASSERT_TRUE(deepfm.status.ok()) << deepfm.status.ToString();
  for (const std::string& kind : model::ModelKinds()) {
    SCOPED_TRACE(kind + " in " + std::string(TrainModeName(mode)));
    json extra = {{"model", kind}, {"model_dir", "@/model"}};
    if (kind == "dlrm") extra["num_dense_fields"] = 1;
    Outcome o = Run(extra, kind);
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_GT(CountCheckpoints(last_dir_ + "/model"), 0);
    if (kind != "deepfm") {
      EXPECT_NE(o.figures, deepfm.figures) << "--model " << kind << " computed DeepFM's figures";
    }
    if (mode != TrainMode::kPsAsync && mode != TrainMode::kPsSync) {  // the servers hold a PS job's checkpoint
      StatusOr<model::ModelConfig> mc = train::ReadCheckpointModelConfig(last_dir_ + "/model");
      ASSERT_TRUE(mc.ok()) << mc.status().ToString();
      EXPECT_EQ(mc->kind, kind);
    }
    std::printf("model matrix: %s in %s: %s\n", kind.c_str(), std::string(TrainModeName(mode)).c_str(),
                o.figures.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, OptionMatrix,
                         ::testing::Values(TrainMode::kLocalMemory, TrainMode::kLocalStream, TrainMode::kTowers,
                                           TrainMode::kHogwild, TrainMode::kDataService, TrainMode::kPsAsync,
                                           TrainMode::kPsSync),
                         [](const auto& info) { return ModeSetText(static_cast<ModeSet>(info.param)); });

}  // namespace
}  // namespace ctrain::job
