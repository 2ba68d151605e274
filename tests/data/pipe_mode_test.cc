// Pipe mode waits (issue #7 item 9, case B32): through the pipeline, a channel
// FIFO that exists but never gets a writer, and a writer that stalls, end in
// DeadlineExceeded after pipe_timeout_ms; the single-pass loaders take the same
// timeout (ExampleReaderOptions::pipe_timeout_ms).
#include "ctrain/data/pipe_mode.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"
#include "testing/fifo.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

using Clock = std::chrono::steady_clock;

std::string TempDir(const std::string& name) { return ctrain::testing::TestTempDir("ctrain_pipe_mode_test", name); }

ExampleReaderOptions Reader() {
  ExampleReaderOptions r;
  r.field_size = 2;
  r.format = RecordFormat::kLibSvm;
  return r;
}

PipelineOptions Options(int64_t timeout_ms) {
  PipelineOptions o;
  o.print_warnings = false;
  o.batch_size = 4;
  o.shuffle_buffer_size = 0;
  o.pipe_timeout_ms = timeout_ms;
  return o;
}

using ctrain::testing::OpenFifoWriter;

Status DrainAll(Pipeline* p, int64_t* rows) {
  Batch b;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, p->Next(&b));
    if (!more) return Status::OK();
    *rows += b.size();
  }
}

TEST(PipeMode, ChannelFifoWithoutWriterTimesOut) {
  const std::string d = TempDir("nowriter");
  ASSERT_EQ(::mkfifo((d + "/train_0").c_str(), 0600), 0);
  auto p = Pipeline::Create({"pipe:" + d + "/train"}, Reader(), Options(400));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const auto t0 = Clock::now();
  int64_t rows = 0;
  Status st = DrainAll(p->get(), &rows);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(st.message(), "no writer connected to " + d + "/train_0 within 400 ms (pipe timeout)");
}

TEST(PipeMode, StalledWriterTimesOutAfterItsRecords) {
  const std::string d = TempDir("stall");
  const std::string fifo = d + "/in.libsvm";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    const int fd = OpenFifoWriter(fifo);
    if (fd < 0) return;
    const std::string lines = "1 0:1 1:1\n0 0:1 1:2\n";
    EXPECT_EQ(::write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::close(fd);
  });
  auto p = Pipeline::Create({fifo}, Reader(), Options(400));
  Status st = p.status();
  int64_t rows = 0;
  if (p.ok()) st = DrainAll(p->get(), &rows);
  done = true;
  writer.join();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(st.message(), "writer on " + fifo + " sent nothing for 400 ms (after 20 bytes) (pipe timeout)");
}

TEST(PipeMode, SinglePassLoadersUseTheReaderTimeout) {
  const std::string d = TempDir("loader");
  ASSERT_EQ(::mkfifo((d + "/f").c_str(), 0600), 0);
  ExampleReaderOptions r = Reader();
  r.pipe_timeout_ms = 300;
  const auto t0 = Clock::now();
  auto reader = OpenExampleReader(d + "/f", r);  // sniffs: reads at once
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().message(), "no writer connected to " + d + "/f within 300 ms (pipe timeout)");
  // A channel whose FIFO never appears: the same timeout, its own message.
  auto pass = OpenInputPass("pipe:" + d + "/valid", 1, 200);
  ASSERT_FALSE(pass.ok());
  EXPECT_EQ(pass.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(pass.status().message().find(d + "/valid_1 did not appear within 200 ms"), std::string::npos)
      << pass.status().ToString();
}

TEST(PipeMode, ZeroWaitsForAFifoToAppearWithoutLimit) {
  const std::string d = TempDir("appear");
  std::atomic<bool> cancel{false};
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto t0 = Clock::now();
  Status st = WaitForPath(d + "/train_0", 0, &cancel);
  later.join();
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(290));
  EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.ToString();
  EXPECT_EQ(WaitForPath(d + "/x", -1, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ctrain::data
