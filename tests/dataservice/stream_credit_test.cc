// Flow control of the worker -> trainer stream, with real processes on
// loopback (field report B53: a consumer that took one batch every 4 s
// received the whole split within a second, whatever its
// --data-service-buffer-bytes):
//   - a paced `data-service read` never holds more received-but-untaken bytes
//     than its --data-service-buffer-bytes plus one batch (the client's
//     buffered_bytes_peak counter), and gets every example in the order of an
//     unpaced read;
//   - a consumer that takes nothing for longer than the worker's
//     --stream-idle-timeout-ms is dropped (the worker logs it) and re-reads
//     the rest of its split, exactly once, when it reads again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "dataservice/cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

class StreamCreditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestTempDir("ctrain_ds_credit", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    // 1000 Criteo-shaped rows: batches of 100 are 100 x 39 ids and values
    // (about 47 KB each in the wire format), 10 per split.
    RunResult s = RunCtrain("synth --rows 1000 -o '" + dir_ + "/d.tfrecord'");
    ASSERT_EQ(s.exit_code, 0) << s.out;
  }
  // `data-service read` of d.tfrecord into `out` (LibSVM, in delivery order);
  // returns its "data_service" figures (null on failure).
  nlohmann::json Read(const std::string& address, const std::string& out, const std::string& flags,
                      const std::string& job) {
    RunResult r = RunCtrainBounded("data-service read --data-service " + address + " --train '" + dir_ +
                                       "/d.tfrecord' --batch-size 100 --job-name " + job + " -o '" + dir_ + "/" +
                                       out + "' --json " + flags,
                                   120);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    size_t at = r.out.rfind("\n{\"");  // the last line: {"batches": ..., "data_service": {...}, ...}
    at = at == std::string::npos ? r.out.find("{\"") : at + 1;
    if (r.exit_code != 0 || at == std::string::npos) return nullptr;
    nlohmann::json j = nlohmann::json::parse(r.out.substr(at, r.out.find('\n', at) - at), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j.value("examples", int64_t{-1}), 1000) << r.out;
    return j.is_discarded() ? nlohmann::json() : j.value("data_service", nlohmann::json());
  }
  std::string dir_;
};

TEST_F(StreamCreditTest, PacedConsumerHoldsAtMostItsBufferPlusOneBatchAndLosesNothing) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker({"--buffer-bytes", "8388608"}), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  for (const std::string splits : {"1", "4"}) {
    const nlohmann::json ref = Read(c.address(), "ref" + splits + ".libsvm", "--num-splits " + splits, "ref" + splits);
    ASSERT_FALSE(ref.is_null()) << c.Logs();
    // About 2 batches of budget, one batch taken every 20 ms.
    const int64_t bound = 100000;
    const nlohmann::json ds = Read(c.address(), "paced" + splits + ".libsvm",
                                   "--num-splits " + splits + " --pace-us 20000 --data-service-buffer-bytes " +
                                       std::to_string(bound),
                                   "paced" + splits);
    ASSERT_FALSE(ds.is_null()) << c.Logs();
    const int64_t batch = ds.value("largest_batch_bytes", int64_t{0});
    EXPECT_GT(batch, 40000) << ds.dump();
    EXPECT_EQ(ds.value("buffer_bytes", int64_t{0}), bound);
    // Received but not yet taken: within the bound plus the one batch a starved stream may have on the way.
    EXPECT_LE(ds.value("buffered_bytes_peak", int64_t{-1}), bound + batch) << "--num-splits " << splits << ": "
                                                                           << ds.dump();
    EXPECT_GT(ds.value("buffered_bytes_peak", int64_t{0}), 0);
    EXPECT_LE(ds.value("committed_bytes_peak", int64_t{-1}), bound + batch) << ds.dump();
    EXPECT_EQ(ds.value("streams_dropped_idle", int64_t{-1}), 0);
    // Nothing lost, repeated or reordered.
    EXPECT_EQ(ChildProcess::Read(dir_ + "/paced" + splits + ".libsvm"),
              ChildProcess::Read(dir_ + "/ref" + splits + ".libsvm"))
        << "--num-splits " << splits;
  }
}

TEST_F(StreamCreditTest, ConsumerThatTakesNothingPastTheStreamIdleTimeoutIsDroppedAndReReadsExactlyOnce) {
  DataServiceCluster c(dir_);
  ASSERT_NE(c.StartDispatcher(), "");
  ASSERT_NE(c.StartWorker({"--stream-idle-timeout-ms", "150"}), "");
  ASSERT_TRUE(c.WaitForLiveWorkers(1)) << c.Logs();
  const nlohmann::json ref = Read(c.address(), "ref.libsvm", "--num-splits 1", "ref");
  ASSERT_FALSE(ref.is_null()) << c.Logs();
  // A budget of about one batch and 400 ms per batch: the worker waits for a
  // credit longer than 150 ms before each batch, and drops the stream.
  const nlohmann::json ds =
      Read(c.address(), "slow.libsvm", "--num-splits 1 --pace-us 400000 --data-service-buffer-bytes 50000", "slow");
  ASSERT_FALSE(ds.is_null()) << c.Logs();
  EXPECT_GE(ds.value("streams_dropped_idle", int64_t{0}), 1) << ds.dump();
  EXPECT_EQ(ds.value("failovers", int64_t{-1}), 0) << ds.dump();  // not a dead worker
  EXPECT_NE(c.Logs().find("dropping the stream of epoch 0 split 0/1 of job slow"), std::string::npos) << c.Logs();
  EXPECT_NE(c.Logs().find("(--stream-idle-timeout-ms)"), std::string::npos) << c.Logs();
  EXPECT_EQ(ChildProcess::Read(dir_ + "/slow.libsvm"), ChildProcess::Read(dir_ + "/ref.libsvm"));
}

}  // namespace
}  // namespace ctrain::testing
