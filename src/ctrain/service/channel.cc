#include "ctrain/base/clock.h"
#include "ctrain/service/channel.h"

#include <cstdio>
#include <random>
#include <thread>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "ctrain/base/log.h"
#include "ctrain/service/auth.h"
#include "ctrain/service/server.h"

namespace ctrain::service {


StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target, const ChannelConfig& config) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(config.max_receive_message_bytes, INT32_MAX)));
  args.SetMaxSendMessageSize(static_cast<int>(std::min<int64_t>(config.max_send_message_bytes, INT32_MAX)));
  // Fail fast on a dead peer instead of backing off inside gRPC for up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (config.tls_ca.empty()) {
    if (!config.tls_cert.empty()) return InvalidArgumentError("--tls-cert on a client needs --tls-ca");
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    CTRAIN_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(config.tls_ca, "--tls-ca"));
    if (config.tls_cert.empty() != config.tls_key.empty())
      return InvalidArgumentError("--tls-cert and --tls-key go together");
    if (!config.tls_cert.empty()) {
      CTRAIN_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(config.tls_cert, "--tls-cert"));
      CTRAIN_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(config.tls_key, "--tls-key"));
    }
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(target, creds, args);
}

void PrepareContext(grpc::ClientContext* context, const ChannelConfig& config, std::chrono::milliseconds timeout) {
  AttachToken(context, config.token);
  AttachTrainingJob(context, config.training_job_name);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
}

Status RetryUnavailable(const std::string& what, const RetryOptions& options, const std::function<Status()>& call) {
  using Clock = ::ctrain::Clock;  // base/clock.h
  const auto start = Clock::now();
  auto next_notice = start + options.notice_every;
  std::chrono::milliseconds delay(50);
  std::minstd_rand jitter(static_cast<unsigned>(Clock::now().time_since_epoch().count()));
  for (;;) {
    Status s = call();
    if (s.ok() || (s.code() != StatusCode::kUnavailable && s.code() != StatusCode::kDeadlineExceeded)) return s;
    const auto now = Clock::now();
    if (options.max_wait.count() > 0 && now - start >= options.max_wait)
      return DeadlineExceededError("gave up waiting for " + what + " after " +
                                   std::to_string(options.max_wait.count() / 1000) + " s" +
                                   (options.limit_flag.empty() ? "" : " (" + options.limit_flag + ")") + ": " +
                                   std::string(s.message()));
    if (now >= next_notice) {
      const std::string line = "waiting for " + what + " (" +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - start).count()) +
                               " s): " + std::string(s.message());
      if (options.log)
        options.log(line);
      else
        Logf("%s\n", line.c_str());
      next_notice = now + options.notice_every;
    }
    // Sleep in short slices so a stop request is seen promptly.
    const auto wake = Clock::now() + delay / 2 + std::chrono::milliseconds(jitter() % (delay.count() / 2 + 1));
    while (Clock::now() < wake) {
      if (options.stop != nullptr && options.stop->load() != 0) return CancelledError("stopped while waiting for " + what);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace ctrain::service
