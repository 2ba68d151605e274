// Case B51: a heterogeneous SageMaker job whose train channel is given to the data group
// only (InstanceGroupNames ["data"]): the trainer host's inputdataconfig.json does not list
// it (or lists it with no local directory), and /opt/ml/input/data/train is absent there.
// The trainer must take the channel's path (the same on every SageMaker host; here the data
// host's tree, through SM_CHANNEL_TRAIN, since each simulated host has its own root) and the
// dispatcher expands it on its host (docs/launch.md#roles).
// Real processes: one `ctrain launch --sm-root` per host on 127.0.0.1, tiny synthetic data
// (`ctrain synth`), free ports, bounded waits; every host must exit 0 and the model must be
// on the trainer host.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "ctrain/launch/local_cluster.h"
#include "testing/process.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kResources[] = R"({"current_host": "HOST", "current_group_name": "GROUP",
  "hosts": ["algo-1", "algo-2", "algo-3"], "instance_groups": [
  {"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1", "algo-2"]},
  {"instance_group_name": "train", "instance_type": "ml.m5.xlarge", "hosts": ["algo-3"]}]})";
constexpr char kHps[] = R"({"data_group": "\"data\"", "epochs": "1", "batch_size": "64", "seed": "3",
  "intra_op_parallelism_threads": "1", "progress": "\"log\""})";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p; (p = s.find(from)) != std::string::npos;) s.replace(p, from.size(), to);
  return s;
}

class HeterogeneousChannels : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = TestTempDir("launch_hetero_channels", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(RunCtrain("synth --rows 600 --format libsvm -o " + d_ + "/tr.libsvm").exit_code, 0);
    ASSERT_EQ(RunCtrain("synth --rows 200 --row-offset 600 --format libsvm -o " + d_ + "/va.libsvm").exit_code, 0);
  }
  void TearDown() override { fs::remove_all(d_); }

  std::string Root(const std::string& host) const { return d_ + "/" + host; }

  // Lays out `host`'s /opt/ml tree: the config files and, for each channel in `local_files`,
  // input/data/<channel>/ with a copy of that file.
  void Layout(const std::string& host, const std::string& group, const std::string& inputdataconfig,
              const std::map<std::string, std::string>& local_files) {
    const std::string r = Root(host);
    fs::create_directories(r + "/input/config");
    fs::create_directories(r + "/input/data");
    std::ofstream(r + "/input/config/resourceconfig.json")
        << Replace(Replace(kResources, "HOST", host), "GROUP", group);
    std::ofstream(r + "/input/config/hyperparameters.json") << kHps;
    std::ofstream(r + "/input/config/inputdataconfig.json") << inputdataconfig;
    for (const auto& [channel, file] : local_files) {
      fs::create_directories(r + "/input/data/" + channel);
      fs::copy_file(file, r + "/input/data/" + channel + "/" + fs::path(file).filename().string());
    }
  }

  // Starts every host's `ctrain launch` (the trainer with SM_CHANNEL_TRAIN = algo-1's channel
  // directory) and waits for all; returns their exit statuses (algo-1, algo-2, algo-3).
  std::vector<int> RunAll(const std::map<std::string, std::string>& addresses = {
                              {"algo-1", "127.0.0.1"}, {"algo-2", "127.0.0.1"}, {"algo-3", "127.0.0.1"}}) {
    StatusOr<std::vector<int>> ports = launch::FreePorts(3);
    EXPECT_TRUE(ports.ok()) << ports.status().ToString();
    if (!ports.ok()) return {};
    std::vector<std::unique_ptr<ChildProcess>> hosts;
    for (int i = 1; i <= 3; ++i) {
      const std::string h = "algo-" + std::to_string(i);
      std::vector<std::string> argv{"/usr/bin/env"};
      if (h == "algo-3") argv.push_back("SM_CHANNEL_TRAIN=" + Root("algo-1") + "/input/data/train");
      argv.insert(argv.end(), {kCtrain, "launch", "--sm-root", Root(h), "--dispatcher-port",
                               std::to_string((*ports)[0]), "--worker-port", std::to_string((*ports)[i == 3 ? 1 : i]),
                               "--monitor-interval-ms", "200", "--mpi-host-wait-s", "0"});
      for (const auto& [n, a] : addresses) argv.push_back("--host-address=" + n + "=" + a);
      hosts.push_back(std::make_unique<ChildProcess>());
      EXPECT_TRUE(hosts.back()->Start(argv, d_ + "/" + h + ".out", d_ + "/" + h + ".err"));
    }
    std::vector<int> rc;
    for (auto& p : hosts) rc.push_back(p->Wait(180s));
    for (size_t i = 0; i < hosts.size(); ++i) logs_[i] = hosts[i]->Err();
    return rc;
  }

  std::string d_;
  std::string logs_[3];
};

