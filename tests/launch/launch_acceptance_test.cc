// Acceptance (slow): `ctrain launch --local-cluster` on loopback with real
// Criteo data (CTRAIN_SHARED_DATA_DIR/criteo_deepfm_va10k.libsvm, first 8,000
// lines to train, the last 2,040 to validate; copied to a scratch dir, never
// into the repo):
//   (a) 1 host and (b) 2 data hosts + 1 trainer reach the AUC of a local
//       `ctrain train` on the same data and flags (the same bits: one data
//       worker split, deterministic pipeline);
//   in (b) the data hosts and the dispatcher exit 0 by themselves after the
//       trainer, and no process of the run is left;
//   every TensorBoard event file loads in TensorBoard's EventAccumulator with
//       the tags of its role;
//   `ctrain report` on (a) and (b) prints the tables and verdicts and writes PNGs;
//   a bad hyperparameter -> output/failure names it, non-zero exit;
//   SIGTERM mid-run -> checkpoint; the same launch again resumes from it.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "testing/process.h"

namespace ctrain::testing {
namespace {

using namespace std::chrono_literals;

// Hyperparameters shared by every run: the data-service acceptance test's config.
constexpr char kHps[] = R"(epochs = "2"
batch_size = "256"
seed = "5"
shuffle_buffer_size = "1000"
intra_op_parallelism_threads = "1"
progress = "log"
)";
constexpr char kLocalFlags[] =
    "--epochs 2 --batch-size 256 --seed 5 --shuffle-buffer-size 1000 --intra-op-parallelism-threads 1 --progress log";

std::string Channels(const std::string& dir) {
  return "[channels.train]\nmode = \"File\"\nfiles = [\"" + dir + "/tr.libsvm\"]\n[channels.validation]\nmode = "
         "\"File\"\nfiles = [\"" + dir + "/va.libsvm\"]\n";
}

double AucOf(const std::string& metrics_json) {
  nlohmann::json j = nlohmann::json::parse(Slurp(metrics_json), nullptr, false);
  if (j.is_discarded() || !j.contains("auc") || !j["auc"].is_number()) return -1;
  return j["auc"].get<double>();
}

// Processes whose command line mentions `needle` (this test's scratch dir).
std::vector<std::string> ProcessesMentioning(const std::string& needle) {
  std::vector<std::string> found;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || std::atoi(e->d_name) == ::getpid()) continue;
    std::string cmd = Slurp(std::string("/proc/") + e->d_name + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(needle) != std::string::npos) found.push_back(std::string(e->d_name) + ": " + cmd);
  }
  if (d) ::closedir(d);
  return found;
}

