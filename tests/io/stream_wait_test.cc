// io::OpenSequentialFile on FIFOs: a FIFO that never gets a writer, or whose
// writer stalls, ends in DeadlineExceeded naming the FIFO and the timeout,
// with "waiting for writer" lines meanwhile (issue #7 item 9, case B32); atomic
// writes register their temporary for interrupts (item 12); the up-front
// writability checks (item 11).
#include "ctrain/io/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/base/signals.h"
#include "testing/fifo.h"

namespace ctrain::io {
namespace {

using Clock = std::chrono::steady_clock;

struct TempDir {
  TempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    path = std::string(base ? base : "/tmp") + "/ctrain_stream_wait_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    EXPECT_EQ(std::system(("rm -rf '" + path + "' && mkdir -p '" + path + "'").c_str()), 0);
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& n) const { return path + "/" + n; }
  std::string path;
};

struct Captured {
  std::mutex mu;
  std::vector<std::string> lines;
  StreamWaitOptions Options(int64_t timeout_ms) {
    StreamWaitOptions w;
    w.timeout_ms = timeout_ms;
    w.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(l);
    };
    return w;
  }
};

StreamWaitOptions Wait(int64_t timeout_ms) {
  StreamWaitOptions w;
  w.timeout_ms = timeout_ms;
  return w;
}

using ctrain::testing::OpenFifoWriter;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

TEST(StreamWait, FifoWithoutWriterTimesOutNamingFifoAndTimeout) {
  TempDir d;
  const std::string fifo = d / "train_0";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Captured log;
  const auto t0 = Clock::now();
  auto f = OpenSequentialFile(fifo, log.Options(1200));  // open never blocks
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LT(SecondsSince(t0), 0.5);
  char buf[64];
  StatusOr<size_t> r = (*f)->Read(buf, sizeof buf);
  const double waited = SecondsSince(t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(), "no writer connected to " + fifo + " within 1200 ms (pipe timeout)");
  EXPECT_GE(waited, 1.1);
  EXPECT_LT(waited, 3.0);
  ASSERT_EQ(log.lines.size(), 1u);  // after 1 s, then every 5 s
  EXPECT_EQ(log.lines[0].rfind("ctrain: waiting for writer on " + fifo + " (1 s, 0 bytes so far, timeout 1200 ms)", 0),
            0u)
      << log.lines[0];
}

TEST(StreamWait, StalledWriterTimesOutAfterItsBytes) {
  TempDir d;
  const std::string fifo = d / "stall";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  auto f = OpenSequentialFile(fifo, Wait(300));
  ASSERT_TRUE(f.ok());
  std::thread writer([&] {
    const int fd = OpenFifoWriter(fifo);
    if (fd < 0) return;
    EXPECT_EQ(::write(fd, "0 1:1\n1 2:1\n", 12), 12);
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // stalls, stays connected
    ::close(fd);
  });
  char buf[64];
  StatusOr<size_t> r = (*f)->Read(buf, sizeof buf);
  done = true;
  writer.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(), "writer on " + fifo + " sent nothing for 300 ms (after 12 bytes) (pipe timeout)");
}

TEST(StreamWait, WriterThatFinishesIsReadToEof) {
  TempDir d;
  const std::string fifo = d / "ok";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = OpenSequentialFile(fifo, Wait(5000));
  ASSERT_TRUE(f.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // connects late
    const int fd = OpenFifoWriter(fifo);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::write(fd, "abc", 3), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a pause shorter than the timeout
    EXPECT_EQ(::write(fd, "def", 3), 3);
    ::close(fd);
  });
  char buf[64];
  StatusOr<size_t> r = (*f)->Read(buf, sizeof buf);
  writer.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::string(buf, *r), "abcdef");
  EXPECT_EQ((*f)->position(), 6u);
}

