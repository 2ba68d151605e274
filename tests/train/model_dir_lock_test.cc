// One writer per model directory (issue #7 item 10, trial/02): the second
// taker fails up front naming the holder; the lock dies with its process.
#include "ctrain/train/model_dir_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "ctrain/io/file.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("ctrain_lock_test", name); }

TEST(ModelDirLock, SecondTakerFailsNamingTheHolder) {
  const std::string dir = TempDir("second");
  auto first = ModelDirLock::Acquire(dir, "ctrain train --model-dir " + dir);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->path(), dir + "/.lock");
  auto second = ModelDirLock::Acquire(dir, "other");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  const std::string msg(second.status().message());
  EXPECT_EQ(msg.rfind(dir + ": model directory is in use by another training (pid " + std::to_string(::getpid()) +
                          " on host ",
                      0),
            0u)
      << msg;
  EXPECT_NE(msg.find(", started 20"), std::string::npos) << msg;
  EXPECT_NE(msg.find(": ctrain train --model-dir " + dir + "); wait for it to finish or use another --model-dir"),
            std::string::npos)
      << msg;
  first->reset();  // released
  auto third = ModelDirLock::Acquire(dir);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  // Default command: this process's command line.
  StatusOr<std::string> text = io::ReadFileToString(dir + "/.lock");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("model_dir_lock_test"), std::string::npos) << *text;
}

TEST(ModelDirLock, KilledHolderLeavesNoStaleLock) {
  const std::string dir = TempDir("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto lock = ModelDirLock::Acquire(dir, "holder");
    char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto busy = ModelDirLock::Acquire(dir);
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().message().find("(pid " + std::to_string(pid) + " on host "), std::string::npos)
      << busy.status().ToString();
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  auto after = ModelDirLock::Acquire(dir);
  EXPECT_TRUE(after.ok()) << after.status().ToString();
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(ModelDirLock, MissingDirectoryIsANamedError) {
  const std::string dir = TempDir("missing") + "/nope";
  auto lock = ModelDirLock::Acquire(dir);
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(lock.status().message(),
            dir + "/.lock: --model-dir: cannot create the lock file: No such file or directory");
}

}  // namespace
}  // namespace ctrain::train