class LaunchAcceptance : public ::testing::Test {
 protected:
  // Runs once: the local reference, (a) and (b).
  static void SetUpTestSuite() {
    if (!fs::exists(kData + "/criteo_deepfm_va10k.libsvm")) return;
    dir_ = new std::string(fs::temp_directory_path() / ("launch_acc_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    std::ifstream in(kData + "/criteo_deepfm_va10k.libsvm");
    std::ofstream tr(*dir_ + "/tr.libsvm"), va(*dir_ + "/va.libsvm");
    int n = 0;
    for (std::string line; std::getline(in, line); ++n) (n < 8000 ? tr : va) << line << "\n";
    tr.close(), va.close();
    std::ofstream(*dir_ + "/a.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                                     << "[hyperparameters]\n" << kHps << Channels(*dir_);
    std::ofstream(*dir_ + "/b.toml") << "[[group]]\nname = \"data\"\ninstance_type = \"ml.c5.xlarge\"\ncount = 2\n"
                                     << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                                     << "[hyperparameters]\ndata_group = \"data\"\nnum_splits = \"1\"\n" << kHps
                                     << Channels(*dir_);
    local_ = new RunResult(Shell("timeout 300 " + kCtrain + " train --train '" + *dir_ + "/tr.libsvm' --valid '" + *dir_ +
                                 "/va.libsvm' " + kLocalFlags + " --metrics-json '" + *dir_ + "/local.json'"));
    a_ = new RunResult(Shell("timeout 300 " + kCtrain + " launch --local-cluster a.toml --work-dir runa", *dir_));
    b_ = new RunResult(Shell("timeout 300 " + kCtrain + " launch --local-cluster b.toml --work-dir runb", *dir_));
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_, delete local_, delete a_, delete b_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (dir_ == nullptr) GTEST_SKIP() << kData << "/criteo_deepfm_va10k.libsvm is absent (../shared/data)";
  }
  static std::string* dir_;
  static RunResult *local_, *a_, *b_;
};
std::string* LaunchAcceptance::dir_ = nullptr;
RunResult* LaunchAcceptance::local_ = nullptr;
RunResult* LaunchAcceptance::a_ = nullptr;
RunResult* LaunchAcceptance::b_ = nullptr;

TEST_F(LaunchAcceptance, OneHostReachesTheAucOfALocalRunAndLeavesAModelForPredict) {
  ASSERT_EQ(local_->exit_code, 0) << local_->out;
  ASSERT_EQ(a_->exit_code, 0) << a_->out;
  const double local = AucOf(*dir_ + "/local.json");
  const double a = AucOf(*dir_ + "/runa/algo-1/output/data/metrics.json");
  EXPECT_GE(local, 0.68);
  EXPECT_EQ(a, local) << a_->out;  // same data, flags and thread layout: the same bits
  EXPECT_FALSE(fs::exists(*dir_ + "/runa/algo-1/output/failure"));
  // model/ is usable by predict.
  RunResult p = Shell("timeout 120 " + kCtrain + " predict --model-dir '" + *dir_ + "/runa/algo-1/model' --input '" +
                      *dir_ + "/va.libsvm' --output '" + *dir_ + "/pred.txt'");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  std::ifstream preds(*dir_ + "/pred.txt");
  int lines = 0;
  for (std::string l; std::getline(preds, l);) ++lines;
  EXPECT_EQ(lines, 2040);
}

TEST_F(LaunchAcceptance, TwoDataHostsAndATrainerReachTheSameAucAndEveryRoleEnds) {
  ASSERT_EQ(local_->exit_code, 0) << local_->out;
  ASSERT_EQ(b_->exit_code, 0) << b_->out;
  EXPECT_EQ(AucOf(*dir_ + "/runb/algo-3/output/data/metrics.json"), AucOf(*dir_ + "/local.json")) << b_->out;
  const std::string& log = b_->out;
  // The trainer finished, then both data workers left by themselves and the dispatcher shut down.
  const size_t trained = log.find("[algo-3] ctrain: launch: algo-3: training done");
  ASSERT_NE(trained, std::string::npos) << log;
  // A worker leaves when its heartbeat hears that every job has finished, or, if the first data
  // host's shutdown came first, that the service is shutting down: either way by itself, exit 0.
  for (const char* host : {"[algo-1] [data-worker]", "[algo-2] [data-worker]"}) {
    const bool idle = log.find(std::string(host) + " ctrain: worker: every job has finished (--exit-when-idle)") !=
                      std::string::npos;
    const bool shut = log.find(std::string(host) + " ctrain: worker: the data service is shutting down") !=
                      std::string::npos;
    EXPECT_TRUE(idle || shut) << host << "\n" << log;
  }
  // The first data host's worker is the one whose exit triggers the shutdown.
  EXPECT_NE(log.find("[algo-1] [data-worker] ctrain: worker: every job has finished (--exit-when-idle)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("[algo-1] [dispatcher] ctrain: dispatcher: shutdown requested"), std::string::npos) << log;
  EXPECT_NE(log.find("local cluster done: every host exited 0"), std::string::npos) << log;
  EXPECT_EQ(ProcessesMentioning(*dir_ + "/runb"), std::vector<std::string>{});
  for (const char* host : {"algo-1", "algo-2", "algo-3"})
    EXPECT_FALSE(fs::exists(*dir_ + "/runb/" + host + "/output/failure")) << host;
}

TEST_F(LaunchAcceptance, EveryEventFileLoadsInTensorBoardWithItsRolesTags) {
  if (std::system("python3 -c 'import tensorboard.backend.event_processing.event_accumulator' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 cannot import tensorboard (pip install tensorboard, scripts/install-deps.sh)";
  ASSERT_EQ(a_->exit_code, 0) << a_->out;
  ASSERT_EQ(b_->exit_code, 0) << b_->out;
  // One line per event file: its run dir (<host>/<role>) and its scalar tags.
  std::ofstream(*dir_ + "/tb.py")
      << "import glob, os, sys\n"
         "sys.modules['tensorflow'] = None  # TensorBoard's own reader, without the TensorFlow import\n"
         "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
         "for f in sorted(glob.glob(sys.argv[1] + '/**/events.out.tfevents.*', recursive=True)):\n"
         "    a = EventAccumulator(f); a.Reload()\n"
         "    run = os.path.relpath(os.path.dirname(f), sys.argv[1])\n"
         "    print(run, ' '.join(sorted(t for t in a.Tags()['scalars'] if not t.startswith('cpu/core'))))\n";
  RunResult r = Shell("timeout 120 python3 tb.py runb/algo-1/output/data/monitor; timeout 120 python3 tb.py "
                      "runb/algo-2/output/data/monitor; timeout 120 python3 tb.py runb/algo-3/output/data/monitor; "
                      "timeout 120 python3 tb.py runa/algo-1/output/data/monitor",
                      *dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string sys = "cpu/process_cores cpu/process_percent memory/rss_mib";
  const std::string train = "cpu/process_cores cpu/process_percent eval/auc eval/logloss memory/rss_mib "
                            "train/examples_per_sec train/input_wait_percent train/loss train/step_time_ms";
  const std::string data_sorted = "cpu/process_cores cpu/process_percent data/batches_per_sec data/bytes_per_sec "
                                  "data/queue_fill_percent memory/rss_mib";
  EXPECT_NE(r.out.find("algo-1/dispatcher " + sys + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algo-1/data-worker " + data_sorted + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algo-2/data-worker " + data_sorted + "\n"), std::string::npos) << r.out;
  const std::string trainer_line = "algo-3/trainer " + train + "\n";
  EXPECT_NE(r.out.find(trainer_line), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("algo-1/trainer " + train + "\n"), std::string::npos) << r.out;  // run (a)
  // 4 event files in (b), 1 in (a): every line above, nothing else.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5) << r.out;
}

TEST_F(LaunchAcceptance, ReportPrintsTablesAndVerdictsAndWritesCharts) {
  ASSERT_EQ(a_->exit_code, 0) << a_->out;
  ASSERT_EQ(b_->exit_code, 0) << b_->out;
  RunResult r = Shell("timeout 120 " + kCtrain + " report runa runb --prices '" + std::string(CTRAIN_SOURCE_DIR) +
                          "/examples/prices.toml' --output-dir rep",
                      *dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| train | ml.m5.xlarge | 1 | trainer |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| data | ml.c5.xlarge | 2 | data-worker+dispatcher |"), std::string::npos) << r.out;
  // Prices from examples/prices.toml: 0.23 for (a); 2 x 0.204 + 0.23 for (b).
  EXPECT_NE(r.out.find("Cluster: $0.230 per hour"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Cluster: $0.638 per hour"), std::string::npos) << r.out;
  size_t verdicts = 0;
  for (size_t p = 0; (p = r.out.find("\nVerdict: ", p)) != std::string::npos; ++p) {
    const std::string v = r.out.substr(p + 10, 14);
    EXPECT_TRUE(v.rfind("input-bound", 0) == 0 || v.rfind("compute-bound", 0) == 0) << v;
    ++verdicts;
  }
  EXPECT_EQ(verdicts, 2u) << r.out;
  EXPECT_NE(r.out.find("## Side by side"), std::string::npos) << r.out;
  for (const char* f : {"report.md", "report.csv", "runa_step_time.png", "runa_utilization.png", "runb_step_time.png",
                        "runb_utilization.png"}) {
    const std::string bytes = Slurp(*dir_ + "/rep/" + f);
    EXPECT_GT(bytes.size(), 100u) << f;
    if (std::string(f).find(".png") != std::string::npos) {
      EXPECT_EQ(bytes.substr(1, 3), "PNG") << f;
    }
  }
  EXPECT_EQ(Slurp(*dir_ + "/rep/report.csv").substr(0, 19), "run,instance_group,");
}

TEST_F(LaunchAcceptance, BadHyperparameterWritesTheReasonToOutputFailure) {
  const std::string d = *dir_ + "/bad";
  fs::create_directories(d);
  std::ofstream(d + "/bad.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                                 << "[hyperparameters]\nlerning_rate = \"0.01\"\n" << Channels(*dir_);
  RunResult r = Shell("timeout 120 " + kCtrain + " launch --local-cluster bad.toml --work-dir run", d);
  EXPECT_NE(r.exit_code, 0) << r.out;
  const std::string failure = Slurp(d + "/run/algo-1/output/failure");
  EXPECT_NE(failure.find("unknown hyperparameter \"lerning_rate\" (no ctrain train flag --lerning-rate; did you mean "
                         "learning_rate?)"),
            std::string::npos)
      << failure;
  EXPECT_EQ(std::count(failure.begin(), failure.end(), '\n'), 1) << failure;  // one line
  EXPECT_NE(r.out.find("failed: algo-1 (status 1): "), std::string::npos) << r.out;
}

TEST_F(LaunchAcceptance, SigtermCheckpointsAndTheSameLaunchResumes) {
  const std::string d = *dir_ + "/term";
  fs::create_directories(d);
  std::string hps = kHps;
  hps.replace(hps.find("epochs = \"2\""), 12, "epochs = \"12\"");
  std::ofstream(d + "/t.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\n" << hps << Channels(*dir_);
  const std::vector<std::string> argv{kCtrain, "launch", "--local-cluster", d + "/t.toml", "--work-dir", d + "/run"};
  ChildProcess first;
  ASSERT_TRUE(first.Start(argv, d + "/out1", d + "/err1"));
  // Wait for training to be under way (the trainer's monitoring has step lines).
  const std::string jsonl = d + "/run/algo-1/output/data/monitor/algo-1/trainer/metrics.jsonl";
  const auto end = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < end && Slurp(jsonl).find("\"step\":40,") == std::string::npos &&
         first.running() && first.Wait(0ms) < 0)
    std::this_thread::sleep_for(100ms);
  ASSERT_NE(Slurp(jsonl).find("\"step\":40,"), std::string::npos) << first.Err();
  first.Kill(SIGTERM);
  const int st = first.Wait(120s);
  EXPECT_EQ(st, 143) << first.Err();
  const std::string failure = Slurp(d + "/run/algo-1/output/failure");
  EXPECT_NE(failure.find("interrupted by SIGTERM at step"), std::string::npos) << failure << first.Err();
  nlohmann::json index = nlohmann::json::parse(Slurp(d + "/run/algo-1/checkpoints/checkpoint"), nullptr, false);
  ASSERT_FALSE(index.is_discarded()) << first.Err();
  const int64_t saved = index["latest_step"].get<int64_t>();
  EXPECT_GE(saved, 40);
  EXPECT_LT(saved, 12 * 32);  // stopped before the end (32 steps per epoch)
  EXPECT_EQ(ProcessesMentioning(d + "/run"), std::vector<std::string>{});

  // The same launch again: resumes from the checkpoint and finishes.
  ChildProcess second;
  ASSERT_TRUE(second.Start(argv, d + "/out2", d + "/err2"));
  EXPECT_EQ(second.Wait(600s), 0) << second.Err();
  EXPECT_NE(second.Err().find("resumed from " + d + "/run/algo-1/checkpoints at step " + std::to_string(saved)),
            std::string::npos)
      << second.Err();
  nlohmann::json m = nlohmann::json::parse(Slurp(d + "/run/algo-1/output/data/metrics.json"), nullptr, false);
  ASSERT_FALSE(m.is_discarded());
  EXPECT_EQ(m["restored"], true);
  EXPECT_EQ(m["steps"].get<int64_t>(), 12 * 32);
  EXPECT_EQ(m["examples"].get<int64_t>(), 12 * 8000);
  EXPECT_LT(m["examples_this_run"].get<int64_t>(), 12 * 8000);
  EXPECT_FALSE(fs::exists(d + "/run/algo-1/output/failure"));
}

TEST_F(LaunchAcceptance, PipeChannelReadsTheFifosAndReachesTheSameAuc) {
  ASSERT_EQ(local_->exit_code, 0) << local_->out;
  const std::string d = *dir_ + "/pipe";
  fs::create_directories(d);
  std::string ch = Channels(*dir_);
  ch.replace(ch.find("mode = \"File\""), 13, "mode = \"Pipe\"");  // the train channel only
  std::ofstream(d + "/p.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\n" << kHps << ch;
  RunResult r = Shell("timeout 300 " + kCtrain + " launch --local-cluster p.toml --work-dir run", d);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Slurp(d + "/run/algo-1/input/config/inputdataconfig.json").find("\"Pipe\"") != std::string::npos, true);
  EXPECT_TRUE(fs::is_fifo(d + "/run/algo-1/input/data/train_0"));
  EXPECT_TRUE(fs::is_fifo(d + "/run/algo-1/input/data/train_1"));
  EXPECT_EQ(AucOf(d + "/run/algo-1/output/data/metrics.json"), AucOf(*dir_ + "/local.json")) << r.out;
}

TEST_F(LaunchAcceptance, TwoHomogeneousHostsTrainUnderMpirun) {
  if (Shell("command -v mpirun >/dev/null").exit_code != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string d = *dir_ + "/mpi";
  fs::create_directories(d);
  std::ofstream(d + "/m.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 2\n"
                               << "[hyperparameters]\n" << kHps << Channels(*dir_);
  RunResult r = Shell("timeout 300 " + kCtrain + " launch --local-cluster m.toml --work-dir run", d);
  if (r.out.find("built without MPI") != std::string::npos) {
    EXPECT_NE(Slurp(d + "/run/algo-1/output/failure").find("need multi-host training over MPI"), std::string::npos);
    GTEST_SKIP() << "this ctrain has no MPI: the failure names it";
  }
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("algo-2: homogeneous cluster of 2 hosts: algo-1 runs mpirun over every host"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mpirun: 2 rank(s)"), std::string::npos) << r.out;
  EXPECT_GE(AucOf(d + "/run/algo-1/output/data/metrics.json"), 0.6) << r.out;
  for (const char* rank : {"rank0", "rank1"})
    EXPECT_TRUE(fs::exists(d + "/run/algo-1/output/data/monitor/algo-1/trainer/" + std::string(rank) + "/metrics.jsonl"))
        << rank;
  EXPECT_EQ(ProcessesMentioning(d + "/run"), std::vector<std::string>{});
}

TEST_F(LaunchAcceptance, SigtermStopsAHeterogeneousClusterCleanlyAndItResumes) {
  const std::string d = *dir_ + "/hterm";
  fs::create_directories(d);
  std::string hps = kHps;
  hps.replace(hps.find("epochs = \"2\""), 12, "epochs = \"6\"");
  std::ofstream(d + "/t.toml") << "[[group]]\nname = \"data\"\ninstance_type = \"ml.c5.xlarge\"\ncount = 2\n"
                               << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\ndata_group = \"data\"\nnum_splits = \"1\"\n" << hps
                               << Channels(*dir_);
  const std::vector<std::string> argv{kCtrain, "launch", "--local-cluster", d + "/t.toml", "--work-dir", d + "/run"};
  ChildProcess first;
  ASSERT_TRUE(first.Start(argv, d + "/out1", d + "/err1"));
  const std::string jsonl = d + "/run/algo-3/output/data/monitor/algo-3/trainer/metrics.jsonl";
  const auto end = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < end && Slurp(jsonl).find("\"step\":40,") == std::string::npos &&
         first.Wait(0ms) < 0)
    std::this_thread::sleep_for(100ms);
  ASSERT_NE(Slurp(jsonl).find("\"step\":40,"), std::string::npos) << first.Err();
  first.Kill(SIGTERM);
  EXPECT_EQ(first.Wait(120s), 143) << first.Err();
  // The trainer checkpointed; the data roles stopped cleanly (exit 0: the hosts report only the signal).
  EXPECT_NE(Slurp(d + "/run/algo-3/output/failure").find("interrupted by SIGTERM at step"), std::string::npos)
      << first.Err();
  for (const char* host : {"algo-1", "algo-2"})
    EXPECT_EQ(Slurp(d + "/run/" + std::string(host) + "/output/failure"), std::string(host) + ": stopped by signal 15\n")
        << first.Err();
  EXPECT_EQ(ProcessesMentioning(d + "/run"), std::vector<std::string>{});
  nlohmann::json index = nlohmann::json::parse(Slurp(d + "/run/algo-3/checkpoints/checkpoint"), nullptr, false);
  ASSERT_FALSE(index.is_discarded()) << first.Err();
  const int64_t saved = index["latest_step"].get<int64_t>();

  ChildProcess second;
  ASSERT_TRUE(second.Start(argv, d + "/out2", d + "/err2"));
  EXPECT_EQ(second.Wait(600s), 0) << second.Err();
  EXPECT_NE(second.Err().find("resumed from " + d + "/run/algo-3/checkpoints at step " + std::to_string(saved)),
            std::string::npos)
      << second.Err();
  nlohmann::json m = nlohmann::json::parse(Slurp(d + "/run/algo-3/output/data/metrics.json"), nullptr, false);
  ASSERT_FALSE(m.is_discarded());
  EXPECT_EQ(m["steps"].get<int64_t>(), 6 * 32);
  EXPECT_EQ(m["examples"].get<int64_t>(), 6 * 8000);  // every example of every epoch, once
  EXPECT_EQ(ProcessesMentioning(d + "/run"), std::vector<std::string>{});
}

}  // namespace
}  // namespace ctrain::testing
