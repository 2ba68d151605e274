// End-to-end process safety of the ctrain binary (issue #7 items 8-13): FIFOs
// that never get a writer or stall (B32), one training per model dir
// (trial/02), synth --row-offset (trial/04), read-only model dirs (trial/05),
// interrupts leave no temporary files (trial/10) and a training interrupt
// checkpoints and resumes exactly (trial/11).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/train/checkpoint.h"
#include "ctrain/train/model_dir_lock.h"

#include "cli_harness.h"
#include "testing/fifo.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrain::testing;
using Clock = std::chrono::steady_clock;

// The status a shell would report: the exit code, or 128 + the signal.
int ShellCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs `cmd` with sh -c (stdout + stderr captured).
RunResult Sh(const std::string& cmd) { return Shell(cmd); }

// A ctrain process with default signal dispositions and its stdout+stderr on a pipe.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string out;

  static Child Start(const std::vector<std::string>& args, const std::string& cwd) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    std::vector<std::string> all = {kCtrain};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    Child c;
    c.pid = ::fork();
    if (c.pid == 0) {
      for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);  // ctest may run in the background
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(p[1], 1);
      ::dup2(p[1], 2);
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(p[1]);
    c.out_fd = p[0];
    return c;
  }
  // Reads output until it contains `needle` (true) or EOF / `seconds` pass (false).
  bool ReadUntil(const std::string& needle, double seconds) {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (out.find(needle) == std::string::npos) {
      const int left = static_cast<int>(std::chrono::duration<double, std::milli>(end - Clock::now()).count());
      if (left <= 0) return false;
      pollfd pf{out_fd, POLLIN, 0};
      if (::poll(&pf, 1, left) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(out_fd, buf, sizeof buf);
      if (n <= 0) return out.find(needle) != std::string::npos;
      out.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  // Reads to EOF and reaps; returns the shell code.
  int Finish() {
    ReadUntil(std::string(1, '\0'), 60);
    ::close(out_fd);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return ShellCode(status);
  }
};

using ctrain::testing::OpenFifoWriter;

// Names in `dir` containing ".tmp." (leftover temporaries).
std::vector<std::string> Temporaries(const fs::path& dir) {
  std::vector<std::string> t;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) t.push_back(e.path().string());
  return t;
}

class ProcessSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrain_process_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override {
    (void)std::system(("chmod -R u+w '" + dir_.string() + "' 2>/dev/null").c_str());
    fs::remove_all(dir_);
  }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  std::string C() const { return "cd '" + dir_.string() + "' && " + kCtrain; }
  // Small LibSVM training data (synth, 0-based ids).
  void Synth(const std::string& name, int rows) {
    RunResult r = Sh(C() + " synth --rows " + std::to_string(rows) + " --format libsvm -o " + name);
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  fs::path dir_;
};

constexpr const char* kSmallModel =
    " --feature-size 117581 --deep-layers 16,8 --embedding-size 4 --batch-size 64 --intra-op-threads 1"
    " --num-parallel-calls 1";

// ---- B32: a FIFO that never gets a writer, in every command ----
TEST_F(ProcessSafetyTest, B32WriterlessFifoTimesOutInEveryCommand) {
  Synth("s.libsvm", 200);
  ASSERT_EQ(Sh(C() + " train --train s.libsvm" + kSmallModel + " --max-steps 2 --model-dir m --progress none").exit_code, 0);
  ASSERT_EQ(::mkdir(P("ch").c_str(), 0755), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train_channel", "train --progress none --pipe-timeout-ms 1200 --train pipe:ch/train"},
      {"train_fifo", "train --progress none --pipe-timeout-ms 1200 --train train_fifo"},
      {"train_memory", "train --progress none --input-mode memory --pipe-timeout-ms 1200 --train train_memory"},
      {"eval", "eval --model-dir m --pipe-timeout-ms 1200 --input eval"},
      {"predict", "predict --model-dir m --pipe-timeout-ms 1200 --input predict -o p.txt"},
      {"inspect", "inspect --pipe-timeout-ms 1200 inspect"},
      {"convert", "convert --pipe-timeout-ms 1200 -i convert -o c.tfrecord"},
  };
  std::string script = "cd '" + dir_.string() + "' || exit 1;";
  for (const auto& [fifo, args] : cases) {
    const std::string path = fifo == "train_channel" ? P("ch/train_0") : P(fifo);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    script += " { timeout 30 " + kCtrain + " " + args + " > " + fifo + ".log 2>&1; echo $? > " + fifo + ".rc; } &";
  }
  const auto t0 = Clock::now();
  ASSERT_EQ(Sh(script + " wait").exit_code, 0);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(15));  // all in parallel, 1.2 s each
  for (const auto& [fifo, args] : cases) {
    SCOPED_TRACE(args);
    const std::string path = fifo == "train_channel" ? "ch/train_0" : fifo;
    const std::string log = Slurp(dir_ / (fifo + ".log"));
    EXPECT_EQ(Slurp(dir_ / (fifo + ".rc")), "1\n") << log;
    EXPECT_NE(log.find("ctrain: waiting for writer on " + path + " (1 s, 0 bytes so far, timeout 1200 ms)"),
              std::string::npos)
        << log;
    // eval/predict prefix the flag the input came from ("--input: ").
    EXPECT_NE(log.find("ctrain: DeadlineExceeded: "), std::string::npos) << log;
    EXPECT_NE(log.find("no writer connected to " + path + " within 1200 ms (pipe timeout)"), std::string::npos)
        << log;
  }
  EXPECT_TRUE(Temporaries(dir_).empty());
  EXPECT_FALSE(fs::exists(P("c.tfrecord")));
}