// B51 as reported: the trainer host's inputdataconfig.json is {} (SageMaker leaves a channel
// restricted to another group out), File mode on the data hosts.
TEST_F(HeterogeneousChannels, TrainChannelOnTheDataGroupOnlyTrainsWithoutALocalCopy) {
  const std::string data_idc = R"({"train": {"TrainingInputMode": "File", "InstanceGroupNames": ["data"]}})";
  Layout("algo-1", "data", data_idc, {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-2", "data", data_idc, {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-3", "train", "{}", {});
  ASSERT_FALSE(fs::exists(Root("algo-3") + "/input/data/train"));
  const std::vector<int> rc = RunAll();
  ASSERT_EQ(rc, (std::vector<int>{0, 0, 0})) << logs_[0] << "\n-----\n" << logs_[2];
  const std::string& t = logs_[2];
  EXPECT_NE(t.find("algo-3: channel \"train\" is not given to this host (instance group train): the data hosts read "
                   "it; the dispatcher expands " + Root("algo-1") + "/input/data/train on its host"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("algo-3: no validation channel on this host: training without validation"), std::string::npos) << t;
  EXPECT_NE(t.find(" train --train " + Root("algo-1") + "/input/data/train "), std::string::npos) << t;
  // The dispatcher expanded algo-1's channel directory: its one file; 600 examples trained.
  EXPECT_NE(logs_[0].find("registered: 1 file(s)"), std::string::npos) << logs_[0];
  EXPECT_NE(t.find("600 examples"), std::string::npos) << t;
  EXPECT_TRUE(fs::exists(Root("algo-3") + "/model/checkpoint")) << t;
  EXPECT_FALSE(fs::exists(Root("algo-1") + "/model/checkpoint"));
  for (const char* h : {"algo-1", "algo-2", "algo-3"}) EXPECT_FALSE(fs::exists(Root(h) + "/output/failure")) << h;
}

// The second form of B51: the trainer host lists the channel (FastFile here) but has no
// directory for it; its own validation channel is read locally (the trainer validates).
TEST_F(HeterogeneousChannels, ListedTrainChannelWithoutADirectoryAndALocalValidationChannel) {
  const std::string data_idc = R"({"train": {"TrainingInputMode": "FastFile", "InstanceGroupNames": ["data"]},
    "validation": {"TrainingInputMode": "File", "InstanceGroupNames": ["train"]}})";
  Layout("algo-1", "data", R"({"train": {"TrainingInputMode": "FastFile", "InstanceGroupNames": ["data"]}})",
         {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-2", "data", R"({"train": {"TrainingInputMode": "FastFile", "InstanceGroupNames": ["data"]}})",
         {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-3", "train", data_idc, {{"validation", d_ + "/va.libsvm"}});
  const std::vector<int> rc = RunAll();
  ASSERT_EQ(rc, (std::vector<int>{0, 0, 0})) << logs_[0] << "\n-----\n" << logs_[2];
  const std::string& t = logs_[2];
  EXPECT_NE(t.find(" train --train " + Root("algo-1") + "/input/data/train --valid " + Root("algo-3") +
                   "/input/data/validation/va.libsvm "),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("no validation channel"), std::string::npos) << t;
  nlohmann::json m = nlohmann::json::parse(Slurp(Root("algo-3") + "/output/data/metrics.json"), nullptr, false);
  ASSERT_TRUE(m.is_object()) << t;
  ASSERT_TRUE(m.contains("auc") && m["auc"].is_number()) << m.dump();
  EXPECT_GT(m["auc"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(Root("algo-3") + "/model/checkpoint")) << t;
}

// Each host's servers listen on its own address and the worker advertises it (case B54's
// addresses): algo-1 at 127.0.0.2 (dispatcher and worker), algo-2 at 127.0.0.3, the trainer
// algo-3 at 127.0.0.4 dials 127.0.0.2. All loopback: no token needed.
TEST_F(HeterogeneousChannels, EachHostListensOnItsOwnAddress) {
  const std::string data_idc = R"({"train": {"TrainingInputMode": "File", "InstanceGroupNames": ["data"]}})";
  Layout("algo-1", "data", data_idc, {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-2", "data", data_idc, {{"train", d_ + "/tr.libsvm"}});
  Layout("algo-3", "train", "{}", {});
  const std::vector<int> rc = RunAll({{"algo-1", "127.0.0.2"}, {"algo-2", "127.0.0.3"}, {"algo-3", "127.0.0.4"}});
  ASSERT_EQ(rc, (std::vector<int>{0, 0, 0})) << logs_[0] << "\n-----\n" << logs_[1] << "\n-----\n" << logs_[2];
  EXPECT_NE(logs_[0].find("algo-1: dispatcher listening on 127.0.0.2:"), std::string::npos) << logs_[0];
  EXPECT_NE(logs_[0].find("--bind=127.0.0.2 --worker-address=127.0.0.2:"), std::string::npos) << logs_[0];
  EXPECT_NE(logs_[1].find("--bind=127.0.0.3 --worker-address=127.0.0.3:"), std::string::npos) << logs_[1];
  // (The "listening on" lines go to stdout; the workers' registrations say where they are reached.)
  EXPECT_NE(logs_[0].find("[data-worker] ctrain: worker: registered with the dispatcher 127.0.0.2:"), std::string::npos)
      << logs_[0];
  EXPECT_NE(logs_[1].find(" as 127.0.0.3:"), std::string::npos) << logs_[1];
  EXPECT_NE(logs_[2].find("--data-service=127.0.0.2:"), std::string::npos) << logs_[2];
  EXPECT_EQ(logs_[0].find("0.0.0.0"), std::string::npos) << logs_[0];
  EXPECT_TRUE(fs::exists(Root("algo-3") + "/model/checkpoint")) << logs_[2];
}

// A data host whose address is not loopback: without a token its servers refuse to start
// (output/failure names why); its view (--print-environment) shows where it would listen.
TEST_F(HeterogeneousChannels, ADataHostBeyondLoopbackNeedsATokenOrInsecure) {
  const std::string data_idc = R"({"train": {"TrainingInputMode": "File", "InstanceGroupNames": ["data"]}})";
  Layout("algo-1", "data", data_idc, {{"train", d_ + "/tr.libsvm"}});
  const std::string flags = " --sm-root " + Root("algo-1") + " --host-address algo-1=10.255.255.1 --dispatcher-port 1";
  RunResult view = Shell("env -u CTRAIN_SERVICE_TOKEN " + kCtrain + " launch --print-environment" + flags);
  ASSERT_EQ(view.exit_code, 0) << view.out;
  nlohmann::json v = nlohmann::json::parse(view.out.substr(view.out.find('{')), nullptr, false);
  ASSERT_TRUE(v.is_object()) << view.out;
  EXPECT_EQ(v["role"], "data");
  EXPECT_EQ(v["bind_address"], "10.255.255.1");
  EXPECT_EQ(v["dispatcher"], "10.255.255.1:1");
  RunResult r = Shell("env -u CTRAIN_SERVICE_TOKEN timeout 60 " + kCtrain + " launch" + flags);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(Slurp(Root("algo-1") + "/output/failure").rfind(
                "algo-1 dispatcher exited with status 1: FailedPrecondition: refusing to listen on 10.255.255.1 beyond "
                "loopback without authentication",
                0),
            0u)
      << Slurp(Root("algo-1") + "/output/failure") << r.out;
}

}  // namespace
}  // namespace ctrain::testing
