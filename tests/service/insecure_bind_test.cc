// Every ctrain server (data-service dispatcher and worker, `ctrain ps`) refuses to listen
// beyond loopback without authentication unless --insecure is given (case B54 (d);
// service/server.h CheckExposure): real processes. Loopback (all of 127.0.0.0/8) needs
// nothing; a token (CTRAIN_SERVICE_TOKEN) allows any address; --insecure allows it with a
// warning. The servers that do start are stopped with SIGTERM (exit 0) at once.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "testing/process.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

using namespace std::chrono_literals;

struct Server {
  const char* name;                // as in the "listening on" line
  std::vector<std::string> argv;   // after the binary, without --bind / --insecure
};

std::vector<Server> Servers() {
  return {{"data-service dispatcher", {"data-service", "dispatcher", "--port", "0"}},
          {"data-service worker", {"data-service", "worker", "--dispatcher", "127.0.0.1:1", "--port", "0"}},
          {"ps", {"ps", "--shard", "0", "--num-shards", "1", "--port", "0"}}};
}

// Starts `server` with `extra` flags under `env` (NAME=VALUE entries; CTRAIN_SERVICE_TOKEN is
// unset otherwise) and waits for its "listening on" line; returns the address ("" = none).
std::string StartAndListen(ChildProcess* p, const Server& server, const std::vector<std::string>& extra,
                           const std::vector<std::string>& env, const std::string& dir) {
  std::vector<std::string> argv{"/usr/bin/env", "-u", "CTRAIN_SERVICE_TOKEN"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(kCtrain);
  argv.insert(argv.end(), server.argv.begin(), server.argv.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  static int n = 0;  // each process its own files: a stale "listening" line must not be read
  const std::string base = dir + "/" + std::to_string(++n);
  EXPECT_TRUE(p->Start(argv, base + ".out", base + ".err"));
  return p->WaitForLine(std::string("ctrain: ") + server.name + " listening on ", 30s);
}

class InsecureBind : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = TestTempDir("insecure_bind", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(d_); }
  std::string d_;
};

TEST_F(InsecureBind, BeyondLoopbackWithoutAuthenticationIsRefused) {
  for (const Server& s : Servers()) {
    ChildProcess p;
    EXPECT_EQ(StartAndListen(&p, s, {"--bind", "0.0.0.0"}, {}, d_), "") << s.name;
    EXPECT_EQ(p.Wait(30s), 1) << s.name << "\n" << p.Err();
    EXPECT_NE(p.Err().find("FailedPrecondition: refusing to listen on 0.0.0.0 beyond loopback without "
                           "authentication: anyone who reaches the port could use it; set a token (--token-file or "
                           "CTRAIN_SERVICE_TOKEN, the same on every host), or TLS with client certificates "
                           "(--tls-cert, --tls-key, --tls-client-ca), or give --insecure"),
              std::string::npos)
        << s.name << "\n" << p.Err();
  }
}

TEST_F(InsecureBind, InsecureServesWithAWarningATokenWithout) {
  for (const Server& s : Servers()) {
    {
      ChildProcess p;
      const std::string at = StartAndListen(&p, s, {"--bind", "0.0.0.0", "--insecure"}, {}, d_);
      EXPECT_EQ(at.rfind("0.0.0.0:", 0), 0u) << s.name << "\n" << p.Err();
      p.Kill(SIGTERM);
      EXPECT_EQ(p.Wait(30s), 0) << s.name << "\n" << p.Err();
      EXPECT_NE(p.Err().find("listening on 0.0.0.0 beyond loopback without authentication (--insecure)"),
                std::string::npos)
          << s.name << "\n" << p.Err();
    }
    {
      ChildProcess p;
      const std::string at = StartAndListen(&p, s, {"--bind", "0.0.0.0"}, {"CTRAIN_SERVICE_TOKEN=s3cret"}, d_);
      EXPECT_EQ(at.rfind("0.0.0.0:", 0), 0u) << s.name << "\n" << p.Err();
      p.Kill(SIGTERM);
      EXPECT_EQ(p.Wait(30s), 0) << s.name << "\n" << p.Err();
      EXPECT_EQ(p.Err().find("beyond loopback"), std::string::npos) << s.name << "\n" << p.Err();
    }
  }
}

TEST_F(InsecureBind, AnyLoopbackAddressNeedsNothing) {
  for (const Server& s : Servers()) {
    ChildProcess p;
    const std::string at = StartAndListen(&p, s, {"--bind", "127.0.0.2"}, {}, d_);
    EXPECT_EQ(at.rfind("127.0.0.2:", 0), 0u) << s.name << "\n" << p.Err();
    p.Kill(SIGTERM);
    EXPECT_EQ(p.Wait(30s), 0) << s.name << "\n" << p.Err();
    EXPECT_EQ(p.Err().find("beyond loopback"), std::string::npos) << s.name << "\n" << p.Err();
  }
}

}  // namespace
}  // namespace ctrain::testing
