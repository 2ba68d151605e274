// Starting servers (service/server.h): address checks, loopback detection,
// port 0, a taken port, TLS half-configured, the exposure warning. The token
// check on real calls is in tests/dataservice/rpc_test.cc.
#include "ctrain/service/server.h"

#include <gtest/gtest.h>

#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ctrain/service/auth.h"


#include <string>

#include "ctrain/service/auth.h"

namespace ctrain::service {
namespace {

TEST(CheckHostPort, AcceptsHostPort) {
  for (const char* a : {"127.0.0.1:1", "localhost:65535", "host.example:8080", "[::1]:50051", "10.0.0.7:443"})
    EXPECT_TRUE(CheckHostPort(a, "--dispatcher").ok()) << a;
}

TEST(CheckHostPort, RefusesOthersNamingTheFlag) {
  for (const char* a : {"", "host", "host:", ":80", "host:0", "host:65536", "host:http", "host:-1", "host:123456",
                        "host:8 0"}) {
    Status st = CheckHostPort(a, "--dispatcher");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << a;
    EXPECT_NE(std::string(st.message()).find("--dispatcher"), std::string::npos) << st.message();
    EXPECT_NE(std::string(st.message()).find(std::string("\"") + a + "\""), std::string::npos) << st.message();
  }
}

TEST(IsLoopbackHost, Cases) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"}) EXPECT_TRUE(IsLoopbackHost(h)) << h;
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "[::]", "example.com", "128.0.0.1", "", "1127.0.0.1"})
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
}

TEST(JoinHostPort, BracketsIpv6) {
  EXPECT_EQ(JoinHostPort("127.0.0.1", 80), "127.0.0.1:80");
  EXPECT_EQ(JoinHostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(JoinHostPort("[::1]", 80), "[::1]:80");
}

TEST(CheckExposure, BeyondLoopbackNeedsATokenClientCertificatesOrInsecure) {
  ServerConfig c;
  EXPECT_TRUE(CheckExposure(c).ok());  // 127.0.0.1 by default
  c.bind = "127.0.0.2";
  EXPECT_TRUE(CheckExposure(c).ok());  // all of 127.0.0.0/8 is loopback
  c.bind = "0.0.0.0";
  const Status s = CheckExposure(c);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(s.message()),
            "refusing to listen on 0.0.0.0 beyond loopback without authentication: anyone who reaches the port could "
            "use it; set a token (--token-file or CTRAIN_SERVICE_TOKEN, the same on every host), or TLS with client "
            "certificates (--tls-cert, --tls-key, --tls-client-ca), or give --insecure on a network only the job's "
            "hosts reach (docs/data-service.md#security)");
  EXPECT_EQ(ExposureWarning(c).find("listening on 0.0.0.0 beyond loopback without authentication (--insecure)"), 0u);
  // StartServer refuses before binding anything.
  EXPECT_EQ(StartServer(c, {}).status().code(), StatusCode::kFailedPrecondition);
  c.tls_cert = "cert.pem", c.tls_key = "key.pem";
  EXPECT_FALSE(CheckExposure(c).ok());  // server TLS alone authenticates no caller
  c.tls_ca = "ca.pem";
  EXPECT_TRUE(CheckExposure(c).ok());
  EXPECT_EQ(ExposureWarning(c), "");
  c = ServerConfig();
  c.bind = "10.1.2.3";
  c.token = "t";
  EXPECT_TRUE(CheckExposure(c).ok());
  EXPECT_EQ(ExposureWarning(c), "");
  c.token.clear();
  c.insecure = true;
  EXPECT_TRUE(CheckExposure(c).ok());
  const std::string w = ExposureWarning(c);
  EXPECT_NE(w.find("10.1.2.3"), std::string::npos) << w;
  EXPECT_NE(w.find("--token-file"), std::string::npos) << w;
  EXPECT_NE(w.find(kTokenEnv), std::string::npos) << w;
  c.bind = "localhost";
  EXPECT_EQ(ExposureWarning(c), "");
}

