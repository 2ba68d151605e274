// End-to-end: the real build/ctrain binary's argument handling (trial/10) and
// its OpenMP wait policy (issue #7 item 14, issue #24 item 1).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;

// A thread spinning on each CPU of this process's affinity mask, for the scope: to a child process, every
// CPU it may use is busy.
class BusyThreads {
 public:
  BusyThreads() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &set)) continue;
      threads_.emplace_back([this, c] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  ~BusyThreads() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Runs build/ctrain with `env_and_args`; "env VAR=x ... @ ARGS" sets variables for it.
RunResult RunWithEnv(const std::string& env_and_args) {
  const std::string cmd = env_and_args.rfind("env ", 0) == 0
                              ? env_and_args.substr(0, env_and_args.find(" @ ")) + " " + CTRAIN_BINARY + " " +
                                    env_and_args.substr(env_and_args.find(" @ ") + 3)
                              : std::string(CTRAIN_BINARY) + " " + env_and_args;
  return Shell(cmd);
}

class CliArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_cli_args_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    data_ = (dir_ / "tr.libsvm").string();
    RunResult s = RunWithEnv("synth --rows 64 --format libsvm --feature-size 1000 -o " + data_);
    ASSERT_EQ(s.exit_code, 0) << s.out;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A 2-step training run on the 64 synthetic rows, with `flags` first.
  RunResult Train(const std::string& flags) {
    return RunWithEnv("train " + flags + " --train " + data_ +
               " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none");
  }
  fs::path dir_;
  std::string data_;
};

TEST_F(CliArgsTest, BareSwitchBeforeAnotherFlagTrains) {
  // trial/10: was "Could not convert: --batch-norm = --train".
  RunResult r = Train("--batch-norm");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(" bn l2="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ctrain: done: 2 steps, 64 examples"), std::string::npos) << r.out;
}

// The "done" line is one line, its validation figures included (they were written after a newline).
TEST_F(CliArgsTest, TheDoneLineIsOneLine) {
  RunResult r = Train("--valid " + data_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t at = r.out.find("ctrain: done: 2 steps, 64 examples");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(", valid auc "), std::string::npos) << line;
  EXPECT_NE(line.find(" logloss "), std::string::npos) << line;
}

TEST_F(CliArgsTest, SwitchFormsAgree) {
  for (const char* form : {"--batch-norm=true", "--batch-norm true", "--batch-norm yes"}) {
    RunResult r = Train(form);
    ASSERT_EQ(r.exit_code, 0) << form << "\n" << r.out;
    EXPECT_NE(r.out.find(" bn l2="), std::string::npos) << form << "\n" << r.out;
  }
  for (const char* form : {"--batch-norm false", "--batch-norm=false", "--batch-norm 0"}) {
    RunResult r = Train(form);
    ASSERT_EQ(r.exit_code, 0) << form << "\n" << r.out;
    EXPECT_EQ(r.out.find(" bn l2="), std::string::npos) << form << "\n" << r.out;
  }
}

TEST_F(CliArgsTest, DropRemainderBareAndWithValue) {
  // 64 rows, batch 48: dropping the remainder leaves 1 step, keeping it 2.
  for (const char* form : {"--drop-remainder", "--drop-remainder true", "--drop_remainder=true"}) {
    RunResult r = RunWithEnv("train " + std::string(form) + " --train " + data_ +
                      " --feature-size 1000 --deep-layers 8 --batch-size 48 --progress none");
    ASSERT_EQ(r.exit_code, 0) << form << "\n" << r.out;
    EXPECT_NE(r.out.find("done: 1 steps, 48 examples"), std::string::npos) << form << "\n" << r.out;
  }
  RunResult r = RunWithEnv("train --drop-remainder false --train " + data_ +
                    " --feature-size 1000 --deep-layers 8 --batch-size 48 --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("done: 2 steps, 64 examples"), std::string::npos) << r.out;
}

TEST_F(CliArgsTest, InspectJsonThenFiles) {
  RunResult r = RunWithEnv("inspect --json " + data_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"records\":64"), std::string::npos) << r.out;
}

TEST_F(CliArgsTest, UnknownFlagSuggestsTheClosestInOrder) {
  RunResult r = RunWithEnv("train --train " + data_ + " --lerning-rate 0.1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ctrain train: unknown flag --lerning-rate (value '0.1'); did you mean --learning-rate?"),
            std::string::npos)
      << r.out;
}

