// `ctrain ps` and `ctrain train --ps` as processes: the listening line,
// loopback, SIGTERM, the token, and (with trainers) losing a worker or a
// parameter server.
#include <gtest/gtest.h>

#include <fstream>

#include "ps/ps_cluster.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

TEST(PsCliTest, ServesOnLoopbackAndExitsZeroOnSigterm) {
  PsCluster c(TestTempDir("ps_cli", "sigterm"));
  const std::string a0 = c.StartPs(0, 2), a1 = c.StartPs(1, 2, {"--partitioner", "mod"});
  ASSERT_EQ(a0.rfind("127.0.0.1:", 0), 0u) << c.Logs();
  ASSERT_EQ(a1.rfind("127.0.0.1:", 0), 0u) << c.Logs();
  RunResult st = RunCtrain("ps status " + a0 + " " + a1);
  ASSERT_EQ(st.exit_code, 0) << st.out;
  EXPECT_NE(st.out.find("mod"), std::string::npos) << st.out;
  RunResult js = RunCtrain("ps status " + a0 + " --json");
  ASSERT_EQ(js.exit_code, 0) << js.out;
  EXPECT_NE(js.out.find("\"initialized\": false"), std::string::npos) << js.out;
  c.ps(0).Kill(SIGTERM);
  c.ps(1).Kill(SIGTERM);
  EXPECT_EQ(c.ps(0).Wait(10s), 0) << c.Logs();
  EXPECT_EQ(c.ps(1).Wait(10s), 0) << c.Logs();
}

TEST(PsCliTest, WrongTokenIsRefused) {
  const std::string dir = TestTempDir("ps_cli", "token");
  PsCluster c(dir);
  std::ofstream(dir + "/token") << "right-token\n";
  std::ofstream(dir + "/wrong") << "wrong-token\n";
  const std::string a = c.StartPs(0, 1, {"--token-file", dir + "/token"});
  ASSERT_FALSE(a.empty()) << c.Logs();
  RunResult bad = RunCtrain("ps status " + a + " --token-file " + dir + "/wrong");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("wrong service token"), std::string::npos) << bad.out;
  RunResult none = RunCtrain("ps status " + a);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("missing service token"), std::string::npos) << none.out;
  RunResult ok = RunCtrain("ps status " + a + " --token-file " + dir + "/token");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST(PsCliTest, BadFlagsAreNamed) {
  RunResult r = RunCtrain("ps --shard 2 --num-shards 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--shard 2 not in [0, 2)"), std::string::npos) << r.out;
  r = RunCtrain("ps --shard 0 --num-shards 1 --partitioner div");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--partitioner 'div'"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ctrain::testing