TEST(ResolveBindAddress, AddressesAsTheyAreNamesResolved) {
  EXPECT_EQ(*ResolveBindAddress("127.0.0.3"), "127.0.0.3");
  EXPECT_EQ(*ResolveBindAddress("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(*ResolveBindAddress("::1"), "::1");
  EXPECT_EQ(*ResolveBindAddress("[::1]"), "::1");
  StatusOr<std::string> local = ResolveBindAddress("localhost");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_TRUE(*local == "127.0.0.1" || *local == "::1") << *local;
  EXPECT_EQ(ResolveBindAddress("no-such-host.invalid").status().code(), StatusCode::kNotFound);
}

// A hand-made service with one sync method "/ctrain.test.Echo/Call" on raw
// bytes that answers with CheckToken's verdict (what every ctrain handler
// does first).
class TokenEcho final : public grpc::Service {
 public:
  explicit TokenEcho(std::string token) : token_(std::move(token)) {
    AddMethod(new grpc::internal::RpcServiceMethod(
        "/ctrain.test.Echo/Call", grpc::internal::RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<TokenEcho, grpc::ByteBuffer, grpc::ByteBuffer>(
            [](TokenEcho* self, grpc::ServerContext* ctx, const grpc::ByteBuffer*, grpc::ByteBuffer* resp) {
              grpc::Slice ok("ok");
              *resp = grpc::ByteBuffer(&ok, 1);
              return CheckToken(*ctx, self->token_);
            },
            this)));
  }

 private:
  std::string token_;
};

// A unary call to /ctrain.test.Echo/Call with the metadata "authorization:
// <header>" (none when header is null).
grpc::Status Call(const std::string& address, const char* header) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (header != nullptr) ctx.AddMetadata("authorization", header);
  grpc::Slice ping("ping");
  grpc::ByteBuffer req(&ping, 1), resp;
  grpc::Status result;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub.UnaryCall(&ctx, "/ctrain.test.Echo/Call", grpc::StubOptions(), &req, &resp, [&](grpc::Status s) {
    std::lock_guard<std::mutex> l(mu);
    result = s;
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done; });
  return result;
}

class StartServerTest : public ::testing::Test {
 protected:
  TokenEcho echo_{""};
};

TEST_F(StartServerTest, PortZeroPicksAFreePort) {
  ServerConfig c;
  StatusOr<RunningServer> s = StartServer(c, {&echo_});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_GT(s->port, 0);
  EXPECT_EQ(s->address, "127.0.0.1:" + std::to_string(s->port));
  StatusOr<RunningServer> t = StartServer(c, {&echo_});
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->port, s->port);
  s->server->Shutdown();
  t->server->Shutdown();
}

TEST_F(StartServerTest, TakenPortIsUnavailableNamingTheAddress) {
  ServerConfig c;
  StatusOr<RunningServer> first = StartServer(c, {&echo_});
  ASSERT_TRUE(first.ok());
  c.port = first->port;
  StatusOr<RunningServer> second = StartServer(c, {&echo_});
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(std::string(second.status().message()).find("127.0.0.1:" + std::to_string(first->port)),
            std::string::npos)
      << second.status().message();
  first->server->Shutdown();
}

TEST_F(StartServerTest, RefusesBadConfigurations) {
  ServerConfig c;
  c.port = 70000;
  EXPECT_EQ(StartServer(c, {&echo_}).status().code(), StatusCode::kInvalidArgument);
  c.port = -1;
  EXPECT_EQ(StartServer(c, {&echo_}).status().code(), StatusCode::kInvalidArgument);
  c.port = 0;
  c.tls_cert = "/nonexistent/cert.pem";
  EXPECT_EQ(StartServer(c, {&echo_}).status().code(), StatusCode::kInvalidArgument);  // no key
  c.tls_key = "/nonexistent/key.pem";
  Status st = StartServer(c, {&echo_}).status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(st.message()).find("/nonexistent/"), std::string::npos) << st.message();
  c.tls_cert.clear();
  c.tls_key.clear();
  c.tls_ca = "/nonexistent/ca.pem";
  EXPECT_EQ(StartServer(c, {&echo_}).status().code(), StatusCode::kInvalidArgument);
  c.tls_ca.clear();
  c.bind = "192.0.2.1";  // TEST-NET-1: not an address of this host
  c.insecure = true;     // (else refused before any bind: CheckExposure)
  st = StartServer(c, {&echo_}).status();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(std::string(st.message()).find("192.0.2.1:0"), std::string::npos) << st.message();
}

TEST(CheckToken, OnRealCalls) {
  TokenEcho echo("right-token");
  ServerConfig c;
  StatusOr<RunningServer> s = StartServer(c, {&echo});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  grpc::Status r = Call(s->address, nullptr);
  EXPECT_EQ(r.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(r.error_message(), "missing service token");
  r = Call(s->address, "Bearer wrong-token");
  EXPECT_EQ(r.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(r.error_message(), "wrong service token");
  for (const char* bad : {"Bearer right-toke", "Bearer right-token-", "right-token", "bearer right-token",
                          "Bearer  right-token", "Bearer "})
    EXPECT_EQ(Call(s->address, bad).error_code(), grpc::StatusCode::UNAUTHENTICATED) << bad;
  EXPECT_TRUE(Call(s->address, "Bearer right-token").ok());
  // AttachToken writes what CheckToken wants.
  grpc::ClientContext ctx;
  AttachToken(&ctx, "right-token");
  s->server->Shutdown();
  // No token configured: every call passes.
  TokenEcho open("");
  StatusOr<RunningServer> o = StartServer(c, {&open});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(Call(o->address, nullptr).ok());
  EXPECT_TRUE(Call(o->address, "Bearer anything").ok());
  o->server->Shutdown();
}

}  // namespace
}  // namespace ctrain::service