TEST_F(CliArgsTest, UnknownCommandListsTheCommands) {
  RunResult r = RunWithEnv("fit --train " + data_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ctrain: unknown command 'fit'; the commands are inspect, convert, synth, train, eval, "
                       "predict, data-service, ps, export, launch, report; did you mean 'train'?"),
            std::string::npos)
      << r.out;
  r = RunWithEnv("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("a command is required: inspect, convert"), std::string::npos) << r.out;
}

TEST_F(CliArgsTest, HelpShowsSwitchesAsTrueFalse) {
  RunResult r = RunWithEnv("train --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--batch-norm,--batch_norm [true|false]=false"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("BOOLEAN"), std::string::npos) << r.out;
}

// --deterministic (item 15): refuses hogwild; autotune then measures no hogwild layout.
TEST_F(CliArgsTest, DeterministicRefusesHogwild) {
  RunResult r = Train("--deterministic --hogwild 2");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--deterministic is not supported with hogwild: hogwild replicas race on the embedding tables"),
            std::string::npos)
      << r.out;
  r = Train("--deterministic --towers 2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// Towers and hogwild together: the refusal gives that pair's reason (it gave the parameter servers' one).
TEST_F(CliArgsTest, TowersWithHogwildSaysWhy) {
  RunResult r = Train("--towers 2 --hogwild 2");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--towers is not supported with hogwild: --towers and --hogwild are two ways to run replicas "
                       "in one process"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("parameter"), std::string::npos) << r.out;
}

TEST_F(CliArgsTest, AutotuneTableMarksHogwildAndDeterministicLeavesItOut) {
  RunResult r = Train("--input-mode memory --autotune --autotune-steps 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("the same layout without autotune: --intra-op-threads "), std::string::npos) << r.out;
  // Hogwild rows exist on >= 2 CPUs and are marked; a hogwild winner gets the note.
  const bool hogwild_won = r.out.find("picked hogwild") != std::string::npos;
  EXPECT_EQ(hogwild_won, r.out.find("--hogwild 2 --mixed-precision") != std::string::npos) << r.out;
  r = Train("--input-mode memory --autotune --autotune-steps 1 --deterministic");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("(not deterministic)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: hogwild layouts not measured (--deterministic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hogwild=0"), std::string::npos) << r.out;
}

// Explicit thread flags are kept under --autotune, and the note says so.
TEST_F(CliArgsTest, AutotuneKeepsExplicitThreadFlags) {
  RunResult r = Train("--input-mode memory --autotune --autotune-steps 1 --intra-op-threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: kept as given: --intra-op-threads 1; measured only the other settings"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("threads: intra_op=1 "), std::string::npos) << r.out;
  r = Train("--input-mode memory --autotune --autotune-steps 1 --towers 1 --hogwild 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("(not deterministic)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("towers=1 hogwild=0"), std::string::npos) << r.out;
}

TEST_F(CliArgsTest, AutotuneWithMixedPrecisionAutoMeasuresBf16OrSaysWhyNot) {
  RunResult r = Train("--input-mode memory --autotune --autotune-steps 1 --deterministic --mixed-precision auto");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const bool bf16_rows = r.out.find("  bf16  ") != std::string::npos;
  const bool said_why = r.out.find("note: bf16 mixed precision not measured: bf16 GEMM needs") != std::string::npos;
  EXPECT_NE(bf16_rows, said_why) << r.out;
  EXPECT_NE(r.out.find("  f32  "), std::string::npos) << r.out;
}