TEST(StreamWait, ZeroMeansNoLimitButStaysCancellable) {
  TempDir d;
  const std::string fifo = d / "forever";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> cancel{false};
  StreamWaitOptions w;
  w.timeout_ms = 0;
  w.cancel = &cancel;
  w.log = [](const std::string&) {};
  auto f = OpenSequentialFile(fifo, w);
  ASSERT_TRUE(f.ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // past a 1.2 s timeout would have fired
    cancel = true;
  });
  const auto t0 = Clock::now();
  char buf[8];
  StatusOr<size_t> r = (*f)->Read(buf, sizeof buf);
  stopper.join();
  EXPECT_GE(SecondsSince(t0), 1.2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().ToString();
  EXPECT_EQ(OpenSequentialFile(fifo, Wait(-1)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(StreamWait, RegularFilesAreUnaffected) {
  TempDir d;
  ASSERT_TRUE(WriteStringToFileAtomic(d / "a.txt", "hello").ok());
  auto f = OpenSequentialFile(d / "a.txt", Wait(1));
  ASSERT_TRUE(f.ok());
  char buf[16];
  StatusOr<size_t> r = (*f)->Read(buf, sizeof buf);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::string(buf, *r), "hello");
}

// An interrupt while an atomic write is open leaves neither the file nor its temporary.
TEST(AtomicWrite, InterruptLeavesNoTemporary) {
  TempDir d;
  const std::string out = d / "out.bin";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);
    InstallInterruptHandlers();
    auto f = OpenWritableFile(out, WriteOptions{.atomic = true});
    if (!f.ok() || !(*f)->Append(std::string(3 << 20, 'x')).ok()) ::_exit(2);
    ::kill(::getpid(), SIGTERM);  // taken by the signal thread (base/signals.h)
    for (int i = 0; i < 5000; ++i) ::usleep(1000);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  struct stat st;
  EXPECT_NE(::stat(out.c_str(), &st), 0);
  EXPECT_NE(::stat((out + ".tmp." + std::to_string(pid)).c_str(), &st), 0);
  // A completed write is untouched by a later interrupt: its slot was released.
  ASSERT_TRUE(WriteStringToFileAtomic(out, "done").ok());
  EXPECT_EQ(*ReadFileToString(out), "done");
}

// `-o <fifo>` / `-o /dev/null`: written in place, never replaced by a renamed file.
TEST(AtomicWrite, FifoAndDeviceTargetsAreWrittenInPlace) {
  TempDir d;
  const std::string fifo = d / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the writer waits for its reader
    auto f = OpenSequentialFile(fifo);
    ASSERT_TRUE(f.ok());
    char buf[64];
    StatusOr<size_t> n = (*f)->Read(buf, sizeof buf);
    ASSERT_TRUE(n.ok());
    got.assign(buf, *n);
  });
  EXPECT_TRUE(CheckOutputWritable("--output", fifo).ok());
  EXPECT_TRUE(WriteStringToFileAtomic(fifo, "through the pipe").ok());
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  if (::geteuid() == 0) {  // a private copy of /dev/null (mknod needs root)
    const std::string dev = d / "null";
    ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    ASSERT_TRUE(WriteStringToFileAtomic(dev, "discarded").ok());
    ASSERT_EQ(::stat(dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
  EXPECT_EQ(std::system(("test -z \"$(ls '" + d.path + "' | grep tmp)\"").c_str()), 0);
}

TEST(AtomicWrite, SymlinkIsKeptAndItsTargetReplaced) {
  TempDir d;
  ASSERT_TRUE(WriteStringToFileAtomic(d / "real.txt", "old").ok());
  ASSERT_EQ(::symlink((d / "real.txt").c_str(), (d / "link.txt").c_str()), 0);
  ASSERT_TRUE(WriteStringToFileAtomic(d / "link.txt", "new").ok());
  struct stat st;
  ASSERT_EQ(::lstat((d / "link.txt").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(*ReadFileToString(d / "real.txt"), "new");
}

// `-o /dev/stdout >> log`: the descriptor the shell opened is appended to in place.
TEST(AtomicWrite, DescriptorPathsAreAppendedInPlace) {
  TempDir d;
  ASSERT_TRUE(WriteStringToFileAtomic(d / "log", "hello\n").ok());
  const int fd = ::open((d / "log").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  EXPECT_TRUE(CheckOutputWritable("--output", path).ok());
  EXPECT_TRUE(WriteStringToFileAtomic(path, "world\n").ok());
  ::close(fd);
  EXPECT_EQ(*ReadFileToString(d / "log"), "hello\nworld\n");
}

TEST(WritableChecks, NameTheFlagThePathAndTheOsError) {
  TempDir d;
  EXPECT_TRUE(CheckOutputWritable("--output", d / "p.txt").ok());
  EXPECT_TRUE(CheckOutputWritable("--output", "-").ok());
  EXPECT_TRUE(CheckDirWritable("--model-dir", d.path).ok());
  Status s = CheckOutputWritable("--output", d.path);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--output " + d.path + ": is a directory, not a file");
  s = CheckOutputWritable("--metrics-json", d / "missing/m.json");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.ToString();
  s = CheckDirWritable("--model-dir", d / "missing");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), d / "missing" + ": --model-dir: cannot use the directory: No such file or directory");
  ASSERT_TRUE(WriteStringToFileAtomic(d / "file", "x").ok());
  EXPECT_EQ(CheckDirWritable("--model-dir", d / "file").code(), StatusCode::kFailedPrecondition);
  // No probe file is left behind.
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + d.path + "' | grep -v '^file$')\"").c_str()), 0);
}

// /proc/sys is read-only for writes of new files everywhere (EACCES or EROFS), root included.
TEST(WritableChecks, UnwritableDirectoryFailsEvenForRoot) {
  Status s = CheckDirWritable("--model-dir", "/proc/self");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("/proc/self: --model-dir: cannot create files in the directory: ", 0), 0u)
      << s.ToString();
}

}  // namespace
}  // namespace ctrain::io
