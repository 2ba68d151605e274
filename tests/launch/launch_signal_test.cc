// `ctrain launch --local-cluster` stopped by a signal to its whole process
// group, as Ctrl-C in a terminal or `timeout` send it: every role must get
// exactly one stop (the launcher's forwarded SIGTERM), so the trainer writes a
// checkpoint at the current step, output/failure says so, and the local
// cluster exits 128 + the signal (docs/launch.md). Synthetic data, ~seconds.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "testing/process.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

using namespace std::chrono_literals;

TEST(LaunchSignal, SigintToTheProcessGroupCheckpointsOnceAndExits130) {
  const std::string d = TestTempDir("launch_signal", "group_sigint");
  ASSERT_EQ(RunCtrain("synth --rows 2000 -o " + d + "/tr.tfrecord").exit_code, 0);
  std::ofstream(d + "/t.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\nepochs = \"500\"\nbatch_size = \"64\"\nprogress = \"log\"\n"
                               << "intra_op_parallelism_threads = \"1\"\n"
                               << "[channels.train]\nmode = \"File\"\nfiles = [\"" << d << "/tr.tfrecord\"]\n";
  // setsid(1) execs in place (the forked child is no group leader): the launcher leads a new
  // process group, like a shell job; the group signal below reaches the launcher and whatever
  // else is in its group.
  ChildProcess run;
  ASSERT_TRUE(run.Start({"/usr/bin/setsid", kCtrain, "launch", "--local-cluster", d + "/t.toml", "--work-dir",
                         d + "/run"},
                        d + "/out", d + "/err"));
  const std::string jsonl = d + "/run/algo-1/output/data/monitor/algo-1/trainer/metrics.jsonl";
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end && Slurp(jsonl).find("\"step\":20,") == std::string::npos &&
         run.Wait(0ms) < 0)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(Slurp(jsonl).find("\"step\":20,"), std::string::npos) << run.Err();
  ASSERT_EQ(::getpgid(run.pid()), run.pid());
  ASSERT_EQ(::kill(-run.pid(), SIGINT), 0);
  EXPECT_EQ(run.Wait(60s), 128 + SIGINT) << run.Err();
  const std::string err = run.Err();
  // One stop each: the trainer says it stops after the current step exactly once and checkpoints.
  size_t notes = 0;
  for (size_t p = 0; (p = err.find("[trainer] ctrain: SIGTERM received", p)) != std::string::npos; ++p) ++notes;
  EXPECT_EQ(notes, 1u) << err;
  EXPECT_EQ(err.find("] ctrain: SIGINT received"), std::string::npos) << err;  // no role saw the group's SIGINT
  const std::string failure = Slurp(d + "/run/algo-1/output/failure");
  EXPECT_NE(failure.find("interrupted by SIGTERM at step"), std::string::npos) << failure << err;
  nlohmann::json index = nlohmann::json::parse(Slurp(d + "/run/algo-1/checkpoints/checkpoint"), nullptr, false);
  ASSERT_FALSE(index.is_discarded()) << err;
  EXPECT_GE(index["latest_step"].get<int64_t>(), 20);
  EXPECT_NE(err.find("failed: algo-1 (status 143): "), std::string::npos) << err;
  // Each process says what it does with the stop (the launchers do not "stop after the current step").
  EXPECT_NE(err.find("ctrain: SIGINT received: stopping every host (their trainers checkpoint first)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("[algo-1] ctrain: SIGTERM received: stopping every role (the trainer checkpoints first)"),
            std::string::npos)
      << err;
  fs::remove_all(d);
}

// The container's init: SageMaker runs `train` (scripts/train execs ctrain launch) as PID 1 of the
// container's PID namespace, where a signal without a handler is dropped by the kernel and orphans are
// re-parented to the launcher. Under `unshare --pid --fork`, SIGTERM to PID 1 must stop every role (the
// trainer checkpoints), and the launcher exits 143 with no process left behind.
TEST(LaunchSignal, AsPid1OfItsPidNamespaceSigtermCheckpointsAndExits143) {
  const std::string d = TestTempDir("launch_signal", "pid1");
  if (Shell("unshare --pid --fork --mount-proc true").exit_code != 0)
    GTEST_SKIP() << "unshare --pid is not permitted here (needs CAP_SYS_ADMIN)";
  ASSERT_EQ(RunCtrain("synth --rows 2000 -o " + d + "/tr.tfrecord").exit_code, 0);
  std::ofstream(d + "/t.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\nepochs = \"500\"\nbatch_size = \"64\"\nprogress = \"log\"\n"
                               << "intra_op_parallelism_threads = \"1\"\n"
                               << "[channels.train]\nmode = \"File\"\nfiles = [\"" << d << "/tr.tfrecord\"]\n";
  // scripts/train as SageMaker runs it, with build/ctrain first on PATH.
  const std::string bin_dir = fs::path(kCtrain).parent_path().string();
  const std::string script = std::string(CTRAIN_SOURCE_DIR) + "/scripts/train";
  ChildProcess run;
  ASSERT_TRUE(run.Start({"/usr/bin/env", "PATH=" + bin_dir + ":/usr/bin:/bin", "unshare", "--pid", "--fork",
                         "--mount-proc", "--kill-child", "/bin/sh", script, "--local-cluster", d + "/t.toml",
                         "--work-dir", d + "/run"},
                        d + "/out", d + "/err"));
  const std::string jsonl = d + "/run/algo-1/output/data/monitor/algo-1/trainer/metrics.jsonl";
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end && Slurp(jsonl).find("\"step\":20,") == std::string::npos &&
         run.Wait(0ms) < 0)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(Slurp(jsonl).find("\"step\":20,"), std::string::npos) << run.Err();
  // PID 1 of the namespace: unshare's child.
  const std::string children = Slurp("/proc/" + std::to_string(run.pid()) + "/task/" + std::to_string(run.pid()) +
                                     "/children");
  const pid_t init = static_cast<pid_t>(std::atol(children.c_str()));
  ASSERT_GT(init, 0) << "unshare has no child: " << children;
  ASSERT_NE(Slurp("/proc/" + std::to_string(init) + "/status").find("NSpid:\t" + std::to_string(init) + "\t1\n"),
            std::string::npos)
      << Slurp("/proc/" + std::to_string(init) + "/status");
  ASSERT_EQ(::kill(init, SIGTERM), 0);
  EXPECT_EQ(run.Wait(60s), 128 + SIGTERM) << run.Err();
  const std::string err = run.Err();
  EXPECT_NE(err.find("[trainer] ctrain: SIGTERM received"), std::string::npos) << err;
  nlohmann::json index = nlohmann::json::parse(Slurp(d + "/run/algo-1/checkpoints/checkpoint"), nullptr, false);
  ASSERT_FALSE(index.is_discarded()) << err;
  EXPECT_GE(index["latest_step"].get<int64_t>(), 20);
  fs::remove_all(d);
}

}  // namespace
}  // namespace ctrain::testing