// train/eval/predict choose how their OpenMP threads wait from a 100 ms look at their CPUs: with every CPU
// taken by another thread they sleep (libgomp's OMP_WAIT_POLICY PASSIVE, spin count 0), and the run line says
// why; the user's own setting wins (no re-exec).
TEST_F(CliArgsTest, TrainingChoosesItsOpenMPWait) {
  const std::string plain = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u CTRAIN_OMP_WAIT OMP_DISPLAY_ENV=verbose @ ";
  {
    BusyThreads busy;  // a spinning thread pinned to each CPU this process may use
    RunResult r = RunWithEnv(plain + "train --help");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("OMP_WAIT_POLICY = 'PASSIVE'"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << r.out;
    r = RunWithEnv(plain + "train --max-steps 1 --train " + data_ +
                   " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    // Busy CPUs, or (the suite runs in parallel) another ctrain run seen by its lock, alive or arriving
    // during the look.
    EXPECT_TRUE(r.out.find(" wait=PASSIVE (auto: other processes used ") != std::string::npos ||
                r.out.find(" wait=PASSIVE (auto: another ctrain process holds /tmp/ctrain-openmp-wait.lock)") !=
                    std::string::npos ||
                r.out.find(" wait=PASSIVE (auto: another ctrain process started at the same time "
                           "(/tmp/ctrain-openmp-wait.lock))") != std::string::npos)
        << r.out;
  }
  {  // another ctrain run alive (this test holds the lock as every run does): no spinning beside it
    const int lock = ::open("/tmp/ctrain-openmp-wait.lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(lock, 0);
    ASSERT_EQ(::flock(lock, LOCK_SH), 0);
    RunResult r = RunWithEnv(plain + "train --max-steps 1 --train " + data_ +
                             " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none");
    ::close(lock);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(" wait=PASSIVE (auto: another ctrain process holds /tmp/ctrain-openmp-wait.lock)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("OMP_WAIT_POLICY = 'PASSIVE'"), std::string::npos) << r.out;
  }
  // Without the busy threads the choice depends on the machine (the suite runs in parallel), but the run
  // line names the policy libgomp was given.
  RunResult r = RunWithEnv(plain + "train --max-steps 1 --train " + data_ +
                           " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const bool active = r.out.find(" wait=ACTIVE (auto: ") != std::string::npos;
  const bool passive = r.out.find(" wait=PASSIVE (auto: ") != std::string::npos;
  EXPECT_NE(active, passive) << r.out;
  EXPECT_NE(r.out.find(active ? "OMP_WAIT_POLICY = 'ACTIVE'" : "OMP_WAIT_POLICY = 'PASSIVE'"), std::string::npos)
      << r.out;
  // Two runs started together (like the ranks of one job on a host) never both spin: alone, each would.
  {
    const std::string one = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u CTRAIN_OMP_WAIT " +
                            std::string(CTRAIN_BINARY) + " train --max-steps 1 --train " + data_ +
                            " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none";
    RunResult both = Shell(one + " > " + (dir_ / "a.log").string() + " 2>&1 & " + one + " > " +
                           (dir_ / "b.log").string() + " 2>&1; s=$?; wait $! && exit $s");
    ASSERT_EQ(both.exit_code, 0) << both.out;
    int spinning = 0;
    for (const char* f : {"a.log", "b.log"}) {
      std::ifstream in(dir_ / f);
      const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ASSERT_NE(log.find(" wait="), std::string::npos) << log;
      spinning += log.find(" wait=ACTIVE (auto: ") != std::string::npos;
    }
    EXPECT_LE(spinning, 1);
  }
  // The user's setting wins: no re-exec.
  r = RunWithEnv("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1234 OMP_DISPLAY_ENV=verbose @ train --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("GOMP_SPINCOUNT = '1234'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << r.out;
  r = RunWithEnv("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive @ train --max-steps 1 --train " + data_ +
                 " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(" wait=passive (OMP_WAIT_POLICY)"), std::string::npos) << r.out;
}

// --autotune measures the other OpenMP wait policy through a re-exec carrying CTRAIN_AUTOTUNE_WAIT
// (train/autotune.h). The sample that allows the trial depends on the machine, so these runs start from the
// record the first process would leave: the later processes' paths are deterministic.
TEST_F(CliArgsTest, AutotuneCarriesTheWaitPolicyTrialAcrossItsReexec) {
  const std::string base = "env -u GOMP_SPINCOUNT -u CTRAIN_OMP_WAIT OMP_DISPLAY_ENV=verbose ";
  const std::string flags = " @ train --input-mode memory --autotune --autotune-steps 1 --max-steps 1 --train " +
                            data_ + " --feature-size 1000 --deep-layers 8 --batch-size 32 --progress none";
  {  // decided: no measuring, the carried layout and policy train
    RunResult r = RunWithEnv(base + "OMP_WAIT_POLICY=PASSIVE CTRAIN_AUTOTUNE_WAIT='decided PASSIVE 900 800 1 2 0 f32'" +
                             flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out.find("measuring thread layouts"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("autotune: wait policy PASSIVE; the same without autotune: OMP_WAIT_POLICY=PASSIVE with "
                         "--intra-op-threads 1 --towers 2 --mixed-precision f32"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("threads: intra_op=1 towers=2 hogwild=0"), std::string::npos) << r.out;
  }
  {  // a trial this process loses (the carried ACTIVE figure is out of reach): it re-executes with ACTIVE
    RunResult r = RunWithEnv(base + "OMP_WAIT_POLICY=PASSIVE CTRAIN_AUTOTUNE_WAIT='trial ACTIVE 1e15 0 1 1 0 f32'" +
                             flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("autotune: the winning layout with OMP_WAIT_POLICY=ACTIVE 1000000000000000 examples/s, "
                         "with PASSIVE "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("autotune: re-executing with OMP_WAIT_POLICY=ACTIVE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << r.out;  // libgomp's, after the exec
    EXPECT_NE(r.out.find(" wait=ACTIVE (auto: autotune: 1000000000000000 examples/s against "), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("threads: intra_op=1 towers=1 hogwild=0"), std::string::npos) << r.out;
  }
  {  // a trial this process wins: it trains with its own policy, no exec
    RunResult r = RunWithEnv(base + "OMP_WAIT_POLICY=PASSIVE CTRAIN_AUTOTUNE_WAIT='trial ACTIVE 0.5 0 2 1 0 f32'" +
                             flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out.find("re-executing"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("autotune: wait policy PASSIVE; the same without autotune: OMP_WAIT_POLICY=PASSIVE with "
                         "--intra-op-threads 2 --towers 1"),
              std::string::npos)
        << r.out;
  }
  {  // a record that does not parse, or one without --autotune, is an error naming the variable
    RunResult r = RunWithEnv(base + "OMP_WAIT_POLICY=PASSIVE CTRAIN_AUTOTUNE_WAIT='trial SPIN 1 0 1 1 0 f32'" + flags);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("CTRAIN_AUTOTUNE_WAIT='trial SPIN 1 0 1 1 0 f32': policy 'SPIN' is not ACTIVE or PASSIVE"),
              std::string::npos)
        << r.out;
    r = RunWithEnv(base + "OMP_WAIT_POLICY=PASSIVE CTRAIN_AUTOTUNE_WAIT='decided PASSIVE 9 8 1 1 0 f32' @ train "
                   "--max-steps 1 --train " + data_ + " --feature-size 1000 --deep-layers 8 --batch-size 32");
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("CTRAIN_AUTOTUNE_WAIT is set without --autotune"), std::string::npos) << r.out;
  }
  {  // the user's own policy: nothing to measure, and the run says why
    RunResult r = RunWithEnv(base + "OMP_WAIT_POLICY=passive" + flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("autotune: the OpenMP wait policy is not measured: the policy was not chosen from an "
                         "idle/busy sample (OMP_WAIT_POLICY or GOMP_SPINCOUNT set"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