TEST_F(ProcessSafetyTest, B32StalledWriterTimesOutAfterItsBytes) {
  Synth("s.libsvm", 200);
  ASSERT_EQ(::mkfifo(P("f").c_str(), 0600), 0);
  const auto t0 = Clock::now();
  RunResult r = Sh("cd '" + dir_.string() + "' && { (head -c 3000 s.libsvm; sleep 20) > f 2>/dev/null & W=$!; " +
                   kCtrain + " train --train f --progress none --pipe-timeout-ms 800" + kSmallModel +
                   "; echo rc=$?; kill $W; }");
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(15));  // not the writer's 20 s
  EXPECT_NE(r.out.find("ctrain: DeadlineExceeded: writer on f sent nothing for 800 ms (after 3000 bytes)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out;
}

TEST_F(ProcessSafetyTest, B32DefaultTimeoutIsDocumentedInHelp) {
  RunResult r = Sh(kCtrain + " eval --help");
  EXPECT_NE(r.out.find("--pipe-timeout-ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("60000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 = no limit"), std::string::npos) << r.out;
}

// ---- trial/02: one training per model dir ----
TEST_F(ProcessSafetyTest, Trial02SecondTrainingNamesTheHolderAndFailsUpFront) {
  Synth("s.libsvm", 20000);
  const std::string args = std::string("train --train s.libsvm --epochs 3 --progress none --model-dir dup") + kSmallModel;
  std::vector<std::string> argv;
  std::istringstream ss(args);
  for (std::string a; ss >> a;) argv.push_back(a);
  Child first = Child::Start(argv, dir_.string());
  // Wait (bounded) until the first one holds the lock and recorded itself.
  const std::string pid = "\"pid\":" + std::to_string(first.pid);
  for (int i = 0; i < 500 && Slurp(dir_ / "dup/.lock").find(pid) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_NE(Slurp(dir_ / "dup/.lock").find(pid), std::string::npos);
  RunResult second = Sh(C() + " " + args + " --learning-rate 0.01");
  EXPECT_EQ(second.exit_code, 1) << second.out;
  EXPECT_EQ(second.out.find("ctrain: streaming"), std::string::npos) << second.out;  // before reading any data
  EXPECT_NE(second.out.find("ctrain: FailedPrecondition: dup: model directory is in use by another training (pid " +
                            std::to_string(first.pid) + " on host "),
            std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find(kCtrain + " " + args + "); wait for it to finish or use another --model-dir"),
            std::string::npos)
      << second.out;
  EXPECT_EQ(second.out.find("epoch 1/"), std::string::npos) << second.out;
  EXPECT_EQ(first.Finish(), 0) << first.out;
  // The lock went with the first process: training again resumes (nothing to do).
  RunResult again = Sh(C() + " " + args);
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;
}

TEST_F(ProcessSafetyTest, Trial02LockHeldByAnotherProcessIsNamed) {
  Synth("s.libsvm", 200);
  ASSERT_TRUE(fs::create_directories(dir_ / "held"));
  auto lock = ctrain::train::ModelDirLock::Acquire(P("held"), "ctrain train --model-dir held (the test)");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  RunResult r = Sh(C() + " train --train s.libsvm --max-steps 2 --progress none --model-dir held" + kSmallModel);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("(pid " + std::to_string(::getpid()) + " on host "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": ctrain train --model-dir held (the test)); wait"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "held/checkpoint"));
  // eval/predict only read: no lock needed.
  lock->reset();
  ASSERT_EQ(Sh(C() + " train --train s.libsvm --max-steps 2 --progress none --model-dir held" + kSmallModel).exit_code, 0);
  lock = ctrain::train::ModelDirLock::Acquire(P("held"), "x");
  ASSERT_TRUE(lock.ok());
  RunResult e = Sh(C() + " eval --model-dir held --input s.libsvm");
  EXPECT_EQ(e.exit_code, 0) << e.out;
}

// ---- trial/04: synth --row-offset ----
TEST_F(ProcessSafetyTest, Trial04RowOffsetGivesTheRowsOfOneBiggerFile) {
  for (const char* fmt : {"libsvm", "tfrecord"}) {
    SCOPED_TRACE(fmt);
    const std::string f(fmt);
    ASSERT_EQ(Sh(C() + " synth --rows 300 --seed 5 --format " + f + " -o big." + f).exit_code, 0);
    ASSERT_EQ(Sh(C() + " synth --rows 200 --seed 5 --format " + f + " -o tr." + f).exit_code, 0);
    RunResult va = Sh(C() + " synth --rows 100 --row-offset 200 --seed 5 --format " + f + " -o va." + f);
    ASSERT_EQ(va.exit_code, 0) << va.out;
    EXPECT_NE(va.out.find("wrote 100 rows (rows 200..299,"), std::string::npos) << va.out;
    const std::string big = Slurp(dir_ / ("big." + f)), tr = Slurp(dir_ / ("tr." + f)),
                      valid = Slurp(dir_ / ("va." + f));
    ASSERT_FALSE(valid.empty());
    EXPECT_EQ(tr + valid, big);  // rows 0..199 then 200..299 of the same ground truth
  }
  RunResult bad = Sh(C() + " synth --rows 10 --row-offset -1 -o x.tfrecord");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--row-offset must be in [0"), std::string::npos) << bad.out;
}

// ---- trial/05: read-only model dir / outputs fail before any training ----
TEST_F(ProcessSafetyTest, Trial05UnwritableModelDirFailsUpFront) {
  Synth("s.libsvm", 2000);
  ASSERT_EQ(Sh(C() + " train --train s.libsvm --epochs 1 --progress none --model-dir a" + kSmallModel).exit_code, 0);
  // Tests run as root, which may write anywhere: drop to nobody (setpriv) when root.
  std::string as_user;
  if (::geteuid() == 0) {
    if (Sh("setpriv --reuid=65534 --regid=65534 --clear-groups true").exit_code != 0)
      GTEST_SKIP() << "running as root without setpriv: cannot test an unwritable directory";
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    if (Sh(as_user + "test -r '" + P("s.libsvm") + "'").exit_code != 0)
      GTEST_SKIP() << "user 65534 cannot read the test directory " << dir_;
  }
  ASSERT_EQ(::chmod(P("a").c_str(), 0555), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  const std::string cd = "cd '" + dir_.string() + "' && " + as_user + kCtrain;
  RunResult r = Sh(cd + " train --train s.libsvm --epochs 2 --progress log --model-dir a" + kSmallModel);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("ctrain: PermissionDenied: a: --model-dir: cannot create files in the directory: Permission "
                       "denied"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("epoch 1/"), std::string::npos) << r.out;  // nothing trained
  RunResult p = Sh(cd + " predict --model-dir a --input s.libsvm -o a/p.txt");
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.out.find("a/p.txt: --output: cannot create files in its directory 'a': Permission denied"),
            std::string::npos)
      << p.out;
  RunResult e = Sh(cd + " eval --model-dir a --input s.libsvm --metrics-json m.json");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.out.find("m.json: --metrics-json: cannot create files in its directory '.': Permission denied"),
            std::string::npos)
      << e.out;
  EXPECT_EQ(e.out.find("auc"), std::string::npos) << e.out;
}

// The trial's own setup: an existing model dir on a read-only file system
// (needs an unprivileged user + mount namespace: `unshare -rm`).
TEST_F(ProcessSafetyTest, Trial05ReadOnlyFileSystemFailsUpFront) {
  ASSERT_EQ(::mkdir(P("ro").c_str(), 0755), 0);
  if (Sh("unshare -rm sh -c 'mount -t tmpfs tmpfs " + P("ro") + " && mount -o remount,ro " + P("ro") + "'").exit_code != 0)
    GTEST_SKIP() << "no unprivileged user + mount namespace (unshare -rm) to mount a read-only file system";
  Synth("s.libsvm", 2000);
  RunResult r = Sh("cd '" + dir_.string() + "' && unshare -rm sh -c 'mount -t tmpfs tmpfs ro && " + kCtrain +
                   " train --train s.libsvm --epochs 1 --progress none --model-dir ro/a" + kSmallModel +
                   " >/dev/null 2>&1 && mount -o remount,ro ro && " + kCtrain +
                   " train --train s.libsvm --epochs 2 --progress log --model-dir ro/a" + kSmallModel +
                   "; echo rc=$?'");
  EXPECT_NE(r.out.find("ctrain: Unavailable: ro/a: --model-dir: cannot create files in the directory: Read-only "
                       "file system"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("epoch 1/"), std::string::npos) << r.out;
}

// ---- trial/10 and item 12: interrupts leave no temporary files ----
TEST_F(ProcessSafetyTest, Trial10InterruptedSynthLeavesNoTemporary) {
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig);
    Child c = Child::Start({"synth", "--rows", "2000000", "-o", "big.tfrecord"}, dir_.string());
    const std::string tmp = P("big.tfrecord.tmp." + std::to_string(c.pid));
    bool writing = false;
    for (int i = 0; i < 1000 && !writing; ++i) {  // bounded: 10 s
      std::error_code ec;
      writing = fs::exists(tmp) && fs::file_size(tmp, ec) > 0;
      if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(writing) << "no temporary " << tmp;
    ASSERT_EQ(::kill(c.pid, sig), 0);
    EXPECT_EQ(c.Finish(), 128 + sig) << c.out;
    EXPECT_TRUE(Temporaries(dir_).empty());
    EXPECT_FALSE(fs::exists(P("big.tfrecord")));
  }
}

TEST_F(ProcessSafetyTest, InterruptedConvertFromAStalledFifoLeavesNoTemporary) {
  Synth("s.libsvm", 200);
  ASSERT_EQ(::mkfifo(P("in").c_str(), 0600), 0);
  Child c = Child::Start({"convert", "-i", "in", "-o", "out.tfrecord", "--pipe-timeout-ms", "0"}, dir_.string());
  std::atomic<bool> wrote{false}, done{false};
  std::thread writer([&] {
    const int fd = OpenFifoWriter(P("in"));  // connects once convert reads (its output is open by then)
    if (fd < 0) return;
    const std::string head = Slurp(dir_ / "s.libsvm").substr(0, 3000);
    EXPECT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
    wrote = true;
    for (int i = 0; i < 3000 && !done.load(); ++i)  // stalls, still connected (bounded: 30 s)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::close(fd);
  });
  struct Join {
    std::atomic<bool>& done;
    std::thread& t;
    ~Join() {
      done = true;
      t.join();
    }
  } join{done, writer};
  for (int i = 0; i < 1000 && !wrote.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(wrote.load()) << "convert never read its input";
  ASSERT_TRUE(fs::exists(P("out.tfrecord.tmp." + std::to_string(c.pid))));
  ASSERT_EQ(::kill(c.pid, SIGINT), 0);
  EXPECT_EQ(c.Finish(), 130) << c.out;
  EXPECT_TRUE(Temporaries(dir_).empty());
  EXPECT_FALSE(fs::exists(P("out.tfrecord")));
}

TEST_F(ProcessSafetyTest, ClosedStdoutPipeEndsQuietlyWithSigpipe) {
  RunResult r = Sh("cd '" + dir_.string() + "' && bash -c '" + kCtrain +
                   " synth --rows 200000 --format libsvm -o - 2>err.txt | head -c 100 > /dev/null; "
                   "echo rc=${PIPESTATUS[0]}'");
  EXPECT_NE(r.out.find("rc=141"), std::string::npos) << r.out;  // 128 + SIGPIPE, no error message
  EXPECT_EQ(Slurp(dir_ / "err.txt"), "");
  EXPECT_TRUE(Temporaries(dir_).empty());
}

// ---- convert --vocab-min-count publishes the data and its feature map together ----
// `rows` Criteo TSV rows (label, 13 counts, 26 hex categories); category k of
// row r is drawn from `distinct` values, so the vocabulary size depends on the
// min count.
std::string CriteoTsv(int rows, int distinct) {
  std::string s;
  for (int r = 0; r < rows; ++r) {
    s += std::to_string(r % 4 == 0);
    for (int i = 0; i < 13; ++i) s += "\t" + std::to_string((r * 7 + i) % 50);
    for (int c = 0; c < 26; ++c) {
      char h[16];
      std::snprintf(h, sizeof h, "\t%08x", static_cast<unsigned>(((r * 131 + c * 17) % distinct) * 2654435761u));
      s += h;
    }
    s += "\n";
  }
  return s;
}

// The data and its feature map are published together: an interrupt at any
// moment of a vocabulary convert leaves either the previous pair or the new
// pair (never a new map beside old data, nor a map without data) and no
// temporary. The interrupt lands after a range of delays, so it falls before,
// during and after the two passes; the invariant must hold every time.
TEST_F(ProcessSafetyTest, InterruptedVocabularyConvertKeepsDataAndFeatureMapTogether) {
  std::ofstream(P("a.tsv"), std::ios::binary) << CriteoTsv(20000, 3000);
  std::ofstream(P("b.tsv"), std::ios::binary) << CriteoTsv(50, 40);
  const std::string flags = " --input-format criteo-tsv --vocab-min-count ";
  // The previous pair, and the pair an uninterrupted run writes (the reference).
  RunResult first = Sh(C() + " convert -i a.tsv -i b.tsv -o bv.tfr" + flags + "1");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  RunResult ref = Sh(C() + " convert -i a.tsv -i b.tsv -o ref.tfr" + flags + "20");
  ASSERT_EQ(ref.exit_code, 0) << ref.out;
  const std::string old_data = Slurp(dir_ / "bv.tfr"), old_map = Slurp(dir_ / "bv.tfr.feature_map.txt");
  const std::string new_data = Slurp(dir_ / "ref.tfr"), new_map = Slurp(dir_ / "ref.tfr.feature_map.txt");
  ASSERT_FALSE(old_data.empty());
  ASSERT_FALSE(new_map.empty());
  ASSERT_TRUE(old_map != new_map) << "the two vocabularies must differ";
  int interrupted = 0;
  for (const std::string out : {"bv.tfr", "fresh.tfr"}) {
    for (int delay_ms : {0, 2, 5, 10, 20, 40, 80, 160, 320}) {
      SCOPED_TRACE(out + " after " + std::to_string(delay_ms) + " ms");
      Child c = Child::Start({"convert", "-i", "a.tsv", "-i", "b.tsv", "-o", out, "--input-format", "criteo-tsv",
                              "--vocab-min-count", "20"},
                             dir_.string());
      ::usleep(delay_ms * 1000);
      ASSERT_EQ(::kill(c.pid, SIGINT), 0);
      const int rc = c.Finish();
      ASSERT_TRUE(rc == 130 || rc == 0) << rc << "\n" << c.out;
      interrupted += rc == 130;
      EXPECT_TRUE(Temporaries(dir_).empty());
      const bool has_data = fs::exists(P(out)), has_map = fs::exists(P(out + ".feature_map.txt"));
      ASSERT_EQ(has_data, has_map) << "data and map published apart";
      if (has_data) {
        const std::string data = Slurp(P(out)), map = Slurp(P(out + ".feature_map.txt"));
        const bool old_pair = data == old_data && map == old_map;
        const bool new_pair = data == new_data && map == new_map;
        EXPECT_TRUE(old_pair || new_pair) << "a mixed pair";
        if (out == "fresh.tfr") {
          EXPECT_TRUE(new_pair);
        }
      } else {
        EXPECT_EQ(out, "fresh.tfr") << "the previous pair was removed";
        EXPECT_EQ(rc, 130);
      }
      if (out == "bv.tfr") {  // back to the previous pair for the next round
        std::ofstream(P("bv.tfr"), std::ios::binary) << old_data;
        std::ofstream(P("bv.tfr.feature_map.txt"), std::ios::binary) << old_map;
      } else {
        fs::remove(P("fresh.tfr"));
        fs::remove(P("fresh.tfr.feature_map.txt"));
      }
    }
  }
  EXPECT_GT(interrupted, 0) << "no run was interrupted: the test checked nothing";
  // Uninterrupted, both are replaced together: the new map reads the new data.
  RunResult again = Sh(C() + " convert -i a.tsv -i b.tsv -o bv.tfr" + flags + "20");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_TRUE(Slurp(dir_ / "bv.tfr") == new_data);
  EXPECT_TRUE(Slurp(dir_ / "bv.tfr.feature_map.txt") == new_map);
  EXPECT_NE(again.out.find("written to bv.tfr.feature_map.txt"), std::string::npos) << again.out;
}

TEST_F(ProcessSafetyTest, ConvertRefusesAnOutputThatIsAnInput) {
  Synth("s.libsvm", 100);
  const std::string before = Slurp(dir_ / "s.libsvm");
  ASSERT_EQ(::symlink("s.libsvm", P("link").c_str()), 0);
  for (const std::string& args : {std::string(" convert -i s.libsvm -o s.libsvm"),
                                  std::string(" convert -i s.libsvm -o ./link --output-format libsvm")}) {
    RunResult r = Sh(C() + args);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("is the same file as --input s.libsvm: writing it would destroy the input"),
              std::string::npos)
        << r.out;
  }
  std::ofstream(P("a.tsv"), std::ios::binary) << CriteoTsv(20, 10);
  RunResult m = Sh(C() + " convert -i a.tsv -o o.tfr --vocab-min-count 1 --feature-map-out a.tsv");
  EXPECT_EQ(m.exit_code, 1) << m.out;
  EXPECT_NE(m.out.find("--feature-map-out a.tsv is the same file as --input a.tsv"), std::string::npos) << m.out;
  RunResult both = Sh(C() + " convert -i a.tsv -o o.tfr --vocab-min-count 1 --feature-map-out ./o.tfr");
  EXPECT_EQ(both.exit_code, 1) << both.out;
  EXPECT_NE(both.out.find("--feature-map-out ./o.tfr and --output o.tfr are the same file"), std::string::npos)
      << both.out;
  EXPECT_EQ(Slurp(dir_ / "s.libsvm"), before);
  EXPECT_EQ(Slurp(dir_ / "a.tsv"), CriteoTsv(20, 10));
}

// ---- trial/11: a signal during training checkpoints the current step; resume is exact ----
// The interrupted run is long (20 epochs) so that the signal always lands
// mid-run; the comparison stops both runs at the same later step K.
TEST_F(ProcessSafetyTest, Trial11SigtermCheckpointsAndResumeMatchesAnUninterruptedRun) {
  Synth("s.libsvm", 20000);
  const std::string common = std::string("train --train s.libsvm --epochs 20 --save-checkpoints-steps 100000") +
                             kSmallModel;
  std::vector<std::string> argv;
  std::istringstream ss(common + " --progress bar --model-dir sig");
  for (std::string a; ss >> a;) argv.push_back(a);
  Child c = Child::Start(argv, dir_.string());
  ASSERT_TRUE(c.ReadUntil("\033[Kstep ", 30)) << c.out;  // the first progress line
  ASSERT_EQ(::kill(c.pid, SIGTERM), 0);
  EXPECT_EQ(c.Finish(), 143) << c.out;
  const size_t at = c.out.find("interrupted by SIGTERM at step ");
  ASSERT_NE(at, std::string::npos) << c.out;
  const int64_t step = std::stoll(c.out.substr(at + 31));
  ASSERT_GT(step, 0);
  EXPECT_NE(c.out.find("checkpoint sig/ckpt-" + std::to_string(step) + ".bin saved; run the same command to resume"),
            std::string::npos)
      << c.out;
  auto ck = ctrain::train::LoadLatestCheckpoint(P("sig"));
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ(ck->step, step);
  EXPECT_TRUE(Temporaries(dir_).empty());

  const std::string until = " --progress none --max-steps " + std::to_string(step + 150);
  RunResult resumed = Sh(C() + " " + common + until + " --model-dir sig");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resumed from sig at step " + std::to_string(step)), std::string::npos) << resumed.out;
  ASSERT_EQ(Sh(C() + " " + common + until + " --model-dir ref").exit_code, 0);
  // Bit-identical state: every tensor (parameters and optimizer slots) and the position.
  auto a = ctrain::train::LoadLatestCheckpoint(P("sig")), b = ctrain::train::LoadLatestCheckpoint(P("ref"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->step, step + 150);
  EXPECT_EQ(b->step, step + 150);
  for (const char* key : {"global_step", "epoch", "batch_in_epoch", "examples"})
    EXPECT_EQ(a->meta[key], b->meta[key]) << key;
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const auto& x : a->tensors) {
    const auto* y = b->Find(x.name);
    ASSERT_NE(y, nullptr) << x.name;
    ASSERT_EQ(x.f32.size(), y->f32.size()) << x.name;
    EXPECT_EQ(0, std::memcmp(x.f32.data(), y->f32.data(), x.f32.size() * sizeof(float))) << x.name;
    EXPECT_EQ(x.i64, y->i64) << x.name;
  }
}

TEST_F(ProcessSafetyTest, Trial11SigintWithoutModelDirSaysNothingWasSaved) {
  Synth("s.libsvm", 20000);
  std::vector<std::string> argv;
  std::istringstream ss(std::string("train --train s.libsvm --epochs 20 --progress bar") + kSmallModel);
  for (std::string a; ss >> a;) argv.push_back(a);
  Child c = Child::Start(argv, dir_.string());
  ASSERT_TRUE(c.ReadUntil("\033[Kstep ", 30)) << c.out;
  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(c.pid, SIGINT), 0);
  EXPECT_EQ(c.Finish(), 130) << c.out;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(c.out.find(": no --model-dir, nothing was saved"), std::string::npos) << c.out;
}

}  // namespace
